/**
 * The in-process engine: implements `Engine` (engine/types.ts) as three parts, like vLLM v1
 * with nano-vllm's loop. Request intake (request-intake.ts) validates, tokenizes and admits;
 * this file runs the step loop — at most one native step in flight, and between steps it
 * reaps cancelled sequences and schedules; the output processor (output-processor.ts) turns
 * sampled tokens into events. Data flows one way per step:
 * extensions before schedule → schedule → extensions before step → runner.step →
 * scheduler.postprocess → outputs.process → extensions after step.
 * The request features act through those hooks (extension.ts; the list is built in
 * request-features.ts) and this file names none of them. The parts and their wiring are
 * built in engine-parts.ts; the engine's status snapshot is assembled in engine-status.ts,
 * and how the loop fails requests is in loop-failures.ts.
 *
 * Loading a model (native + tokenizer) lives in engine/load-engine.ts; this file has no
 * native dependency of its own, only the `Runner` it is given.
 */
import type { AdapterManager } from './adapters/manager.js';
import { listAdaptersRpc, loadAdapterRpc, unloadAdapterRpc } from './adapters/rpcs.js';
import type { KvPool } from './kv-pool.js';
import { buildEngineParts, type EngineCoreDeps } from './engine-parts.js';
import type { EngineMetrics } from './engine-metrics.js';
import { engineStatus } from './engine-status.js';
import { EngineError, notAPoolingModel } from './errors.js';
import type { ExtensionList } from './extension-list.js';
import type { RequestTable } from './live-request.js';
import type { LoopFailures } from './loop-failures.js';
import type { OutputProcessor } from './output-processor.js';
import type { EngineRole, RoleState } from './pd-types.js';
import type { FeatureHandles, RequestFeatures } from './request-features.js';
import type { RequestIntake } from './request-intake.js';
import type { StepOutput } from './runner.js';
import type { ScheduledBatch, Scheduler } from './scheduler.js';
import type { Sequence } from './sequence.js';
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
} from './types.js';

export type { EngineCoreDeps } from './engine-parts.js';

const ms = () => performance.now();

export class EngineCore implements Engine {
  private readonly scheduler: Scheduler;
  private readonly blocks: KvPool;
  private readonly metrics: EngineMetrics;
  private readonly requests: RequestTable;
  private readonly intake: RequestIntake;
  private readonly outputs: OutputProcessor;
  private readonly failures: LoopFailures;
  /** The request features' hooks (extension.ts), walked in their order. */
  private readonly extensions: ExtensionList;
  private readonly requestFeatures: RequestFeatures;
  private readonly finishSequence: (seq: Sequence) => void;
  /**
   * The features' handles (request-features.ts): the engine-to-engine RPCs a gRPC server
   * serves, counters tests and benchmarks read.
   */
  readonly features: FeatureHandles;
  private loop: Promise<void> | null = null;
  private stopping = false;
  private closed = false;
  /** A native step is running (adapter slots it uses may not change). */
  private stepping = false;

  constructor(private readonly deps: EngineCoreDeps) {
    const parts = buildEngineParts(deps, {
      kick: () => this.kick(),
      cancel: (id) => void this.cancel(id),
      submit: (request) => this.generate(request),
      checkAccepting: () => this.checkAccepting(),
      closed: () => this.closed,
    });
    this.scheduler = parts.scheduler;
    this.blocks = parts.blocks;
    this.metrics = parts.metrics;
    this.requests = parts.requests;
    this.intake = parts.intake;
    this.outputs = parts.outputs;
    this.failures = parts.failures;
    this.extensions = parts.extensions;
    this.requestFeatures = parts.features;
    this.features = parts.features.handles;
    this.finishSequence = parts.finishSequence;
  }

  // ---------------------------------------------------------------------------- requests

  generate(request: GenerateRequest, signal?: AbortSignal): AsyncIterable<GenerateEvent> {
    return this.intake.submit(request, signal);
  }

  private checkAccepting(): void {
    if (this.stopping || this.closed)
      throw new EngineError('UNAVAILABLE', 'the engine is stopping and accepts no new requests');
  }

