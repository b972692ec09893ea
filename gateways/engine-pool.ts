/**
 * Several engines behind one `Engine` (`prism gateway --engine A,B,...`): each new request goes
 * to the engine with the fewest requests in flight from this gateway; an engine that refuses
 * with UNAVAILABLE before producing anything (down, draining) is skipped for the next one.
 * Cancel goes to the engine that holds the request.
 *
 * An engine that fails as unavailable (refused, or died mid-stream) is set aside with an
 * exponential backoff (0.5 s, 1 s, 2 s, … at most 30 s): new requests go to the others at once,
 * and once its backoff has passed the next request tries it again — it rejoins when it answers.
 * When every engine is set aside they are all tried, in order, rather than refusing outright.
 */
import { randomUUID } from 'node:crypto';
import {
  EngineError,
  type AdapterList,
  type ChatMessage,
  type ChatRenderExtras,
  type DecodeResult,
  type Engine,
  type EngineInfo,
  type EngineRole,
  type EngineStatus,
  type GenerateEvent,
  type GenerateRequest,
  type HistogramSnapshot,
  type PoolingRequest,
  type PoolingResult,
  type RoleState,
} from '../engine/api.js';

interface Member {
  readonly engine: Engine;
  inFlight: number;
  /** Consecutive failures as unavailable; 0 = healthy. */
  failures: number;
  /** Epoch ms before which the member is tried only when no other is up. */
  downUntil: number;
}

const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 30_000;

const isUnavailable = (err: unknown): boolean => err instanceof EngineError && err.code === 'UNAVAILABLE';

function sumHistograms(list: readonly HistogramSnapshot[]): HistogramSnapshot {
  const first = list[0];
  const sameBounds = list.every(
    (h) => h.bounds.length === first.bounds.length && h.bounds.every((b, i) => b === first.bounds[i]),
  );
  if (!sameBounds) return first;
  return {
    bounds: first.bounds,
    counts: first.counts.map((_, i) => list.reduce((s, h) => s + h.counts[i], 0)),
    sum: list.reduce((s, h) => s + h.sum, 0),
    count: list.reduce((s, h) => s + h.count, 0),
  };
}

export class EnginePool implements Engine {
  private readonly members: Member[];
  private readonly owner = new Map<string, Member>();
  private next = 0;

  constructor(engines: readonly Engine[]) {
    if (engines.length === 0) throw new Error('EnginePool: at least one engine is needed');
    this.members = engines.map((engine) => ({ engine, inFlight: 0, failures: 0, downUntil: 0 }));
  }

  /** Members by preference: those not backing off first, then fewest in flight, ties in rotating order. */
  private ranked(): Member[] {
    const start = this.next++ % this.members.length;
    const rotated = [...this.members.slice(start), ...this.members.slice(0, start)];
    const now = Date.now();
    const down = (m: Member): number => (m.downUntil > now ? 1 : 0);
    return rotated.sort((a, b) => down(a) - down(b) || a.inFlight - b.inFlight);
  }

