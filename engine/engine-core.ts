/**
 * The in-process engine: implements `Engine` (engine/types.ts) over the scheduler, the block
 * manager and a runner. One step loop keeps at most one native step in flight; between steps
 * it reaps cancelled sequences, schedules, and turns sampled tokens into events (incremental
 * detokenization, stop conditions, timings). Data flows one way per step:
 * engine → scheduler → runner → scheduler.postprocess → events.
 *
 * Loading a model (native + tokenizer) lives in engine/load-engine.ts; this file has no
 * native dependency of its own, only the `Runner` it is given.
 */
import { randomUUID } from 'node:crypto';
import type { AdapterEntry, AdapterManager } from './adapters/manager.js';
import { listAdaptersRpc, loadAdapterRpc, unloadAdapterRpc } from './adapters/rpcs.js';
import { BlockManager, type BlockCacheObserver } from './block-manager.js';
import { ChoiceOutput } from './choice-output.js';
import { ChatOutputStream, type ChatParsing } from './tools/chat-output.js';
import { EngineChat, resultAsDelta } from './tools/engine-chat.js';
import type { ToolParserFamily } from './tools/types.js';
import { EngineMetrics } from './engine-metrics.js';
import { EngineError, invalidArgument } from './errors.js';
import { EventQueue } from './event-queue.js';
import type { ResolvedEngineOptions } from './options.js';
import { checkMessages, checkTokenIds, promptTokens, type EngineTokenizer } from './prompt.js';
import { Sequence } from './request-state.js';
import { startRequestSpans, type RequestSpans } from './request-spans.js';
import type { Runner, StepOutput } from './runner.js';
import { resolveParams, type ResolvedParams } from './sampling-params.js';
import { Scheduler, type ScheduledBatch } from './scheduler.js';
import type { GrammarConstraint } from './structured/constraint.js';
import { StructuredOutput } from './structured/engine-glue.js';
import { StepFaults } from './step-fault.js';
import type {
  AdapterList,
  ChatMessage,
  Engine,
  EngineInfo,
  EngineStatus,
  FinishEvent,
  GenerateEvent,
  GenerateRequest,
  TokenLogprob,
} from './types.js';

export interface EngineCoreDeps {
  readonly runner: Runner;
  readonly tokenizer: EngineTokenizer;
  readonly options: ResolvedEngineOptions;
  readonly info: EngineInfo;
  /** Chat template that replaces the model's own (contents of chatTemplatePath). */
  readonly chatTemplate?: string;
  /** Frees native resources once the loop has stopped. */
  readonly dispose?: () => void;
  /** The tool-call parser family (engine/tools/registry.ts); default: the model's by architecture and template. */
  readonly toolParser?: ToolParserFamily;
  /** Served LoRA adapters (engine/adapters/); absent = base model only. */
  readonly adapters?: AdapterManager;
  /** Hears the prefix cache change (engine/kv-events.ts publishes it); absent = nobody. */
  readonly blockObserver?: BlockCacheObserver;
}

/** A request that passed the checks that need no tokenizer. */
interface AcceptedRequest {
  readonly id: string;
  readonly params: ResolvedParams;
  /** How each choice's chat output is parsed, once the prompt is rendered; null: as is. */
  parsing: ChatParsing | null;
  /** The adapter it names, with its prefix-cache identity; entry null = base model. */
  readonly adapter: { entry: AdapterEntry | null; cacheExtra: string };
  readonly constraint: GrammarConstraint | null;
}

function asEngineError(e: unknown): EngineError {
  return e instanceof EngineError
    ? e
    : new EngineError('GENERATION_FAILED', `request failed: ${e instanceof Error ? e.message : String(e)}`);
}

