/**
 * The coordinator for one machine (`prism gateway --prefill A[,A2] --decode B[,B2]`): an
 * `Engine` the HTTP gateways hold like any other, so every API family, streamed or unary, is
 * served and formatted as usual, while each request runs split over two engines:
 *
 * - `mindie` (push): the request goes to the least loaded prefill engine naming the least
 *   loaded decode engine (d-target); the prefill engine's first token is relayed once the
 *   decode engine has taken the request, then the rest comes from that decode engine's
 *   results stream (DecodeResults, MindIE's `/dresult`, results-link.ts), which the
 *   coordinator holds open to every decode engine and sorts by request id.
 * - `llm-d` (pull): llm-d's sidecar flow — the prompt goes to a prefill engine with one token
 *   to generate and `remoteDecode`; the `kv_transfer_params` its finish carries go with the
 *   request to a decode engine, which pulls the blocks and generates (its events relayed).
 *
 * A client that goes away cancels the request on both engines (each frees its blocks, the
 * prefill engine its lease). Faults (engine/failover/): an engine that fails before any of
 * the answer reached the client — it died, its stream broke, or the health monitor found it
 * stopped — sends the request again with the same seed, each engine at most once: to an
 * untried prefill/decode pair, or, with no prefill engine left, to an untried decode engine
 * that computes the prompt itself (MindIE's is-recompute, llm-d's fallback to local prefill);
 * with none left, or once the client has output, the request fails with UNAVAILABLE (the
 * family's 5xx or error event). Relaying the first token only after the hand-off keeps a
 * failed hand-off retryable.
 */
import { randomUUID } from 'node:crypto';
import { EngineError } from '../errors.js';
import { DEFAULT_HEALTH, HealthMonitor, withTimeout, type HealthOptions } from '../failover/health.js';
import { HeldAttempts } from '../failover/held-attempts.js';
import { Attempt, generateWithRetries, withFixedSeed, type AttemptRoute } from '../failover/retry.js';
import type {
  ChatRenderExtras,
  AdapterList,
  ChatMessage,
  DecodeResult,
  Engine,
  EngineInfo,
  EngineStatus,
  GenerateEvent,
  GenerateRequest,
  PoolingRequest,
  PoolingResult,
} from '../types.js';
import { applyStatus, member, pickLeastLoaded, type Member } from './picker.js';
import { ResultsLink } from './results-link.js';
import { RECOMPUTE_HERE, type EngineRole, type RoleState } from '../pd-types.js';

export type PdFlow = 'mindie' | 'llm-d';

export interface CoordinatorOptions {
  readonly prefill: readonly { address: string; engine: Engine }[];
  readonly decode: readonly { address: string; engine: Engine }[];
  readonly flow: PdFlow;
  /** MindIE's is-recompute / vLLM's recompute policy: the decode engine computes a prompt whose KV did not arrive. */
  readonly recompute: boolean;
  /** Send a request whose engine failed before its client saw output again (default on). */
  readonly retry?: boolean;
  /** How often each engine's status is read (the least-loaded choice, the health monitor). */
  readonly pollMs?: number;
  /** The rest of the health monitor's timing (engine/failover/health.ts). */
  readonly health?: Partial<HealthOptions>;
  readonly log?: (line: string) => void;
}

/** Where one attempt of a split request goes: a pair, or a decode engine alone (recompute). */
interface Route {
  readonly p: Member | null;
  readonly d: Member;
}

/** How far an attempt got: which engine a failure is blamed on. */
interface Progress {
  decoding: boolean;
}

export class PdCoordinator implements Engine {
  private readonly prefill: Member[];
  private readonly decode: Member[];
  private readonly links = new Map<Member, ResultsLink>();
  private readonly health: HealthMonitor;
  private readonly held = new Map<Member, HeldAttempts>();
  private readonly live = new Map<string, Route>();
  private readonly log: (line: string) => void;
  private draining = false;

