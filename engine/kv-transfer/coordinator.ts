/**
 * The coordinator for one machine (`prism gateway --prefill A[,A2] --decode B[,B2]`): an
 * `Engine` the HTTP gateways hold like any other, so every API family, streamed or unary, is
 * served and formatted as usual, while each request runs split over two engines:
 *
 * - `mindie` (push): the request goes to the least loaded prefill engine naming the least
 *   loaded decode engine (d-target); the prefill engine's first token is relayed, then the
 *   rest comes from that decode engine's results stream (DecodeResults, MindIE's `/dresult`),
 *   which the coordinator holds open to every decode engine and sorts by request id.
 * - `llm-d` (pull): llm-d's sidecar flow — the prompt goes to a prefill engine with one token
 *   to generate and `remoteDecode`; the `kv_transfer_params` its finish carries go with the
 *   request to a decode engine, which pulls the blocks and generates (its events relayed).
 *
 * A client that goes away cancels the request on both engines (each frees its blocks, the
 * prefill engine its lease). A decode engine whose results stream breaks fails the requests
 * waiting on it with UNAVAILABLE (the family's 5xx), and the stream is opened again.
 */
import { randomUUID } from 'node:crypto';
import { EngineError } from '../errors.js';
import { EventQueue } from '../event-queue.js';
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
import type { EngineRole, RoleState } from '../pd-types.js';

export type PdFlow = 'mindie' | 'llm-d';

export interface CoordinatorOptions {
  readonly prefill: readonly { address: string; engine: Engine }[];
  readonly decode: readonly { address: string; engine: Engine }[];
  readonly flow: PdFlow;
  /** MindIE's is-recompute / vLLM's recompute policy: the decode engine computes a prompt whose KV did not arrive. */
  readonly recompute: boolean;
  /** How often each engine's status is read for the least-loaded choice. */
  readonly pollMs?: number;
  readonly log?: (line: string) => void;
}

const RECONNECT_MS = 500;

/** One decode engine's results stream, sorted into a queue per request id. */
class ResultsLink {
  private readonly waiting = new Map<string, EventQueue<GenerateEvent>>();
  private readonly controller = new AbortController();
  private connected = false;
  private closed = false;
  private readonly ready: Promise<void>;
  private markReady: () => void = () => {};

  constructor(
    private readonly m: Member,
    private readonly log: (line: string) => void,
  ) {
    this.ready = new Promise((resolve) => (this.markReady = resolve));
    void this.run();
  }

  /** Resolves once the stream is open (or after `ms`, whichever is first). */
  async opened(ms: number): Promise<boolean> {
    if (this.connected) return true;
    await Promise.race([this.ready, new Promise((r) => setTimeout(r, ms).unref())]);
    return this.connected;
  }

  register(id: string): EventQueue<GenerateEvent> {
    if (!this.connected)
      throw new EngineError('UNAVAILABLE', `the decode engine at ${this.m.address} is not reachable`);
    const q = new EventQueue<GenerateEvent>();
    this.waiting.set(id, q);
    return q;
  }

  unregister(id: string): void {
    this.waiting.delete(id);
  }

  close(): void {
    this.closed = true;
    this.controller.abort();
    this.failAll(new EngineError('UNAVAILABLE', 'the coordinator is stopping'));
  }

  private failAll(error: EngineError): void {
    for (const q of this.waiting.values()) q.end(error);
    this.waiting.clear();
  }