interface LiveRequest {
  readonly id: string;
  readonly params: ResolvedParams;
  readonly promptLen: number;
  readonly maxNew: number;
  readonly arrival: number;
  readonly queue: EventQueue<GenerateEvent>;
  readonly seqs: Sequence[];
  readonly choices: ChoiceOutput[];
  /** best_of > n: events are held back until the best n are known. */
  readonly buffered: boolean;
  firstScheduled: number;
  firstToken: number;
  cachedPromptTokens: number;
  detachSignal: () => void;
  /** Live queue/prefill/decode tracing spans; undefined when the caller traces nothing. */
  readonly spans: RequestSpans | undefined;
  readonly adapter: AdapterEntry | null;
  /** A server fault ended it (engine/step-fault.ts): the stream ends with this error, no finish events. */
  fault?: EngineError;
}

const ms = () => performance.now();

export class EngineCore implements Engine {
  private readonly scheduler: Scheduler;
  private readonly blocks: BlockManager;
  private readonly metrics = new EngineMetrics();
  private readonly requests = new Map<string, LiveRequest>();
  /** Ids of accepted requests whose prompts are being tokenized (not yet in `requests`). */
  private readonly pendingIds = new Set<string>();
  private readonly eos: ReadonlySet<number>;
  private loop: Promise<void> | null = null;
  private stopping = false;
  private closed = false;
  private drainWaiters: (() => void)[] = [];
  private readonly chat: EngineChat;
  /** A native step is running (adapter slots it uses may not change). */
  private stepping = false;
  /** Structured output (public for the benchmark's switches: overlapMasks, jumpForward). */
  readonly structured: StructuredOutput;
  private readonly faults = new StepFaults();

  constructor(private readonly deps: EngineCoreDeps) {
    const o = deps.options;
    this.blocks = new BlockManager(
      deps.runner.kvBlocks,
      deps.runner.blockSize,
      o.prefixCache,
      deps.blockObserver ?? null,
      deps.runner.kvWindow ?? 0,
    );
    this.scheduler = new Scheduler(
      { ...o, maxAdaptersPerStep: deps.adapters?.limits.maxLoras },
      this.blocks,
      (parent, child) => this.forked(parent, child),
      deps.adapters,
    );
    this.eos = new Set(deps.tokenizer.eosTokenIds);
    this.chat = new EngineChat(deps.tokenizer, deps.chatTemplate, deps.info.architecture, deps.toolParser);
    this.structured = new StructuredOutput(deps.tokenizer, deps.info.vocabSize, undefined, o.threads);
  }

  // ---------------------------------------------------------------------------- requests

  /**
   * Validates the request at once, then tokenizes its prompt off the JS thread (the
   * tokenizer's async encode runs on the libuv pool) and admits it. Tokenizing inline would
   * block the event loop, and with it every other stream's tokens, for milliseconds per
   * long prompt. Errors, early or late, end the returned stream.
   */
  generate(request: GenerateRequest, signal?: AbortSignal): AsyncIterable<GenerateEvent> {
    const arrival = ms();
    let accepted: AcceptedRequest;
    try {
      accepted = this.accept(request);
    } catch (e) {
      const failed = new EventQueue<GenerateEvent>();
      failed.end(asEngineError(e));
      return failed;
    }
    const { id } = accepted;
    let abandoned = false;
    const queue = new EventQueue<GenerateEvent>(() => {
      abandoned = true;
      void this.cancel(id);
    });
    // Claimed while the prompt is tokenized, so a second live request cannot take the id.
    this.pendingIds.add(id);
    // Parented to the span active now: the gRPC server submits inside its RPC span.
    const spans = startRequestSpans({ requestId: id, model: this.deps.info.modelName, arrival });
    const o = this.deps.options;
    // A constrained request waits for its grammar here, outside the scheduler (its own
    // waiting state), so a slow compile never holds up the batch.
    Promise.all([
      promptTokens(
        this.deps.tokenizer,
        request.prompt,
        accepted.params.truncate,
        o,
        this.deps.chatTemplate,
        (chat) => {
          const rendered = this.chat.render(chat);
          accepted.parsing = rendered.parsing;
          return rendered.text;
        },
      ),
      accepted.constraint ? this.chat.compile(accepted.constraint, (c) => this.structured.compile(c)) : null,
    ]).then(
      ([prompt, grammarKey]) => {
        this.pendingIds.delete(id);
        // Nobody reads the stream any more: do not start the work at all.
        if (abandoned || this.closed)
          this.endUnadmitted(queue, spans, new EngineError('CANCELLED', `request '${id}' was cancelled`));
        else this.admit(accepted, prompt, grammarKey, queue, spans, arrival, signal);
      },
      (e: unknown) => {
        this.pendingIds.delete(id);
        this.endUnadmitted(queue, spans, asEngineError(e));
      },
    );
    return queue;
  }

