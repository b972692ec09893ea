/**
 * The in-process engine: implements `Engine` (engine/types.ts) as three parts, like vLLM v1
 * with nano-vllm's loop. Request intake (request-intake.ts) validates, tokenizes and admits;
 * this file runs the step loop — at most one native step in flight, and between steps it
 * reaps cancelled sequences and schedules; the output processor (output-processor.ts) turns
 * sampled tokens into events. Data flows one way per step:
 * schedule → runner.step → scheduler.postprocess → outputs.process.
 *
 * Loading a model (native + tokenizer) lives in engine/load-engine.ts; this file has no
 * native dependency of its own, only the `Runner` it is given.
 */
import type { AdapterManager } from './adapters/manager.js';
import { listAdaptersRpc, loadAdapterRpc, unloadAdapterRpc } from './adapters/rpcs.js';
import { BlockManager, type BlockCacheObserver } from './block-manager.js';
import { EngineMetrics } from './engine-metrics.js';
import { EngineError } from './errors.js';
import { RequestTable, type LiveRequest } from './live-request.js';
import type { ResolvedEngineOptions } from './options.js';
import { OutputProcessor } from './output-processor.js';
import type { EngineTokenizer } from './prompt.js';
import { RequestIntake } from './request-intake.js';
import type { Runner, StepOutput } from './runner.js';
import { Scheduler, type ScheduledBatch } from './scheduler.js';
import type { Sequence } from './sequence.js';
import { StepFaults } from './step-fault.js';
import { StructuredOutput } from './structured/engine-glue.js';
import { EngineChat } from './tools/engine-chat.js';
import type { ToolParserFamily } from './tools/types.js';
import { Disaggregation } from './kv-transfer/engine-glue.js';
import type { DecodeResult, EngineRole, RoleState } from './kv-transfer/types.js';
import type {
  AdapterList,
  ChatMessage,
  Engine,
  EngineInfo,
  EngineStatus,
  GenerateEvent,
  GenerateRequest,
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

const ms = () => performance.now();

export class EngineCore implements Engine {
  private readonly scheduler: Scheduler;
  private readonly blocks: BlockManager;
  private readonly metrics = new EngineMetrics();
  private readonly requests = new RequestTable();
  private readonly intake: RequestIntake;
  private readonly outputs: OutputProcessor;
  private loop: Promise<void> | null = null;
  private stopping = false;
  private closed = false;
  private readonly chat: EngineChat;
  /** A native step is running (adapter slots it uses may not change). */
  private stepping = false;
  /** Structured output (public for the benchmark's switches: overlapMasks, jumpForward). */
  readonly structured: StructuredOutput;
  private readonly faults = new StepFaults();
  /** Split prefill/decode (engine/kv-transfer/): roles, leases, pulls, hand-offs, the results hub. */
  readonly disaggregation: Disaggregation;

  constructor(private readonly deps: EngineCoreDeps) {
    const o = deps.options;
    this.blocks = new BlockManager(
      deps.runner.kvBlocks,
      deps.runner.blockSize,
      o.prefixCache,
      deps.blockObserver ?? null,
      deps.runner.kvGroups ?? 0,
    );
    this.scheduler = new Scheduler(
      { ...o, maxAdaptersPerStep: deps.adapters?.limits.maxLoras },
      this.blocks,
      (parent, child) => this.forked(parent, child),
      deps.adapters,
    );
    this.chat = new EngineChat(deps.tokenizer, deps.chatTemplate, deps.info.architecture, deps.toolParser);
    this.structured = new StructuredOutput(deps.tokenizer, deps.info.vocabSize, undefined, o.threads);
    this.disaggregation = new Disaggregation({
      kv: deps.runner.kv,
      modelFingerprint: deps.info.modelFingerprint,
      engineId: deps.info.engineId,
      blocks: this.blocks,
      structured: this.structured,
      maxSeqLen: o.maxSeqLen,
      options: { role: o.role, leaseTtlMs: o.kvLeaseMs, transferTimeoutMs: o.kvTransferTimeoutMs },
      liveRequests: () => this.requests.all(),
      check: (request) => this.intake.check(request),
      submit: (request) => this.generate(request),
      enqueue: (seq) => this.enqueue(seq),
      fail: (req, error) => this.outputs.abort(req, { message: error.message, fault: error }),
      cancel: (id) => void this.cancel(id),
    });
    this.intake = new RequestIntake({
      tokenizer: deps.tokenizer,
      options: o,
      modelName: deps.info.modelName,
      chatTemplate: deps.chatTemplate,
      chat: this.chat,
      structured: this.structured,
      adapters: deps.adapters,
      table: this.requests,
      metrics: this.metrics,
      eos: new Set(deps.tokenizer.eosTokenIds),
      waitingCount: () => this.scheduler.waiting.length,
      checkAccepting: () => this.checkAccepting(),
      closed: () => this.closed,
      admitted: (req, seq, signal) => this.admitted(req, seq, signal),
      cancel: (id) => void this.cancel(id),
      disaggregation: this.disaggregation,
    });
    this.outputs = new OutputProcessor({
      tokenizer: deps.tokenizer,
      maxSeqLen: o.maxSeqLen,
      structured: this.structured,
      adapters: deps.adapters,
      table: this.requests,
      metrics: this.metrics,
      finishSequence: (seq) => {
        this.disaggregation.finishing(this.requests.get(seq.requestId), seq);
        this.scheduler.finish(seq);
      },
      addSequence: (seq) => {
        this.scheduler.add(seq);
        this.kick(); // a check answers between steps: the loop may be idle
      },
      forkBeam: (parent) => this.scheduler.forkBeam(parent),
      disaggregation: this.disaggregation,
    });
  }

  // ---------------------------------------------------------------------------- requests

  generate(request: GenerateRequest, signal?: AbortSignal): AsyncIterable<GenerateEvent> {
    return this.intake.submit(request, signal);
  }

  private checkAccepting(): void {
    if (this.stopping || this.closed)
      throw new EngineError('UNAVAILABLE', 'the engine is stopping and accepts no new requests');
  }

  /**
   * An admitted request joins the scheduler's queue (one that arrives with its KV once the KV
   * is in: engine/kv-transfer/); its caller's signal cancels it.
   */
  private admitted(req: LiveRequest, seq: Sequence, signal: AbortSignal | undefined): void {
    if (signal) {
      const onAbort = () => void this.cancel(req.id);
      if (signal.aborted) queueMicrotask(onAbort);
      else {
        signal.addEventListener('abort', onAbort, { once: true });
        req.detachSignal = () => signal.removeEventListener('abort', onAbort);
      }
    }
    if (req.pd?.kind === 'decode') void this.disaggregation.pullThenEnqueue(req, seq);
    else this.enqueue(seq);
  }

  private enqueue(seq: Sequence): void {
    this.scheduler.add(seq);
    this.kick();
  }

  /** Cancels a live request, or frees the KV leased under the id for another engine to pull. */
  async cancel(requestId: string): Promise<boolean> {
    const req = this.requests.get(requestId);
    const leased = this.disaggregation.cancelled(requestId, req);
    if (!req) return leased;
    this.outputs.abort(req);
    return true;
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
    for (const req of this.requests.all()) {
      for (const s of req.seqs) s.inFlight = false;
      this.outputs.abort(req, { message: fault.message, fault });
    }
    for (const s of [...this.scheduler.running, ...this.scheduler.waiting]) this.scheduler.finish(s);
  }

  /** The step loop (nano-vllm's `step`, repeated while there is work). */
  private async run(): Promise<void> {
    for (;;) {
      this.reapAborted();
      this.deps.adapters?.betweenSteps();
      if (!this.scheduler.hasWork) return;
      const runningBefore = this.scheduler.running.length;
      const batch = this.scheduler.schedule();
      if (batch.items.length === 0) {
        // Admissions that only forked changed the running set; else the head can never fit.
        if (this.scheduler.running.length === runningBefore) this.failUnschedulable();
        continue;
      }
      const out = await this.execute(batch);
      if (out) {
        try {
          this.scheduler.postprocess(batch, out.tokens);
          this.outputs.process(batch, out);
        } catch (e) {
          this.failBatch(batch, e); // e.g. a tokenizer error: fails these requests, not the engine
        }
      }
      // Let I/O (new requests, cancellations, stream consumers) run between steps.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** Runs the batch's native step (once its grammar masks are in hand); null when it failed. */
  private async execute(batch: ScheduledBatch): Promise<StepOutput | null> {
    const now = ms();
    for (const { seq } of batch.items) {
      seq.inFlight = true;
      const req = this.requests.get(seq.requestId);
      if (req && req.firstScheduled < 0) req.firstScheduled = now;
      req?.spans?.scheduled(now);
    }
    try {
      const late = await this.structured.beforeStep(batch);
      this.stepping = true;
      return await this.deps.runner.step(batch, late);
    } catch (e) {
      this.failBatch(batch, e);
      return null;
    } finally {
      this.stepping = false;
      for (const { seq } of batch.items) seq.inFlight = false;
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
    this.outputs.abort(req, {
      message: `request needs more KV blocks than the pool has (${this.blocks.numBlocks} blocks of ${this.blocks.blockSize})`,
    });
  }

  private failBatch(batch: ScheduledBatch, e: unknown): void {
    const { error, requestIds } = this.faults.fault(batch, e);
    for (const id of requestIds) {
      const req = this.requests.get(id);
      if (req) this.outputs.abort(req, { message: error.message, fault: error });
    }
  }

  // ---------------------------------------------------------------------------- the rest of Engine

  tokenize(text: string, addSpecialTokens = true): Promise<number[]> {
    return this.intake.tokenize(text, addSpecialTokens);
  }

  detokenize(ids: readonly number[], skipSpecialTokens = false): Promise<{ text: string; tokens: string[] }> {
    return this.intake.detokenize(ids, skipSpecialTokens);
  }

  applyChatTemplate(messages: readonly ChatMessage[], addGenerationPrompt = true): Promise<string> {
    return this.intake.applyChatTemplate(messages, addGenerationPrompt);
  }

  async status(): Promise<EngineStatus> {
    return {
      ...this.metrics.status(),
      running: this.scheduler.running.length,
      waiting: this.scheduler.waiting.length,
      freeBlocks: this.blocks.freeBlocks,
      totalBlocks: this.blocks.numBlocks,
      blockSize: this.blocks.blockSize,
      maxBatchSize: this.deps.options.maxBatchSize,
      stopping: this.stopping,
      prefixCacheQueries: this.blocks.queries,
      prefixCacheHits: this.blocks.hits,
      preemptions: this.scheduler.preemptions,
      runningLoraAdapters: this.adapterNames(this.scheduler.running),
      waitingLoraAdapters: this.adapterNames(this.scheduler.waiting),
      maxLora: this.deps.adapters?.limits.maxLoras ?? 0,
      ...this.kvStatus(),
    };
  }

  private kvStatus() {
    const { role, status } = this.disaggregation.roleState();
    const c = this.disaggregation.counters();
    return {
      role,
      roleStatus: status,
      leasedBlocks: c.leasedBlocks,
      kvTransfersIn: c.transfersIn,
      kvBytesIn: c.bytesIn,
      kvTransferMsIn: c.transferMsIn,
      kvTokensIn: c.tokensIn,
      kvTransfersOut: c.transfersOut,
      kvBytesOut: c.bytesOut,
      kvTransferFailures: c.failures,
    };
  }

  async setRole(role: EngineRole): Promise<RoleState> {
    return this.disaggregation.setRole(role);
  }

  decodeResults(signal?: AbortSignal): AsyncIterable<DecodeResult> {
    return this.disaggregation.decodeResults(signal);
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

  drain(): Promise<void> {
    this.stopping = true;
    return this.requests.whenEmpty();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.stopping = true;
    this.closed = true;
    for (const id of this.requests.ids()) await this.cancel(id);
    this.disaggregation.close();
    while (this.loop) await this.loop;
    await this.structured.close();
    this.deps.dispose?.();
  }
}
