/**
 * The engine's parts and how they are wired to each other, built once per engine: the block
 * pool and scheduler, request intake (with admission: a request's signal, and split
 * prefill/decode's pull before a decode-side request queues), the output processor,
 * structured output, speculation, split prefill/decode and the loop's failure handling.
 * The engine core (engine-core.ts) runs the step loop over them and answers the Engine API;
 * the few things only it knows (whether it is stopping, how to wake the loop) come in as
 * `CoreHooks`.
 */
import type { AdapterManager } from './adapters/manager.js';
import { BlockManager, type BlockCacheObserver } from './block-manager.js';
import { EngineMetrics } from './engine-metrics.js';
import { Disaggregation } from './kv-transfer/engine-glue.js';
import { RequestTable, type LiveRequest } from './live-request.js';
import { LoopFailures } from './loop-failures.js';
import type { ResolvedEngineOptions } from './options.js';
import { OutputProcessor } from './output-processor.js';
import type { EngineTokenizer } from './prompt.js';
import { RequestIntake } from './request-intake.js';
import type { Runner } from './runner.js';
import { Scheduler } from './scheduler.js';
import type { Sequence } from './sequence.js';
import { speculatorFor, type SpeculationConfig } from './speculative/engine-glue.js';
import type { Speculator } from './speculative/speculator.js';
import { StructuredOutput } from './structured/engine-glue.js';
import { EngineChat } from './tools/engine-chat.js';
import type { ToolParserFamily } from './tools/types.js';
import type { EngineInfo, GenerateEvent, GenerateRequest } from './types.js';

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
  /** Speculative decoding (engine/speculative/): the proposer and its settings; absent = off. */
  readonly speculation?: SpeculationConfig;
}

/** What the parts need from the engine core. */
export interface CoreHooks {
  /** Wakes the step loop (it may be idle when a sequence joins between steps). */
  kick(): void;
  cancel(requestId: string): void;
  /** Submits a request as a client would (a hand-off arriving from a prefill engine). */
  submit(request: GenerateRequest): AsyncIterable<GenerateEvent>;
  /** Throws UNAVAILABLE once the engine is stopping. */
  checkAccepting(): void;
  closed(): boolean;
}

export interface EngineParts {
  readonly blocks: BlockManager;
  readonly scheduler: Scheduler;
  readonly metrics: EngineMetrics;
  readonly requests: RequestTable;
  readonly structured: StructuredOutput;
  readonly disaggregation: Disaggregation;
  readonly intake: RequestIntake;
  readonly outputs: OutputProcessor;
  readonly speculator: Speculator | null;
  readonly failures: LoopFailures;
}

export function buildEngineParts(deps: EngineCoreDeps, core: CoreHooks): EngineParts {
  const o = deps.options;
  const metrics = new EngineMetrics();
  const requests = new RequestTable();
  const blocks = new BlockManager(
    deps.runner.kvBlocks,
    deps.runner.blockSize,
    o.prefixCache,
    deps.blockObserver ?? null,
    deps.runner.kvGroups ?? 0,
  );
  const structured = new StructuredOutput(deps.tokenizer, deps.info.vocabSize, undefined, o.threads);
  // A forked sequence (n > 1 sharing a prompt, or a beam) joins its request and copies its grammar state.
  const forked = (parent: Sequence, child: Sequence): void => {
    const req = requests.get(parent.requestId);
    if (!req || parent.aborted) child.aborted = true;
    structured.fork(parent, child);
    req?.seqs.push(child);
  };
  const scheduler = new Scheduler(
    { ...o, maxAdaptersPerStep: deps.adapters?.limits.maxLoras },
    blocks,
    forked,
    deps.adapters,
  );
  const enqueue = (seq: Sequence): void => {
    scheduler.add(seq);
    core.kick();
  };
  // Late-bound: intake and outputs are built after the disaggregation that calls them.
  const late: { intake?: RequestIntake; outputs?: OutputProcessor } = {};
  const disaggregation = new Disaggregation({
    kv: deps.runner.kv,
    modelFingerprint: deps.info.modelFingerprint,
    engineId: deps.info.engineId,
    blocks,
    structured,
    maxSeqLen: o.maxSeqLen,
    options: { role: o.role, leaseTtlMs: o.kvLeaseMs, transferTimeoutMs: o.kvTransferTimeoutMs },
    liveRequests: () => requests.all(),
    check: (request) => late.intake!.check(request),
    submit: (request) => core.submit(request),
    enqueue,
    fail: (req, error) => late.outputs!.abort(req, { message: error.message, fault: error }),
    cancel: (id) => core.cancel(id),
  });
  // An admitted request joins the queue (a decode-side one once its KV is in); its caller's signal cancels it.
  const admitted = (req: LiveRequest, seq: Sequence, signal: AbortSignal | undefined): void => {
    if (signal) {
      const onAbort = () => core.cancel(req.id);
      if (signal.aborted) queueMicrotask(onAbort);
      else {
        signal.addEventListener('abort', onAbort, { once: true });
        req.detachSignal = () => signal.removeEventListener('abort', onAbort);
      }
    }
    if (req.pd?.kind === 'decode') void disaggregation.pullThenEnqueue(req, seq);
    else enqueue(seq);
  };
  const intake = new RequestIntake({
    tokenizer: deps.tokenizer,
    options: o,
    modelName: deps.info.modelName,
    chatTemplate: deps.chatTemplate,
    chat: new EngineChat(deps.tokenizer, deps.chatTemplate, deps.info.architecture, deps.toolParser),
    structured,
    adapters: deps.adapters,
    table: requests,
    metrics,
    eos: new Set(deps.tokenizer.eosTokenIds),
    waitingCount: () => scheduler.waiting.length,
    checkAccepting: () => core.checkAccepting(),
    closed: () => core.closed(),
    admitted,
    cancel: (id) => core.cancel(id),
    disaggregation,
  });
  const speculator = deps.speculation
    ? speculatorFor(deps.speculation, (seq) => requests.get(seq.requestId), o.maxSeqLen, o.maxBatchSize)
    : null;
  const outputs = new OutputProcessor({
    tokenizer: deps.tokenizer,
    maxSeqLen: o.maxSeqLen,
    structured,
    adapters: deps.adapters,
    table: requests,
    metrics,
    finishSequence: (seq) => {
      disaggregation.finishing(requests.get(seq.requestId), seq);
      speculator?.release(seq);
      scheduler.finish(seq);
    },
    addSequence: enqueue, // a check answers between steps: the loop may be idle
    forkBeam: (parent) => scheduler.forkBeam(parent),
    disaggregation,
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
    structured,
    disaggregation,
    intake,
    outputs,
    speculator,
    failures,
  };
}