  private deliver(r: DecodeResult): void {
    if ('held' in r) {
      this.connected = true;
      this.markReady();
      return;
    }
    const q = this.waiting.get(r.requestId);
    if (!q) {
      // Results of a request nobody waits for (its client went away): stop it.
      void this.m.engine.cancel(r.requestId).catch(() => {});
      return;
    }
    if ('error' in r) {
      this.waiting.delete(r.requestId);
      q.end(r.error);
      return;
    }
    q.push(r.event);
    if (r.event.type === 'finish') {
      this.waiting.delete(r.requestId);
      q.end();
    }
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      try {
        // The stream's first result says the engine took it (then hand-offs to it are accepted).
        for await (const r of this.m.engine.decodeResults(this.controller.signal)) this.deliver(r);
        if (!this.closed) throw new EngineError('UNAVAILABLE', 'the results stream ended');
      } catch (e) {
        if (this.closed) return;
        const why = e instanceof Error ? e.message : String(e);
        if (this.connected) this.log(`decode engine ${this.m.address}: results stream lost (${why})`);
        this.connected = false;
        this.failAll(
          new EngineError('UNAVAILABLE', `the decode engine at ${this.m.address} went away: ${why}`),
        );
        await new Promise((r) => setTimeout(r, RECONNECT_MS).unref());
      }
    }
  }
}

export class PdCoordinator implements Engine {
  private readonly prefill: Member[];
  private readonly decode: Member[];
  private readonly links = new Map<Member, ResultsLink>();
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly live = new Map<string, { p: Member; d: Member }>();
  private draining = false;

  constructor(private readonly o: CoordinatorOptions) {
    if (o.prefill.length === 0 || o.decode.length === 0)
      throw new Error('PdCoordinator: at least one prefill and one decode engine are needed');
    this.prefill = o.prefill.map((e) => member(e.address, e.engine));
    this.decode = o.decode.map((e) => member(e.address, e.engine));
    const log = o.log ?? (() => {});
    if (o.flow === 'mindie') for (const d of this.decode) this.links.set(d, new ResultsLink(d, log));
    this.timer = setInterval(() => void this.poll(), o.pollMs ?? 200);
    this.timer.unref();
    void this.poll();
  }

  /** Waits until every decode engine's results stream is open (MindIE flow), at most `ms`. */
  async ready(ms = 5000): Promise<boolean> {
    const results = await Promise.all([...this.links.values()].map((l) => l.opened(ms)));
    return results.every(Boolean);
  }

  private async poll(): Promise<void> {
    await Promise.all(
      [...this.prefill, ...this.decode].map(async (m) => {
        applyStatus(m, await m.engine.status().catch(() => null));
      }),
    );
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
    const id = request.requestId ?? randomUUID();
    const p = pickLeastLoaded(this.prefill);
    const d = pickLeastLoaded(this.decode);
    this.live.set(id, { p, d });
    try {
      if (this.o.flow === 'mindie') yield* this.push({ ...request, requestId: id }, p, d, signal);
      else yield* this.pull({ ...request, requestId: id }, p, d, signal);
    } finally {
      this.live.delete(id);
    }
  }

  /** MindIE: prefill engine hands off to the decode engine; the rest arrives on its results stream. */
  private async *push(
    request: GenerateRequest,
    p: Member,
    d: Member,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<GenerateEvent> {
    const id = request.requestId!;
    const link = this.links.get(d)!;
    const rest = link.register(id);
    // A client that leaves while the decode engine works: stop waiting (the finally cancels it there).
    const onAbort = (): void => rest.end(new EngineError('CANCELLED', 'the client went away'));
    signal?.addEventListener('abort', onAbort, { once: true });
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
      for await (const event of prefill) {
        if (event.type === 'finish' && event.kvTransfer?.handedTo) {
          handedOff = true;
          continue;
        }
        if (event.type === 'finish') finished = true;
        yield event;
      }
      if (!handedOff) return;
      for await (const event of rest) {
        if (event.type === 'finish') finished = true;
        yield event;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
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
    signal: AbortSignal | undefined,
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
    const results = await Promise.allSettled([at.p.engine.cancel(requestId), at.d.engine.cancel(requestId)]);
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
    const s = await Promise.all(
      [...this.prefill, ...this.decode].map((m) => m.engine.status().catch(() => null)),
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
    clearInterval(this.timer);
    for (const l of this.links.values()) l.close();
    await Promise.all([...this.prefill, ...this.decode].map((m) => m.engine.close()));
  }
}