  /** Cancels a live request, or what an extension holds under the id. */
  async cancel(requestId: string): Promise<boolean> {
    const req = this.requests.get(requestId);
    const claimed = this.extensions.cancel(requestId, req);
    if (!req) return claimed;
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

  // ---------------------------------------------------------------------------- step loop

  private kick(): void {
    if (this.loop) return;
    this.loop = this.run()
      .catch((e: unknown) => this.failures.all(e))
      .finally(() => {
        this.loop = null;
        if (this.scheduler.hasWork && !this.closed) this.kick();
      });
  }

  /** The step loop (nano-vllm's `step`, repeated while there is work). */
  private async run(): Promise<void> {
    for (;;) {
      this.reapAborted();
      this.deps.adapters?.betweenSteps();
      if (!this.scheduler.hasWork) return;
      const runningBefore = this.scheduler.running.length;
      const before = this.extensions.beforeSchedule(this.scheduler.running, this.scheduler.waiting.length);
      if (before) await before;
      const batch = this.scheduler.schedule();
      if (batch.items.length === 0) {
        // Admissions that only forked changed the running set; else the head can never fit.
        if (this.scheduler.running.length === runningBefore) this.failures.unschedulable();
        continue;
      }
      const out = await this.execute(batch);
      if (out) {
        try {
          this.scheduler.postprocess(batch, out.tokens, out.numAccepted);
          this.outputs.process(batch, out);
          this.extensions.afterStep(batch, out);
        } catch (e) {
          this.failures.batch(batch, e); // e.g. a tokenizer error: fails these requests, not the engine
        }
      }
      // Let I/O (new requests, cancellations, stream consumers) run between steps.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** Runs the batch's native step (with what the extensions give it first); null when it failed. */
  private async execute(batch: ScheduledBatch): Promise<StepOutput | null> {
    const now = ms();
    for (const { seq } of batch.items) {
      seq.inFlight = true;
      const req = this.requests.get(seq.requestId);
      if (req && req.firstScheduled < 0) req.firstScheduled = now;
      req?.spans?.scheduled(now);
    }
    try {
      const before = this.extensions.beforeStep(batch);
      const late = before && (await before);
      this.stepping = true;
      return await this.deps.runner.step(batch, late);
    } catch (e) {
      this.failures.batch(batch, e);
      return null;
    } finally {
      this.stepping = false;
      for (const { seq } of batch.items) seq.inFlight = false;
    }
  }

  private reapAborted(): void {
    for (const list of [this.scheduler.running, this.scheduler.waiting]) {
      for (const s of list.filter((x) => x.aborted)) this.finishSequence(s);
    }
  }

  // ---------------------------------------------------------------------------- the rest of Engine

  tokenize(text: string, addSpecialTokens = true): Promise<number[]> {
    return this.intake.tokenize(text, addSpecialTokens);
  }

  detokenize(ids: readonly number[], skipSpecialTokens = false): Promise<{ text: string; tokens: string[] }> {
    return this.intake.detokenize(ids, skipSpecialTokens);
  }

  applyChatTemplate(
    messages: readonly ChatMessage[],
    addGenerationPrompt = true,
    extras: ChatRenderExtras = {},
  ): Promise<string> {
    return this.intake.applyChatTemplate(messages, addGenerationPrompt, extras);
  }

  async status(): Promise<EngineStatus> {
    return engineStatus({
      metrics: this.metrics,
      scheduler: this.scheduler,
      blocks: this.blocks,
      requests: this.requests,
      features: this.requestFeatures.status(),
      maxBatchSize: this.deps.options.maxBatchSize,
      maxLora: this.deps.adapters?.limits.maxLoras ?? 0,
      stopping: this.stopping,
    });
  }

  async setRole(role: EngineRole): Promise<RoleState> {
    return this.requestFeatures.setRole(role);
  }

  decodeResults(signal?: AbortSignal): AsyncIterable<DecodeResult> {
    return this.requestFeatures.decodeResults(signal);
  }

  async info(): Promise<EngineInfo> {
    return this.deps.info;
  }

  async pool(_request: PoolingRequest): Promise<PoolingResult> {
    throw notAPoolingModel(this.deps.info.modelName);
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
    while (this.loop) await this.loop;
    await this.extensions.close();
    this.deps.dispose?.();
  }
}
