/**
 * The engine's parts and how they are wired to each other, built once per engine: the block
 * pool and scheduler, the request features (request-features.ts) and the host they act
 * through (extension.ts), request intake (with admission: a request's signal, and an
 * extension that queues the first sequence itself), the output processor and the loop's
 * failure handling. The engine core (engine-core.ts) runs the step loop over them and answers
 * the Engine API; the few things only it knows (whether it is stopping, how to wake the loop)
 * come in as `CoreHooks`.
 */
import type { AdapterManager } from './adapters/manager.js';
import { BlockManager, type BlockCacheObserver } from './block-manager.js';
import { EngineMetrics } from './engine-metrics.js';
import { NoKvPool, type KvPool } from './kv-pool.js';
import type { ExtensionHost } from './extension.js';
import { ExtensionList } from './extension-list.js';
import { RequestTable, type LiveRequest } from './live-request.js';
import { LoopFailures } from './loop-failures.js';
import type { ResolvedEngineOptions } from './options.js';
import { OutputProcessor } from './output-processor.js';
import type { EngineTokenizer } from './prompt.js';
import { buildRequestFeatures, type FeatureDeps, type RequestFeatures } from './request-features.js';
import { RequestIntake } from './request-intake.js';
import type { Runner } from './runner.js';
import { Scheduler } from './scheduler.js';
import type { Sequence } from './sequence.js';
import { EngineChat } from './tools/engine-chat.js';
import type { ToolParserFamily } from './tools/types.js';
import type { EngineInfo, GenerateEvent, GenerateRequest } from './types.js';

export interface EngineCoreDeps extends FeatureDeps {
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

/** What the parts need from the engine core. */
export interface CoreHooks {
  /** Wakes the step loop (it may be idle when a sequence joins between steps). */
  kick(): void;
  cancel(requestId: string): void;
  /** Submits a request as a client would (one another engine hands over). */
  submit(request: GenerateRequest): AsyncIterable<GenerateEvent>;
  /** Throws UNAVAILABLE once the engine stops. */
  checkAccepting(): void;
  closed(): boolean;
}

export interface EngineParts {
  readonly blocks: KvPool;
  readonly scheduler: Scheduler;
  readonly metrics: EngineMetrics;
  readonly requests: RequestTable;
  readonly features: RequestFeatures;
  readonly extensions: ExtensionList;
  readonly intake: RequestIntake;
  readonly outputs: OutputProcessor;
  readonly failures: LoopFailures;
  /** Ends a sequence: the extensions hear of it, then the scheduler frees its blocks. */
  readonly finishSequence: (seq: Sequence) => void;
}

export function buildEngineParts(deps: EngineCoreDeps, core: CoreHooks): EngineParts {
  const o = deps.options;
  const metrics = new EngineMetrics();
  const requests = new RequestTable();
  // The KV pool is the runner's: paged blocks, or none for a model that keeps no KV (kv-pool.ts).
  const keepsKv = deps.runner.keepsKv ?? true;
  const blocks: KvPool = keepsKv
    ? new BlockManager(
        deps.runner.kvBlocks,
        deps.runner.blockSize,
        o.prefixCache,
        deps.blockObserver ?? null,
        deps.runner.kvGroups ?? 0,
      )
    : new NoKvPool(deps.runner.blockSize);
  const chat = new EngineChat(
    deps.tokenizer,
    deps.chatTemplate,
    deps.info.architecture,
    deps.toolParser,
    deps.vision !== undefined,
  );
  // A forked sequence (n > 1 sharing a prompt, one a feature forks or samples again) joins
  // its request and takes the extensions' state of its parent.
  const forked = (parent: Sequence, child: Sequence): void => {
    const req = requests.get(parent.requestId);
    if (!req || parent.aborted) child.aborted = true;
    extensions.fork(parent, child);
    req?.seqs.push(child);
  };
  const scheduler = new Scheduler(
    { ...o, maxAdaptersPerStep: deps.adapters?.limits.maxLoras, wholePrompts: !keepsKv },
    blocks,
    forked,
    deps.adapters,
  );
  // Several at once join the queue before the loop wakes: they can share its next step.
  const enqueue = (...seqs: Sequence[]): void => {
    for (const seq of seqs) scheduler.add(seq);
    core.kick();
  };
  const finishSequence = (seq: Sequence): void => {
    extensions.finishing(requests.get(seq.requestId), seq);
    scheduler.finish(seq);
  };
  // Late-bound: intake and outputs are built after the features that call them.
  const late: { intake?: RequestIntake; outputs?: OutputProcessor } = {};
  const host: ExtensionHost = {
    request: (id) => requests.get(id),
    liveRequests: () => requests.all(),
    enqueue,
    finishSequence,
    forkSequence: (parent) => scheduler.forkRunning(parent),
    afterTokens: (seq, tokens) => extensions.afterTokens(seq, tokens),
    restartChoice: (req, index, seed) => late.outputs!.restartChoice(req, index, seed),
    settle: (req) => late.outputs!.settle(req),
    finish: (req) => late.outputs!.finish(req),
    abort: (req, failure) => late.outputs!.abort(req, failure),
    countGenerated: (tokens) => (metrics.generationTokens += tokens),
    check: (request) => late.intake!.check(request),
    submit: (request) => core.submit(request),
    cancel: (id) => core.cancel(id),
  };
  const features = buildRequestFeatures(deps, { host, blocks, chat });
  const extensions = new ExtensionList(features.extensions);
  // An admitted request joins the queue (unless an extension queues it later); its caller's signal cancels it.
  const admitted = (req: LiveRequest, seq: Sequence, signal: AbortSignal | undefined): void => {
    if (signal) {
      const onAbort = () => core.cancel(req.id);
      if (signal.aborted) queueMicrotask(onAbort);
      else {
        signal.addEventListener('abort', onAbort, { once: true });
        req.detachSignal = () => signal.removeEventListener('abort', onAbort);
      }
    }
    if (!extensions.beforeQueue(req, seq)) enqueue(seq);
  };
  const intake = new RequestIntake({
    tokenizer: deps.tokenizer,
    options: o,
    modelName: deps.info.modelName,
    chatTemplate: deps.chatTemplate,
    chat,
    adapters: deps.adapters,
    table: requests,
    metrics,
    eos: new Set(deps.tokenizer.eosTokenIds),
    extensions,
    waitingCount: () => scheduler.waiting.length,
    checkAccepting: () => core.checkAccepting(),
    closed: () => core.closed(),
    admitted,
    cancel: (id) => core.cancel(id),
  });
  const outputs = new OutputProcessor({
    tokenizer: deps.tokenizer,
    maxSeqLen: o.maxSeqLen,
    adapters: deps.adapters,
    table: requests,
    metrics,
    extensions,
    finishSequence,
    addSequence: enqueue, // a restart answers between steps: the loop may be idle
    forked,
  });
  late.intake = intake;
  late.outputs = outputs;
  const failures = new LoopFailures({
    requests,
    scheduler,
    blocks,
    abort: (req, failure) => outputs.abort(req, failure),
  });
  return {
    blocks,
    scheduler,
    metrics,
    requests,
    features,
    extensions,
    intake,
    outputs,
    failures,
    finishSequence,
  };
}