  /** The checks that need no tokenizer: engine state, request shape, request id, parameters. */
  private accept(request: GenerateRequest): AcceptedRequest {
    this.checkAccepting();
    if (request === null || typeof request !== 'object')
      throw invalidArgument('request', 'must be an object');
    const tok = this.deps.tokenizer;
    const o = this.deps.options;
    const id = request.requestId ?? randomUUID();
    if (typeof id !== 'string' || id.length === 0 || id.length > 256)
      throw invalidArgument('request_id', 'must be a string of 1 to 256 characters');
    this.checkIdFree(id);
    const params = resolveParams(request.params ?? {}, {
      vocabSize: tok.vocabSize,
      maxNewTokensCap: o.maxIterTimes,
      maxN: o.maxN,
    });
    this.chat.check(request.prompt);
    const adapter = this.resolveAdapter(request.adapter);
    const constraint = this.chat.constraint(
      request.prompt,
      request.constraint === undefined || request.constraint === null
        ? null
        : this.structured.check(request.constraint),
    );
    this.checkQueueRoom();
    return { id, params, parsing: null, adapter, constraint };
  }

  private resolveAdapter(name: string | undefined): AcceptedRequest['adapter'] {
    if (name === undefined || name === '' || name === this.deps.info.modelName) {
      return { entry: null, cacheExtra: '' };
    }
    if (!this.deps.adapters) throw new EngineError('NOT_FOUND', `Model ${name} not found.`, 'adapter');
    return this.deps.adapters.resolve(name);
  }

  /** For the adapter manager: slots used by a running step must not change. */
  get isStepping(): boolean {
    return this.stepping;
  }

  async loadAdapter(name: string, path: string): Promise<{ message: string; rank: number; loadMs: number }> {
    return loadAdapterRpc(this.deps.adapters, name, path);
  }

  async unloadAdapter(name: string): Promise<{ message: string }> {
    return unloadAdapterRpc(this.deps.adapters, name);
  }

  async listAdapters(): Promise<AdapterList> {
    return listAdaptersRpc(this.deps.adapters);
  }

  /** The engine's adapters (gRPC LoadAdapter/UnloadAdapter/ListAdapters call into it). */
  get adapters(): AdapterManager | undefined {
    return this.deps.adapters;
  }

  private checkAccepting(): void {
    if (this.stopping || this.closed)
      throw new EngineError('UNAVAILABLE', 'the engine is stopping and accepts no new requests');
  }

  private checkIdFree(id: string): void {
    if (this.requests.has(id) || this.pendingIds.has(id))
      throw invalidArgument('request_id', `'${id}' is already in use by a live request`);
  }

  private checkQueueRoom(): void {
    const o = this.deps.options;
    if (this.scheduler.waiting.length >= o.maxQueueSize) {
      throw new EngineError(
        'RESOURCE_EXHAUSTED',
        `server is overloaded: ${this.scheduler.waiting.length} requests are waiting (maxQueueSize ${o.maxQueueSize}); retry later`,
      );
    }
  }

  /** Ends the stream of an accepted request that never reached the scheduler. */
  private endUnadmitted(
    queue: EventQueue<GenerateEvent>,
    spans: RequestSpans | undefined,
    error: EngineError,
  ): void {
    if (error.code === 'CANCELLED') spans?.finish(ms(), { reasons: ['cancelled'], completionTokens: 0 });
    else spans?.finish(ms(), { reasons: ['error'], completionTokens: 0, error: error.message });
    queue.end(error);
    this.wakeDrainWaiters();
  }