  constructor(private readonly o: CoordinatorOptions) {
    if (o.prefill.length === 0 || o.decode.length === 0)
      throw new Error('PdCoordinator: at least one prefill and one decode engine are needed');
    this.prefill = o.prefill.map((e) => member(e.address, e.engine));
    this.decode = o.decode.map((e) => member(e.address, e.engine));
    this.log = o.log ?? (() => {});
    if (o.flow === 'mindie') for (const d of this.decode) this.links.set(d, new ResultsLink(d, this.log));
    const all = [...this.prefill, ...this.decode];
    for (const m of all) this.held.set(m, new HeldAttempts());
    const health = { ...DEFAULT_HEALTH, intervalMs: o.pollMs ?? 200, ...o.health };
    this.health = new HealthMonitor(
      all.map((m) => ({ engine: m.engine, name: m.address })),
      health,
      {
        status: (i, s) => {
          applyStatus(all[i], s);
          all[i].down = this.health.isDown(i);
        },
        down: (i, why, stopped) => {
          all[i].down = true;
          const detail = stopped ? this.held.get(all[i])!.stopped(why, health.stallMs, this.log) : '';
          this.log(`${why}: out of rotation${detail}`);
        },
        up: (i) => {
          all[i].down = false;
          this.held.get(all[i])!.back();
          this.log(`the engine at ${all[i].address} answers again: back in rotation`);
        },
      },
    );
  }

  /** Waits until every decode engine's results stream is open (MindIE flow), at most `ms`. */
  async ready(ms = 5000): Promise<boolean> {
    const results = await Promise.all([...this.links.values()].map((l) => l.opened(ms)));
    return results.every(Boolean);
  }

  /** A decode engine that can take a request now (in the MindIE flow, its results stream is open). */
  private canDecode(d: Member): boolean {
    return !d.down && (this.links.get(d)?.isOpen ?? true);
  }

  /**
   * The next route among engines not tried yet: a pair while a prefill engine is left, else a
   * decode engine computing the prompt itself; the first try always splits (as without faults).
   */
  private route(n: number, tried: ReadonlySet<Member>): Route | null {
    const ps = this.prefill.filter((m) => !tried.has(m));
    const ds = this.decode.filter((m) => !tried.has(m));
    if (ds.length === 0) return null;
    if (n === 1) return { p: pickLeastLoaded(ps), d: pickLeastLoaded(ds) };
    const upP = ps.filter((m) => !m.down);
    const upD = ds.filter((m) => this.canDecode(m));
    const d = pickLeastLoaded(upD.length > 0 ? upD : ds);
    return { p: upP.length > 0 ? pickLeastLoaded(upP) : null, d };
  }

  async *generate(request: GenerateRequest, signal?: AbortSignal): AsyncGenerator<GenerateEvent> {
    if (this.draining) throw new EngineError('UNAVAILABLE', 'the coordinator is draining: no new requests');
    if (request.kvTransfer)
      throw new EngineError(
        'INVALID_ARGUMENT',
        'kv_transfer: the coordinator splits requests itself; send them without kv_transfer_params or PD headers',
        'kv_transfer',
      );
    const n = request.params?.n ?? 1;
    const bestOf = request.params?.bestOf ?? n;
    if (n > 1 || bestOf > 1)
      throw new EngineError(
        'UNIMPLEMENTED',
        'n or best_of above 1 is not supported with split prefill/decode',
        'n',
      );
    const req = withFixedSeed({ ...request, requestId: request.requestId ?? randomUUID() });
    const tried = new Set<Member>();
    yield* generateWithRetries(req, signal, { retry: this.o.retry ?? true, log: this.log }, (k) => {
      const r = this.route(k, tried);
      return r ? this.attemptOn(r, req, signal, tried) : null;
    });
  }