  private markDown(m: Member): void {
    m.failures++;
    m.downUntil = Date.now() + Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (m.failures - 1));
  }

  private markUp(m: Member): void {
    m.failures = 0;
    m.downUntil = 0;
  }

  /** Engines not backing off (for health reporting and tests). */
  get upCount(): number {
    const now = Date.now();
    return this.members.filter((m) => m.downUntil <= now).length;
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
    const req: GenerateRequest = request.requestId ? request : { ...request, requestId: randomUUID() };
    const id = req.requestId!;
    let lastErr: unknown;
    for (const m of this.ranked()) {
      m.inFlight++;
      this.owner.set(id, m);
      let produced = false;
      try {
        for await (const ev of m.engine.generate(req, signal)) {
          if (!produced) this.markUp(m);
          produced = true;
          yield ev;
        }
        return;
      } catch (err) {
        // An engine that died or refuses is set aside, even when it fails mid-stream (that
        // client gets the error: its tokens so far cannot be replayed elsewhere).
        if (isUnavailable(err) && !signal?.aborted) this.markDown(m);
        // Fail over only when this engine produced nothing and refused as unavailable.
        if (produced || !isUnavailable(err)) throw err;
        lastErr = err;
      } finally {
        m.inFlight--;
        if (this.owner.get(id) === m) this.owner.delete(id);
      }
    }
    throw lastErr;
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

  /** The sum over the engines that answer (capacities and counters add up). */
  async status(): Promise<EngineStatus> {
    const settled = await Promise.allSettled(this.members.map((m) => m.engine.status()));
    const list = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    if (list.length === 0) throw new EngineError('UNAVAILABLE', 'no engine answered the status request');
    const sum = (f: (s: EngineStatus) => number): number => list.reduce((a, s) => a + f(s), 0);
    const finished = sum((s) => s.e2eLatency.count) || 1;
    return {
      running: sum((s) => s.running),
      waiting: sum((s) => s.waiting),
      freeBlocks: sum((s) => s.freeBlocks),
      totalBlocks: sum((s) => s.totalBlocks),
      blockSize: list[0].blockSize,
      maxBatchSize: sum((s) => s.maxBatchSize),
      stopping: list.every((s) => s.stopping),
      requestsReceived: sum((s) => s.requestsReceived),
      requestsSucceeded: sum((s) => s.requestsSucceeded),
      requestsFailed: sum((s) => s.requestsFailed),
      promptTokens: sum((s) => s.promptTokens),
      generationTokens: sum((s) => s.generationTokens),
      prefixCacheQueries: sum((s) => s.prefixCacheQueries),
      prefixCacheHits: sum((s) => s.prefixCacheHits),
      preemptions: sum((s) => s.preemptions),
      ttft: sumHistograms(list.map((s) => s.ttft)),
      interTokenLatency: sumHistograms(list.map((s) => s.interTokenLatency)),
      e2eLatency: sumHistograms(list.map((s) => s.e2eLatency)),
      promptTokensPerRequest: sumHistograms(list.map((s) => s.promptTokensPerRequest)),
      generationTokensPerRequest: sumHistograms(list.map((s) => s.generationTokensPerRequest)),
      // Weighted by finished requests.
      recentAvgTtft: sum((s) => s.recentAvgTtft * s.e2eLatency.count) / finished,
      recentAvgInterToken: sum((s) => s.recentAvgInterToken * s.e2eLatency.count) / finished,
      runningLoraAdapters: [...new Set(list.flatMap((s) => s.runningLoraAdapters))].sort(),
      waitingLoraAdapters: [...new Set(list.flatMap((s) => s.waitingLoraAdapters))].sort(),
      maxLora: list[0].maxLora,
      ...sumSpecDecode(list),
      role: list[0].role,
      roleStatus: list.some((s) => s.roleStatus === 'RoleSwitching') ? 'RoleSwitching' : 'RoleReady',
      leasedBlocks: sum((s) => s.leasedBlocks),
      kvTransfersIn: sum((s) => s.kvTransfersIn),
      kvBytesIn: sum((s) => s.kvBytesIn),
      kvTransferMsIn: sum((s) => s.kvTransferMsIn),
      kvTokensIn: sum((s) => s.kvTokensIn),
      kvTransfersOut: sum((s) => s.kvTransfersOut),
      kvBytesOut: sum((s) => s.kvBytesOut),
      kvTransferFailures: sum((s) => s.kvTransferFailures),
    };
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
    await Promise.all(this.members.map((m) => m.engine.drain()));
  }

  async close(): Promise<void> {
    await Promise.all(this.members.map((m) => m.engine.close()));
  }
}

/** Speculative decoding's counters over the engines that speculate (none: absent). */
function sumSpecDecode(list: readonly EngineStatus[]): Pick<EngineStatus, 'specDecode'> {
  const spec = list.flatMap((s) => (s.specDecode ? [s.specDecode] : []));
  if (spec.length === 0) return {};
  const perPos: number[] = [];
  for (const s of spec) s.acceptedPerPosition.forEach((v, i) => (perPos[i] = (perPos[i] ?? 0) + v));
  return {
    specDecode: {
      method: [...new Set(spec.map((s) => s.method))].join(','),
      numDrafts: spec.reduce((a, s) => a + s.numDrafts, 0),
      numDraftTokens: spec.reduce((a, s) => a + s.numDraftTokens, 0),
      numAcceptedTokens: spec.reduce((a, s) => a + s.numAcceptedTokens, 0),
      acceptedPerPosition: perPos,
    },
  };
}