  /** Puts a tokenized request in the scheduler's queue. */
  private admit(
    accepted: AcceptedRequest,
    prompt: number[],
    grammarKey: string | null,
    queue: EventQueue<GenerateEvent>,
    spans: RequestSpans | undefined,
    arrival: number,
    signal: AbortSignal | undefined,
  ): void {
    const { id, params, adapter } = accepted;
    // Not rechecked: `stopping` (a request accepted before drain() still runs, and drain
    // waits for it). Rechecked: the queue bound, which other requests may have filled, and
    // the adapter, which may have been unloaded while the prompt was tokenized.
    try {
      this.checkQueueRoom();
      if (adapter.entry && adapter.entry.state !== 'loaded') {
        throw new EngineError('NOT_FOUND', `Model ${adapter.entry.name} not found.`, 'adapter');
      }
    } catch (e) {
      this.endUnadmitted(queue, spans, asEngineError(e));
      return;
    }
    const o = this.deps.options;
    const tok = this.deps.tokenizer;
    const maxNew = Math.min(params.maxNewTokens, o.maxSeqLen - prompt.length);
    const choices = Array.from(
      { length: params.bestOf },
      (_, i) =>
        new ChoiceOutput(
          i,
          params.seed + i,
          tok,
          params,
          this.eos,
          accepted.parsing ? new ChatOutputStream(accepted.parsing) : null,
        ),
    );
    const sampling = {
      temperature: params.temperature,
      topK: params.topK,
      topP: params.topP,
      repetitionPenalty: params.repetitionPenalty,
      presencePenalty: params.presencePenalty,
      frequencyPenalty: params.frequencyPenalty,
      seed: BigInt(params.seed),
      // Always ask for the chosen token's logprob: finish events carry the cumulative logprob.
      topLogprobs: params.logprobs ? params.topLogprobs : 0,
    };
    const seq = new Sequence(
      id,
      0,
      prompt,
      sampling,
      arrival,
      params.bestOf > 1 ? params.bestOf : 0,
      adapter.cacheExtra,
    );
    seq.adapterGeneration = adapter.entry?.generation ?? 0; // the scheduler gives it a slot
    this.deps.adapters?.acquire(adapter.entry);
    if (grammarKey !== null)
      this.structured.attach(seq, grammarKey, !params.logprobs && params.bestOf <= params.n);
    const req: LiveRequest = {
      id,
      params,
      promptLen: prompt.length,
      maxNew,
      arrival,
      queue,
      seqs: [seq],
      choices,
      buffered: params.bestOf > params.n,
      firstScheduled: -1,
      firstToken: -1,
      cachedPromptTokens: 0,
      detachSignal: () => {},
      spans,
      adapter: adapter.entry,
    };
    this.requests.set(id, req);
    this.metrics.requestsReceived++;
    this.metrics.promptTokens += prompt.length;
    this.scheduler.add(seq);
    if (signal) {
      const onAbort = () => void this.cancel(id);
      if (signal.aborted) queueMicrotask(onAbort);
      else {
        signal.addEventListener('abort', onAbort, { once: true });
        req.detachSignal = () => signal.removeEventListener('abort', onAbort);
      }
    }
    this.kick();
  }

  async cancel(requestId: string): Promise<boolean> {
    const req = this.requests.get(requestId);
    if (!req) return false;
    for (const c of req.choices) if (c.reason === null) c.reason = 'cancelled';
    this.dropSequences(req);
    this.finalize(req);
    return true;
  }

  /** Marks a request's sequences aborted; frees at once those not inside the running step. */
  private dropSequences(req: LiveRequest): void {
    for (const s of req.seqs) {
      s.aborted = true;
      if (!s.inFlight && s.status !== 'finished') this.scheduler.finish(s);
    }
  }

  private forked(parent: Sequence, child: Sequence): void {
    const req = this.requests.get(parent.requestId);
    if (!req || parent.aborted) child.aborted = true;
    this.structured.fork(parent, child);
    req?.seqs.push(child);
  }

  // ---------------------------------------------------------------------------- step loop

  private kick(): void {
    if (this.loop) return;
    this.loop = this.run()
      .catch((e: unknown) => this.failAll(e))
      .finally(() => {
        this.loop = null;
        if (this.scheduler.hasWork && !this.closed) this.kick();
      });
  }