  /** One try of `req` on route `r`; a failure is blamed on the engine(s) it had reached. */
  private attemptOn(
    r: Route,
    req: GenerateRequest,
    signal: AbortSignal | undefined,
    tried: Set<Member>,
  ): AttemptRoute {
    const id = req.requestId!;
    const attempt = new Attempt(signal);
    const on = r.p ? [r.p, r.d] : [r.d];
    for (const m of on) this.held.get(m)!.add(attempt);
    this.live.set(id, r);
    const progress: Progress = { decoding: r.p === null };
    const events =
      r.p === null
        ? r.d.engine.generate({ ...req, kvTransfer: RECOMPUTE_HERE }, attempt.signal)
        : this.o.flow === 'mindie'
          ? this.push(req, r.p, r.d, attempt.signal, progress)
          : this.pull(req, r.p, r.d, attempt.signal, progress);
    return {
      events,
      attempt,
      where: r.p
        ? `prefill ${r.p.address} / decode ${r.d.address}`
        : `decode ${r.d.address} (computing the prompt itself)`,
      alternative: () => {
        // The route after a failure now: a decode engine not tried and able to take it.
        const t = new Set(tried);
        if (r.p) t.add(r.p);
        if (progress.decoding) t.add(r.d);
        return this.decode.some((d) => !t.has(d) && this.canDecode(d));
      },
      failed: () => {
        // Each engine the request reached is tried once; a hand-off refused by a decode
        // engine that is gone counts against it too.
        if (r.p) tried.add(r.p);
        if (progress.decoding || !this.canDecode(r.d)) tried.add(r.d);
      },
      ended: () => {
        for (const m of on) this.held.get(m)!.delete(attempt);
        if (this.live.get(id) === r) this.live.delete(id);
      },
    };
  }

