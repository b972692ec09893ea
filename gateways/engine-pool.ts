/**
 * Several engines behind one `Engine` (`prism gateway --engine A,B,...`): each new request goes
 * to the engine with the fewest requests in flight from this gateway. Cancel goes to the
 * engine that holds the request.
 *
 * Faults (engine/failover/): a request whose engine fails — it refuses as unavailable, dies,
 * its stream breaks, or it stops answering — before any of the answer reached the client is
 * sent to the next engine, each engine at most once, with the seed fixed before the first try
 * so the answer is the one the first engine would have given; a request whose client already
 * has part of the answer ends with the error (the gateway writes its family's error event).
 * An engine is a process: one restarted on the same address (a new engine id) is another
 * engine, which a request that failed on its predecessor may be sent to.
 *
 * An engine that fails is set aside with an exponential backoff (0.5 s, 1 s, 2 s, … at most
 * 30 s): new requests go to the others at once, and once its backoff has passed the next
 * request tries it again. A health monitor asks every engine for its status each second: one
 * that stops answering (SIGSTOP) or whose step never returns is taken out of rotation and
 * nothing is sent to it; its requests that can go elsewhere are retried there at once, the
 * others wait for it up to the stuck-step deadline (engine/failover/held-attempts.ts); one that answers
 * again — restarted on the same address, or continued — rejoins at once. A retry whose only
 * engine left is set aside waits for it up to the health timeout (a restarted engine's first
 * seconds). When every engine is set aside the ones not hung are all tried, in order, rather
 * than refusing outright.
 */
import { randomUUID } from 'node:crypto';
import {
  Attempt,
  DEFAULT_HEALTH,
  EngineError,
  generateWithRetries,
  HealthMonitor,
  HeldAttempts,
  withFixedSeed,
  withTimeout,
  type AdapterList,
  type AttemptRoute,
  type ChatMessage,
  type ChatRenderExtras,
  type DecodeResult,
  type Engine,
  type EngineInfo,
  type EngineRole,
  type EngineStatus,
  type GenerateEvent,
  type GenerateRequest,
  type HealthOptions,
  type PoolingRequest,
  type PoolingResult,
  type RoleState,
} from '../engine/api.js';
import { sumStatus } from './engine-pool-status.js';

interface Member {
  readonly engine: Engine;
  /** Its address, for the log. */
  readonly name: string;
  inFlight: number;
  /** Consecutive failures as unavailable; 0 = healthy. */
  failures: number;
  /** Epoch ms before which the member is tried only when no other is up. */
  downUntil: number;
  /** Why the health monitor took it out of rotation; null while it is in. */
  out: string | null;
  /** Out because it stopped answering (hung, or a stuck step): nothing is sent to it until it is back. */
  stopped: boolean;
  /** The attempts running on it (abandoned when it stops answering, see held-attempts.ts). */
  readonly held: HeldAttempts;
  /** The engine process's id (EngineInfo.engineId), read at start and whenever it rejoins. */
  engineId: string | undefined;
}

export interface PoolOptions {
  /** The engines' addresses, for the log (default: engine 1, engine 2, …). */
  readonly names?: readonly string[];
  /** Send a request whose engine failed before its client saw output to another engine (default on). */
  readonly retry?: boolean;
  /** The health monitor's timing (engine/failover/health.ts); false: no monitor. */
  readonly health?: Partial<HealthOptions> | false;
  readonly log?: (line: string) => void;
}

const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 30_000;

const isUnavailable = (err: unknown): boolean => err instanceof EngineError && err.code === 'UNAVAILABLE';

export class EnginePool implements Engine {
  private readonly members: Member[];
  private readonly owner = new Map<string, Member>();
  private next = 0;
  private readonly retry: boolean;
  private readonly health: HealthMonitor | undefined;
  private readonly healthOptions: HealthOptions;
  private readonly log: (line: string) => void;

  constructor(engines: readonly Engine[], options: PoolOptions = {}) {
    if (engines.length === 0) throw new Error('EnginePool: at least one engine is needed');
    this.members = engines.map((engine, i) => ({
      engine,
      name: options.names?.[i] ?? `engine ${i + 1}`,
      inFlight: 0,
      failures: 0,
      downUntil: 0,
      out: null,
      stopped: false,
      held: new HeldAttempts(),
      engineId: undefined,
    }));
    for (const m of this.members) this.readEngineId(m);
    this.retry = options.retry ?? true;
    this.log = options.log ?? (() => {});
    this.healthOptions = { ...DEFAULT_HEALTH, ...(options.health || {}) };
    if (options.health !== false)
      this.health = new HealthMonitor(
        this.members.map((m) => ({ engine: m.engine, name: m.name })),
        this.healthOptions,
        {
          down: (i, why, stopped) => this.takeOut(this.members[i], why, stopped),
          up: (i) => this.bringBack(this.members[i]),
        },
      );
  }