  /** A bug in the loop itself must not take the process down: fail every live request. */
  private failAll(e: unknown): void {
    // A bug in the loop itself is the server's fault, as a native step that throws is.
    const fault = new EngineError(
      'INTERNAL',
      `engine step loop failed: ${e instanceof Error ? e.message : String(e)}`,
    );
    for (const req of [...this.requests.values()]) {
      for (const s of req.seqs) s.inFlight = false;
      this.failRequest(req, fault.message, fault);
    }
    for (const s of [...this.scheduler.running, ...this.scheduler.waiting]) this.scheduler.finish(s);
  }

  private async run(): Promise<void> {
    for (;;) {
      this.reapAborted();
      this.deps.adapters?.betweenSteps();
      if (!this.scheduler.hasWork) return;
      const runningBefore = this.scheduler.running.length;
      const batch = this.scheduler.schedule();
      if (batch.items.length === 0) {
        if (this.scheduler.running.length !== runningBefore) continue; // admissions that only forked
        this.failUnschedulable();
        continue;
      }
      const now = ms();
      for (const { seq } of batch.items) {
        seq.inFlight = true;
        const req = this.requests.get(seq.requestId);
        if (req && req.firstScheduled < 0) req.firstScheduled = now;
        req?.spans?.scheduled(now);
      }
      let out: StepOutput;
      try {
        const late = await this.structured.beforeStep(batch);
        this.stepping = true;
        out = await this.deps.runner.step(batch, late);
      } catch (e) {
        this.failBatch(batch, e);
        continue;
      } finally {
        this.stepping = false;
        for (const { seq } of batch.items) seq.inFlight = false;
      }
      try {
        this.scheduler.postprocess(batch, out.tokens);
        this.emitTokens(batch, out);
      } catch (e) {
        this.failBatch(batch, e); // e.g. a tokenizer error: fails these requests, not the engine
      }
      // Let I/O (new requests, cancellations, stream consumers) run between steps.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  private reapAborted(): void {
    for (const list of [this.scheduler.running, this.scheduler.waiting]) {
      for (const s of list.filter((x) => x.aborted)) this.scheduler.finish(s);
    }
  }

  /** Nothing could be scheduled with nothing running: the head request can never fit. */
  private failUnschedulable(): void {
    const head = this.scheduler.waiting[0];
    const req = head && this.requests.get(head.requestId);
    if (!req) {
      if (head) this.scheduler.finish(head);
      return;
    }
    this.failRequest(
      req,
      `request needs more KV blocks than the pool has (${this.blocks.numBlocks} blocks of ${this.blocks.blockSize})`,
    );
  }

  private failBatch(batch: ScheduledBatch, e: unknown): void {
    const { error, requestIds } = this.faults.fault(batch, e);
    for (const id of requestIds) {
      const req = this.requests.get(id);
      if (req) this.failRequest(req, error.message, error);
    }
  }

  private failRequest(req: LiveRequest, message: string, fault?: EngineError): void {
    req.fault = fault;
    for (const c of req.choices) {
      if (c.reason === null) {
        c.reason = 'error';
        c.error = message;
      }
    }
    this.dropSequences(req);
    this.finalize(req);
  }

  // ---------------------------------------------------------------------------- outputs

  private emitTokens(batch: ScheduledBatch, out: StepOutput): void {
    const now = ms();
    batch.items.forEach((item, k) => {
      if (!item.sample || item.seq.aborted) return;
      const seq = item.seq;
      const req = this.requests.get(seq.requestId);
      if (!req) return;
      const c = req.choices[seq.index];
      if (c.reason !== null) return;
      const token = out.tokens[k];
      const logprob = out.logprobs[k];
      if (req.firstToken < 0) {
        req.firstToken = now;
        req.cachedPromptTokens = Math.max(0, seq.cachedPromptTokens);
        this.metrics.ttft.observe((now - req.arrival) / 1000);
        req.spans?.firstToken(now, req.promptLen, req.cachedPromptTokens);
      }
      const atLimit = () =>
        c.tokenIds.length + 1 >= req.maxNew || seq.tokens.length >= this.deps.options.maxSeqLen;
      const sampled = c.accept(token, logprob, now, atLimit());
      const { delta, chat, tokens } = this.structured.appendForced(seq, c, token, sampled, now, atLimit);
      const grammarError = this.structured.afterTokens(seq, tokens);
      if (grammarError !== null && c.reason === null) {
        c.reason = 'error';
        c.error = grammarError;
      }
      if (sampled.gapMs !== null) this.metrics.interToken.observe(sampled.gapMs / 1000);
      this.metrics.generationTokens += tokens.length;
      const lp = req.params.logprobs ? this.tokenLogprob(token, logprob, out, k) : undefined;
      if (lp) c.logprobs.push(lp);
      if (!req.buffered) {
        req.queue.push({
          type: 'token',
          requestId: req.id,
          index: c.index,
          tokenIds: tokens,
          text: delta,
          ...(lp ? { logprobs: [lp] } : {}),
          ...(chat ? { chat } : {}),
        });
      }
      if (c.reason !== null) {
        this.scheduler.finish(seq);
        if (req.choices.every((x) => x.reason !== null)) this.finalize(req);
      }
    });
  }

  private tokenLogprob(token: number, logprob: number, out: StepOutput, k: number): TokenLogprob {
    const tok = this.deps.tokenizer;
    const top: { tokenId: number; text: string; logprob: number }[] = [];
    const stride = out.topLogprobsStride;
    for (let j = 0; j < stride; j++) {
      const id = out.topLogprobIds[k * stride + j];
      if (id < 0) break;
      top.push({ tokenId: id, text: tok.tokenText(id), logprob: out.topLogprobValues[k * stride + j] });
    }
    return { tokenId: token, text: tok.tokenText(token), logprob, top };
  }

  /** Sends the finish events (and, for best_of > n, the chosen n) and forgets the request. */
  private finalize(req: LiveRequest): void {
    if (!this.requests.has(req.id)) return;
    this.requests.delete(req.id);
    req.detachSignal();
    this.deps.adapters?.release(req.adapter);
    this.structured.release(req.seqs);
    const end = ms();
    const first = req.firstToken >= 0 ? req.firstToken : end;
    const scheduled = req.firstScheduled >= 0 ? req.firstScheduled : first;
    const timings = {
      queueMs: scheduled - req.arrival,
      prefillMs: first - scheduled,
      decodeMs: end - first,
      ttftMs: req.firstToken >= 0 ? req.firstToken - req.arrival : 0,
    };
    let chosen = req.choices;
    if (req.buffered) {
      chosen = [...req.choices]
        .sort((a, b) => b.cumulativeLogprob - a.cumulativeLogprob)
        .slice(0, req.params.n);
    }
    let generated = 0;
    chosen.forEach((c, j) => {
      const index = req.buffered ? j : c.index;
      const chat = c.chatResult();
      generated += c.tokenIds.length;
      if (req.buffered && c.tokenIds.length > 0) {
        req.queue.push({
          type: 'token',
          requestId: req.id,
          index,
          tokenIds: c.tokenIds,
          text: c.text,
          ...(req.params.logprobs ? { logprobs: c.logprobs } : {}),
          ...(chat ? { chat: resultAsDelta(chat) } : {}),
        });
      }
      const finish: FinishEvent = {
        type: 'finish',
        requestId: req.id,
        index,
        reason: c.reason ?? 'cancelled',
        text: c.text,
        tokenIds: c.tokenIds,
        cumulativeLogprob: c.cumulativeLogprob,
        usage: {
          promptTokens: req.promptLen,
          completionTokens: c.tokenIds.length,
          cachedPromptTokens: req.cachedPromptTokens,
        },
        timings,
        seed: c.seed,
        ...(c.error !== undefined ? { error: c.error } : {}),
        ...(chat ? { chat } : {}),
        decodeTimesMs: c.gapList,
      };
      if (!req.fault) req.queue.push(finish);
    });
    req.spans?.finish(end, {
      reasons: chosen.map((c) => c.reason ?? 'cancelled'),
      completionTokens: generated,
      error: chosen.find((c) => c.error !== undefined)?.error,
    });
    req.queue.end(req.fault);
    const gaps = req.choices.reduce((n, c) => n + c.gaps, 0);
    this.metrics.finished({
      ok: req.choices.every((c) => c.reason !== 'error'),
      ttft: req.firstToken >= 0 ? timings.ttftMs / 1000 : null,
      interToken: gaps > 0 ? req.choices.reduce((s, c) => s + c.gapSumMs, 0) / gaps / 1000 : null,
      e2e: (end - req.arrival) / 1000,
      promptTokens: req.promptLen,
      generationTokens: generated,
    });
    this.wakeDrainWaiters();
  }

  // ---------------------------------------------------------------------------- the rest of Engine

  async tokenize(text: string, addSpecialTokens = true): Promise<number[]> {
    if (typeof text !== 'string') throw invalidArgument('text', 'must be a string');
    return this.deps.tokenizer.encodeAsync(text, { addSpecialTokens });
  }

  async detokenize(
    ids: readonly number[],
    skipSpecialTokens = false,
  ): Promise<{ text: string; tokens: string[] }> {
    const tok = this.deps.tokenizer;
    const checked = checkTokenIds(ids, tok.vocabSize, 'ids');
    return {
      text: tok.decode(checked, { skipSpecialTokens }),
      tokens: checked.map((id) => tok.tokenText(id)),
    };
  }

  async applyChatTemplate(messages: readonly ChatMessage[], addGenerationPrompt = true): Promise<string> {
    // The same rendering as a chat request without tools (earlier calls included).
    checkMessages(messages, 'messages');
    return this.chat.render({ kind: 'chat', messages, addGenerationPrompt }, 'messages').text;
  }

  async status(): Promise<EngineStatus> {
    const m = this.metrics;
    return {
      running: this.scheduler.running.length,
      waiting: this.scheduler.waiting.length,
      freeBlocks: this.blocks.freeBlocks,
      totalBlocks: this.blocks.numBlocks,
      blockSize: this.blocks.blockSize,
      maxBatchSize: this.deps.options.maxBatchSize,
      stopping: this.stopping,
      requestsReceived: m.requestsReceived,
      requestsSucceeded: m.requestsSucceeded,
      requestsFailed: m.requestsFailed,
      promptTokens: m.promptTokens,
      generationTokens: m.generationTokens,
      prefixCacheQueries: this.blocks.queries,
      prefixCacheHits: this.blocks.hits,
      preemptions: this.scheduler.preemptions,
      ttft: m.ttft.snapshot(),
      interTokenLatency: m.interToken.snapshot(),
      e2eLatency: m.e2e.snapshot(),
      promptTokensPerRequest: m.promptTokensPerRequest.snapshot(),
      generationTokensPerRequest: m.generationTokensPerRequest.snapshot(),
      recentAvgTtft: m.recentTtft.mean,
      recentAvgInterToken: m.recentInterToken.mean,
      runningLoraAdapters: this.adapterNames(this.scheduler.running),
      waitingLoraAdapters: this.adapterNames(this.scheduler.waiting),
      maxLora: this.deps.adapters?.limits.maxLoras ?? 0,
    };
  }

  private adapterNames(seqs: readonly Sequence[]): string[] {
    const names = new Set<string>();
    for (const s of seqs) {
      const a = this.requests.get(s.requestId)?.adapter;
      if (a) names.add(a.name);
    }
    return [...names].sort();
  }

  async info(): Promise<EngineInfo> {
    return this.deps.info;
  }

  /** Resolves drain() once no request is live or being tokenized. */
  private wakeDrainWaiters(): void {
    if (this.requests.size !== 0 || this.pendingIds.size !== 0) return;
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }

  drain(): Promise<void> {
    this.stopping = true;
    if (this.requests.size === 0 && this.pendingIds.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.stopping = true;
    this.closed = true;
    for (const id of [...this.requests.keys()]) await this.cancel(id);
    while (this.loop) await this.loop;
    await this.structured.close();
    this.deps.dispose?.();
  }
}