  /** MindIE: prefill engine hands off to the decode engine; the rest arrives on its results stream. */
  private async *push(
    request: GenerateRequest,
    p: Member,
    d: Member,
    signal: AbortSignal,
    progress: Progress,
  ): AsyncGenerator<GenerateEvent> {
    const id = request.requestId!;
    const link = this.links.get(d)!;
    const rest = link.register(id);
    // The client left, or the attempt was abandoned, while the decode engine works: stop
    // waiting (the finally cancels it there).
    const onAbort = (): void =>
      rest.end(
        signal.reason instanceof EngineError
          ? signal.reason
          : new EngineError('CANCELLED', 'the client went away'),
      );
    signal.addEventListener('abort', onAbort, { once: true });
    let handedOff = false;
    let finished = false;
    try {
      const prefill = p.engine.generate(
        {
          ...request,
          kvTransfer: { kind: 'remoteDecode', decodeTarget: d.address, recompute: this.o.recompute },
        },
        signal,
      );
      // Held until the decode engine has the request: until then a failure is still retryable.
      const first: GenerateEvent[] = [];
      for await (const event of prefill) {
        if (event.type === 'finish' && event.kvTransfer?.handedTo) {
          handedOff = true;
          continue;
        }
        if (event.type === 'finish') finished = true;
        first.push(event);
      }
      progress.decoding = handedOff;
      yield* first;
      if (!handedOff) return;
      for await (const event of rest) {
        if (event.type === 'finish') finished = true;
        yield event;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      link.unregister(id);
      // Left early (client gone, error): the decode engine may hold the request.
      if (handedOff && !finished) void d.engine.cancel(id).catch(() => {});
    }
  }

  /** llm-d: one token on the prefill engine with its KV leased, then the decode engine pulls and generates. */
  private async *pull(
    request: GenerateRequest,
    p: Member,
    d: Member,
    signal: AbortSignal,
    progress: Progress,
  ): AsyncGenerator<GenerateEvent> {
    const id = request.requestId!;
    const prefillEvents: GenerateEvent[] = [];
    let params;
    let pulled = false;
    try {
      for await (const event of p.engine.generate(
        { ...request, params: { ...request.params, maxNewTokens: 1 }, kvTransfer: { kind: 'remoteDecode' } },
        signal,
      )) {
        prefillEvents.push(event);
        if (event.type === 'finish') params = event.kvTransfer;
      }
      if (!params) {
        // Finished on the prefill engine (its first token ended the answer): that is the answer.
        yield* prefillEvents;
        return;
      }
      pulled = true;
      progress.decoding = true;
      yield* d.engine.generate(
        { ...request, kvTransfer: { kind: 'remotePrefill', ...params, recompute: this.o.recompute } },
        signal,
      );
    } finally {
      // The client went away between the two calls: the prefill engine frees the lease now.
      if (params && !pulled) void p.engine.cancel(id).catch(() => {});
    }
  }

  /** Pooling has no prefill/decode split: any decode engine answers (a generation model refuses it). */
  pool(request: PoolingRequest, signal?: AbortSignal): Promise<PoolingResult> {
    return this.any((e) => e.pool(request, signal));
  }

  async cancel(requestId: string): Promise<boolean> {
    const at = this.live.get(requestId);
    if (!at) return false;
    const on = at.p ? [at.p, at.d] : [at.d];
    const results = await Promise.allSettled(on.map((m) => m.engine.cancel(requestId)));
    return results.some((r) => r.status === 'fulfilled' && r.value);
  }

  private any<T>(call: (e: Engine) => Promise<T>): Promise<T> {
    return call(pickLeastLoaded(this.decode).engine);
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

  info(): Promise<EngineInfo> {
    return this.any((e) => e.info());
  }

  /** Every engine's info (the CLI checks they serve the same model before it starts). */
  async infos(): Promise<{ address: string; role: 'prefill' | 'decode'; info: EngineInfo }[]> {
    const all = [
      ...this.prefill.map((m) => ({ m, role: 'prefill' as const })),
      ...this.decode.map((m) => ({ m, role: 'decode' as const })),
    ];
    return Promise.all(
      all.map(async ({ m, role }) => ({ address: m.address, role, info: await m.engine.info() })),
    );
  }

  /** The decode engines' status summed (their running requests are the coordinator's answers in flight). */
  async status(): Promise<EngineStatus> {
    const all = [...this.prefill, ...this.decode];
    const asked = all.some((m) => !m.down) ? all.filter((m) => !m.down) : all;
    const s = await Promise.all(
      asked.map((m) =>
        withTimeout(m.engine.status(), this.health.timeoutMs, `status of ${m.address}`).catch(() => null),
      ),
    );
    const list = s.filter((x): x is EngineStatus => x !== null);
    if (list.length === 0) throw new EngineError('UNAVAILABLE', 'no engine answered the status request');
    const sum = (f: (x: EngineStatus) => number): number => list.reduce((a, x) => a + f(x), 0);
    const first = list[0];
    return {
      ...first,
      running: sum((x) => x.running),
      waiting: sum((x) => x.waiting),
      freeBlocks: sum((x) => x.freeBlocks),
      totalBlocks: sum((x) => x.totalBlocks),
      maxBatchSize: sum((x) => x.maxBatchSize),
      stopping: this.draining,
      requestsReceived: sum((x) => x.requestsReceived),
      requestsSucceeded: sum((x) => x.requestsSucceeded),
      requestsFailed: sum((x) => x.requestsFailed),
      promptTokens: sum((x) => x.promptTokens),
      generationTokens: sum((x) => x.generationTokens),
      role: 'mixed',
      roleStatus: 'RoleReady',
    };
  }

  loadAdapter(): Promise<{ message: string; rank: number; loadMs: number }> {
    return Promise.reject(
      new EngineError(
        'UNIMPLEMENTED',
        'LoRA adapters are not served through the split prefill/decode coordinator',
      ),
    );
  }

  unloadAdapter(): Promise<{ message: string }> {
    return this.loadAdapter();
  }

  async listAdapters(): Promise<AdapterList> {
    return { adapters: [], maxLoras: 0, maxLoraRank: 0 };
  }

  async setRole(_role: EngineRole): Promise<RoleState> {
    throw new EngineError('UNIMPLEMENTED', 'the coordinator has no role; assign roles on the engines');
  }

  // eslint-disable-next-line require-yield
  async *decodeResults(): AsyncGenerator<DecodeResult> {
    throw new EngineError('UNIMPLEMENTED', 'the coordinator has no results stream; its decode engines do');
  }

  async drain(): Promise<void> {
    this.draining = true;
    while (this.live.size > 0) await new Promise((r) => setTimeout(r, 50));
  }

  async close(): Promise<void> {
    this.draining = true;
    this.health.close();
    for (const h of this.held.values()) h.back();
    for (const l of this.links.values()) l.close();
    await Promise.all([...this.prefill, ...this.decode].map((m) => m.engine.close()));
  }
}