  /** Members by preference: in rotation and not backing off first, then fewest in flight, ties in rotating order. */
  private ranked(): Member[] {
    const start = this.next++ % this.members.length;
    const rotated = [...this.members.slice(start), ...this.members.slice(0, start)];
    const now = Date.now();
    const rank = (m: Member): number => (m.out !== null ? 2 : m.downUntil > now ? 1 : 0);
    return rotated.sort((a, b) => rank(a) - rank(b) || a.inFlight - b.inFlight);
  }

  private markDown(m: Member): void {
    m.failures++;
    m.downUntil = Date.now() + Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (m.failures - 1));
    this.health?.sawFailure(this.members.indexOf(m));
  }

  private markUp(m: Member): void {
    m.failures = 0;
    m.downUntil = 0;
  }

  /** The monitor gave up on `m`: out of rotation; a stopped engine's requests are abandoned (and retried). */
  private takeOut(m: Member, why: string, stopped: boolean): void {
    m.out = why;
    m.stopped = stopped;
    const detail = stopped ? m.held.stopped(why, this.healthOptions.stallMs, this.log) : '';
    this.log(`${why}: out of rotation${detail}`);
  }

  /** Learns which process answers at `m`'s address (a restart changes it). */
  private readEngineId(m: Member): void {
    m.engine.info().then(
      (i) => (m.engineId = i.engineId),
      () => {},
    );
  }

  /** What a request was tried on: the member and its process (unknown counts as the same). */
  private triedKey(m: Member): string {
    return `${this.members.indexOf(m)}/${m.engineId ?? ''}`;
  }

  private bringBack(m: Member): void {
    if (m.out !== null) this.log(`the engine at ${m.name} answers again: back in rotation`);
    m.held.back();
    this.readEngineId(m);
    m.out = null;
    m.stopped = false;
    this.markUp(m);
  }

  /** Engines in rotation and not backing off (for health reporting and tests). */
  get upCount(): number {
    const now = Date.now();
    return this.members.filter((m) => m.out === null && m.downUntil <= now).length;
  }

  /** Runs `call` on members in turn until one does not fail with UNAVAILABLE. */
  private async any<T>(call: (e: Engine) => Promise<T>): Promise<T> {
    let last: unknown;
    for (const m of this.ranked()) {
      try {
        const result = await call(m.engine);
        this.markUp(m);
        return result;
      } catch (err) {
        if (!isUnavailable(err)) throw err;
        this.markDown(m);
        last = err;
      }
    }
    throw last;
  }

  async *generate(request: GenerateRequest, signal?: AbortSignal): AsyncGenerator<GenerateEvent> {
    const req = withFixedSeed(request.requestId ? request : { ...request, requestId: randomUUID() });
    const tried = new Set<string>();
    yield* generateWithRetries(req, signal, { retry: this.retry, log: this.log }, async (n) => {
      // An engine that stopped answering would hold the request as it holds the others.
      const m = this.ranked().find((x) => !tried.has(this.triedKey(x)) && !x.stopped);
      if (!m) return null;
      tried.add(this.triedKey(m));
      // A retry whose only engine left is out of rotation (restarting, say) gives it a moment.
      if (n > 1) await this.untilInRotation(m, this.healthOptions.timeoutMs, signal);
      return this.attemptOn(m, req, signal, tried);
    });
  }

  /** Resolves once `m` is in rotation and not backing off, after `ms`, or when `signal` fires. */
  private async untilInRotation(m: Member, ms: number, signal: AbortSignal | undefined): Promise<void> {
    const until = Date.now() + ms;
    const ready = (): boolean => m.out === null && m.downUntil <= Date.now();
    if (!ready()) this.health?.checkAll();
    while (!ready() && Date.now() < until && !signal?.aborted) await new Promise((r) => setTimeout(r, 100));
  }

  /** One try of `req` on `m`, counted in its load and owning the request id while it runs. */
  private attemptOn(
    m: Member,
    req: GenerateRequest,
    signal: AbortSignal | undefined,
    tried: ReadonlySet<string>,
  ): AttemptRoute {
    const id = req.requestId!;
    const attempt = new Attempt(signal);
    m.inFlight++;
    m.held.add(attempt);
    this.owner.set(id, m);
    const markUp = (): void => this.markUp(m);
    async function* events(): AsyncGenerator<GenerateEvent> {
      let produced = false;
      for await (const ev of m.engine.generate(req, attempt.signal)) {
        if (!produced) markUp();
        produced = true;
        yield ev;
      }
    }
    return {
      events: events(),
      attempt,
      where: `the engine at ${m.name}`,
      alternative: () =>
        this.members.some((x) => !tried.has(this.triedKey(x)) && x.out === null && !x.stopped),
      failed: () => this.markDown(m),
      ended: () => {
        m.inFlight--;
        m.held.delete(attempt);
        if (this.owner.get(id) === m) this.owner.delete(id);
      },
    };
  }

  /** A pooling request on the least-loaded engine, failing over as generate does (nothing is produced before it answers). */
  async pool(request: PoolingRequest, signal?: AbortSignal): Promise<PoolingResult> {
    const req: PoolingRequest = request.requestId ? request : { ...request, requestId: randomUUID() };
    let lastErr: unknown;
    for (const m of this.ranked()) {
      m.inFlight++;
      this.owner.set(req.requestId!, m);
      try {
        const result = await m.engine.pool(req, signal);
        this.markUp(m);
        return result;
      } catch (err) {
        if (!isUnavailable(err)) throw err;
        if (!signal?.aborted) this.markDown(m);
        lastErr = err;
      } finally {
        m.inFlight--;
        if (this.owner.get(req.requestId!) === m) this.owner.delete(req.requestId!);
      }
    }
    throw lastErr;
  }

  async cancel(requestId: string): Promise<boolean> {
    const m = this.owner.get(requestId);
    if (m) return m.engine.cancel(requestId);
    const results = await Promise.allSettled(this.members.map((x) => x.engine.cancel(requestId)));
    return results.some((r) => r.status === 'fulfilled' && r.value);
  }

  tokenize(text: string, addSpecialTokens?: boolean): Promise<number[]> {
    return this.any((e) => e.tokenize(text, addSpecialTokens));
  }

  detokenize(
    ids: readonly number[],
    skipSpecialTokens?: boolean,
  ): Promise<{ text: string; tokens: string[] }> {
    return this.any((e) => e.detokenize(ids, skipSpecialTokens));
  }

  applyChatTemplate(
    messages: readonly ChatMessage[],
    addGenerationPrompt?: boolean,
    extras?: ChatRenderExtras,
  ): Promise<string> {
    return this.any((e) => e.applyChatTemplate(messages, addGenerationPrompt, extras));
  }

  /** Adapters are loaded on every engine of the pool, so any member serves any request. */
  async loadAdapter(name: string, path: string): Promise<{ message: string; rank: number; loadMs: number }> {
    const results = await Promise.all(this.members.map((m) => m.engine.loadAdapter(name, path)));
    return results[0]!;
  }

  async unloadAdapter(name: string): Promise<{ message: string }> {
    const results = await Promise.all(this.members.map((m) => m.engine.unloadAdapter(name)));
    return results[0]!;
  }

  listAdapters(): Promise<AdapterList> {
    return this.any((e) => e.listAdapters());
  }

  info(): Promise<EngineInfo> {
    return this.any((e) => e.info());
  }

  /** The sum over the engines in rotation that answer in time (capacities and counters add up). */
  async status(): Promise<EngineStatus> {
    const live = this.members.filter((m) => m.out === null);
    const asked = live.length > 0 ? live : this.members;
    const settled = await Promise.allSettled(
      asked.map((m) => withTimeout(m.engine.status(), this.healthOptions.timeoutMs, `status of ${m.name}`)),
    );
    const list = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    if (list.length === 0) throw new EngineError('UNAVAILABLE', 'no engine answered the status request');
    return sumStatus(list);
  }

  /** Every engine of the pool takes the role (a pool serves one role). */
  async setRole(role: EngineRole): Promise<RoleState> {
    const results = await Promise.all(this.members.map((m) => m.engine.setRole(role)));
    return results.find((r) => r.status === 'RoleSwitching') ?? results[0]!;
  }

  /** Each engine has its own results stream: hold them one by one (`prism gateway --decode`). */
  // eslint-disable-next-line require-yield
  async *decodeResults(): AsyncGenerator<DecodeResult> {
    throw new EngineError(
      'UNIMPLEMENTED',
      'a pool of engines has no single results stream; use prism gateway --prefill/--decode',
    );
  }

  async drain(): Promise<void> {
    // A draining client refuses new calls, status checks included: they must not read as an outage.
    this.health?.close();
    for (const m of this.members) m.held.back();
    await Promise.all(this.members.map((m) => m.engine.drain()));
  }

  async close(): Promise<void> {
    this.health?.close();
    for (const m of this.members) m.held.back();
    await Promise.all(this.members.map((m) => m.engine.close()));
  }
}
