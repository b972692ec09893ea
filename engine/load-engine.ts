/**
 * Builds the in-process engine from a model path: loads the weights (native), the tokenizer
 * (engine/tokenizer/), sizes the KV pool from the options, and wires the native runner into
 * EngineCore. This is the one place the engine core meets the native addon.
 */
import type { ImageEncoder } from './vision/image-encoder.js';
import { loadImageEncoder } from './vision/load-image-encoder.js';
import type { NativeImageEncoder } from './vision/native-image-encoder.js';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import {
  contextInfo,
  cudaDevices,
  createContext,
  deviceCapabilities,
  disposeContext,
  disposeModel,
  loadModel,
  modelInfo,
  type ContextHandle,
} from '../native/native.js';
import { planLora, startAdapters } from './adapters/load-adapters.js';
import type { AdapterManager } from './adapters/manager.js';
import { defaultDeviceKvBytes, requireCudaDevice, resolveCudaKernels, resolveDevice } from './device.js';
import { EngineCore } from './engine-core.js';
import { isPoolingModel, loadPoolingEngine } from './pooling/load.js';
import { EngineError, invalidArgument } from './errors.js';
import type { Engine } from './types.js';
import { modelFingerprint } from './kv-transfer/fingerprint.js';
import type { KvEventPublisher } from './kv-events.js';
import { kvBytesPerPage, minKvPages } from './kv-layout.js';
import { checkMemoryFits, machineMemoryBytes, type MemoryReport } from './memory.js';
import {
  checkKvBlocks,
  defaultKvEventsTopic,
  kvBlocksForBudget,
  resolveEngineOptions,
  type EngineOptions,
} from './options.js';
import { NativeRunner } from './runner.js';
import { scratchPagesFor, startSpeculation } from './speculative/start.js';
import type { StructuredTuning } from './structured/tuning.js';
import { loadTokenizer } from './tokenizer/index.js';
import { configuredParserName, selectToolParser } from './tools/registry.js';

/**
 * The served model name without a config file: the model file's name without `.gguf` (or the
 * directory's name). A GGUF's own `general.name` may hold spaces, which model-name URL path
 * segments (`[\w\-.]+`) cannot carry.
 */
export function defaultServedModelName(modelPath: string): string {
  return basename(modelPath.replace(/[\\/]+$/, '')).replace(/\.gguf$/i, '');
}

export interface LoadEngineHooks {
  /** Model loading progress in [0, 1]. */
  readonly onProgress?: (fraction: number) => void;
  /** The native context the engine steps on (fault-injection tests: native faultTestHooks). */
  readonly onContext?: (ctx: ContextHandle) => void;
  /** Weights, KV pool and resident memory once loaded (what `prism serve` prints at start). */
  readonly onMemory?: (report: MemoryReport) => void;
  /** The KV-event publisher, when options.kvEvents turned it on (its bound address, idle()). */
  readonly onKvEvents?: (publisher: KvEventPublisher) => void;
  /** Structured output's switches and mask-wait observer, read at every step (benchmarks, tests). */
  readonly structuredTuning?: StructuredTuning;
  /** The image encoder of a vision model (tests give one until the native encoder is wired). */
  readonly imageEncoder?: ImageEncoder;
}

export async function loadEngine(
  modelPath: string,
  options: EngineOptions = {},
  hooks: LoadEngineHooks = {},
): Promise<EngineCore> {
  // Checked at once (bad options fail before the model loads); resolved again with the model's context below.
  let o = resolveEngineOptions(options);
  let chatTemplate: string | undefined;
  if (o.chatTemplatePath !== undefined) {
    try {
      chatTemplate = readFileSync(o.chatTemplatePath, 'utf8');
    } catch (e) {
      throw new EngineError(
        'INVALID_ARGUMENT',
        `chatTemplatePath: cannot read ${o.chatTemplatePath}: ${(e as Error).message}`,
        'chatTemplatePath',
      );
    }
  }
  const device = resolveDevice(o.device);
  const cudaKernels = resolveCudaKernels(o.cudaKernels, device);
  // CUDA asked for and not there: the error names why, before anything is loaded.
  if (device !== 'cpu') requireCudaDevice(device);
  if (!deviceCapabilities(device).lora && o.lora) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `lora: LoRA adapters are not supported on a CUDA device yet (device ${device}); serve them on the CPU`,
      'lora',
    );
  }
  const [model, tokenizer] = await Promise.all([
    loadModel(modelPath, hooks.onProgress, { device, ...(cudaKernels ? { cudaKernels } : {}) }),
    loadTokenizer(modelPath),
  ]);
  const m = modelInfo(model);
  // A vision-language folder's image side, or a GGUF's mmproj, unless the caller brings its own encoder.
  let ownEncoder: NativeImageEncoder | undefined;
  let vision = m.vision;
  if (!hooks.imageEncoder) {
    try {
      const loaded = await loadImageEncoder(modelPath, m, o);
      ownEncoder = loaded?.encoder;
      vision = loaded?.vision;
    } catch (e) {
      disposeModel(model);
      throw e;
    }
  }
  const imageEncoder = hooks.imageEncoder ?? ownEncoder;
  o = resolveEngineOptions(options, m.contextLength);
  if (o.maxSeqLen > m.contextLength) {
    process.emitWarning(
      `maxSeqLen ${o.maxSeqLen} is above the model's trained context length ${m.contextLength}`,
    );
  }
  const machineBytes = machineMemoryBytes();
  let kvPages: number;
  try {
    // The pool is counted in pages (engine/kv-layout.ts: one per block for most models). An
    // explicit kvBlocks keeps its meaning in memory: the bytes of that many blocks of every layer.
    checkKvBlocks(o, m.kvLayout);
    const minPages = minKvPages(m.kvLayout, o);
    if (device === 'cpu') {
      const perPage = kvBytesPerPage(m.kvLayout, m, o.cacheBlockSize);
      // Without a budget the pool holds at least one sequence of maxSeqLen (the model's context,
      // say); whether the machine has the memory for it is checkMemoryFits' to say.
      const budget =
        options.kvCacheBytes === undefined
          ? { ...o, kvCacheBytes: Math.max(o.kvCacheBytes, minPages * perPage) }
          : o;
      kvPages =
        o.kvBlocks !== undefined
          ? o.kvBlocks * m.kvLayout.pagesPerBlock
          : kvBlocksForBudget(budget, { ...m, numLayers: m.kvLayout.pageLayers }, minPages);
      checkMemoryFits({
        weightBytes: m.residentWeightBytes,
        kvBytes: kvPages * perPage,
        minKvBytes: minPages * perPage,
        machineBytes,
      });
    } else {
      // On a GPU the KV pool takes what the weights left (unless a budget was configured);
      // an oversized one fails at allocation, with the device's own message. (Models with
      // layer groups, one page per block otherwise, do not load on CUDA yet.)
      const free = cudaDevices().find((d) => d.device === device)?.freeBytes ?? 0;
      const budget = options.kvCacheBytes ?? defaultDeviceKvBytes(free, o, m);
      kvPages = o.kvBlocks ?? kvBlocksForBudget({ ...o, kvCacheBytes: budget }, m, minPages);
    }
  } catch (e) {
    disposeModel(model);
    ownEncoder?.dispose();
    throw e;
  }
  // An empty or unknown tool_call_parser is not an error (MindIE falls back the same way): warned.
  const configured = configuredParserName(o.toolCallParsers, m.architecture);
  const toolParser = selectToolParser(
    configured.name,
    m.architecture,
    chatTemplate ?? tokenizer.chatTemplate,
    chatTemplate !== undefined,
  );
  for (const w of [configured.warning, toolParser.warning]) if (w) process.emitWarning(w);
  let ctx;
  let adapters: AdapterManager | undefined;
  let speculation: Awaited<ReturnType<typeof startSpeculation>> | undefined;
  let kvEvents: KvEventPublisher | undefined;
  const modelName = o.modelName ?? defaultServedModelName(modelPath);
  // The adapter manager asks the engine whether a step runs; the engine is made after it.
  const holder: { core?: EngineCore } = {};
  try {
    const lora = planLora(model, o.lora);
    // Layer-skip drafts past a sequence's blocks into a few pages of its own, after the pool's.
    const scratchPages = scratchPagesFor(o.speculative, m);
    ctx = createContext(model, {
      kvBlocks: kvPages + scratchPages,
      blockSize: o.cacheBlockSize,
      maxBatchTokens: o.maxPrefillTokens,
      maxSeqs: o.maxBatchSize,
      threads: o.threads ?? availableParallelism(),
      ...(lora ? { maxLoras: lora.maxLoras, maxLoraRank: lora.maxLoraRank } : {}),
    });
    if (lora && o.lora)
      adapters = await startAdapters(model, ctx, o.lora, lora, () => holder.core?.isStepping ?? false);
    if (o.speculative)
      speculation = await startSpeculation(
        o.speculative,
        { name: modelName, architecture: m.architecture },
        {
          ctx,
          model: m,
          device,
          blockSize: o.cacheBlockSize,
          maxSeqs: o.maxBatchSize,
          maxBatchTokens: o.maxPrefillTokens,
          threads: o.threads ?? availableParallelism(),
          poolBlocks: Math.floor(kvPages / m.kvLayout.pagesPerBlock),
          tokenizer,
          scratch: { first: kvPages, count: scratchPages },
        },
      );
    if (o.kvEvents) {
      // Loaded only when asked for: the ZeroMQ addon stays out of engines that publish nothing.
      const { KvEventPublisher } = await import('./kv-events.js');
      const topic = o.kvEvents.topic ?? defaultKvEventsTopic(modelName);
      kvEvents = await KvEventPublisher.start({ endpoint: o.kvEvents.endpoint, topic }, o.cacheBlockSize);
    }
  } catch (e) {
    if (ctx) disposeContext(ctx);
    disposeModel(model);
    ownEncoder?.dispose();
    throw e;
  }
  hooks.onContext?.(ctx);
  if (kvEvents) hooks.onKvEvents?.(kvEvents);
  const ctxInfo = contextInfo(ctx);
  hooks.onMemory?.({
    weightBytes: m.residentWeightBytes,
    kvBytes: ctxInfo.kvBytes,
    kvBlocks: Math.floor(kvPages / m.kvLayout.pagesPerBlock),
    blockSize: o.cacheBlockSize,
    rssBytes: process.memoryUsage().rss,
    machineBytes,
    device,
    deviceName: m.deviceName,
  });
  const core = new EngineCore({
    runner: new NativeRunner(ctx, m.vocabSize, m.kvLayout, kvPages, m.hiddenSize),
    tokenizer,
    options: o,
    chatTemplate,
    toolParser: toolParser.family,
    info: {
      modelName,
      modelPath,
      architecture: m.architecture,
      vocabSize: m.vocabSize,
      contextLength: m.contextLength,
      maxSeqLen: o.maxSeqLen,
      maxInputTokenLen: o.maxInputTokenLen,
      maxNewTokensCap: o.maxIterTimes,
      maxBatchSize: o.maxBatchSize,
      maxPrefillTokens: o.maxPrefillTokens,
      blockSize: o.cacheBlockSize,
      prefixCache: o.prefixCache,
      dtype: Object.entries(m.tensorTypes).sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'unknown',
      startedAt: Date.now(),
      device,
      deviceName: ctxInfo.deviceName,
      engineId: randomUUID(),
      modelFingerprint: modelFingerprint(m),
      images: vision !== undefined && imageEncoder !== undefined,
    },
    dispose: () => {
      void kvEvents?.close();
      disposeContext(ctx);
      disposeModel(model);
      ownEncoder?.dispose();
    },
    ...(adapters ? { adapters } : {}),
    ...(kvEvents ? { blockObserver: kvEvents } : {}),
    ...(speculation ? { speculation } : {}),
    ...(hooks.structuredTuning ? { structuredTuning: hooks.structuredTuning } : {}),
    ...(vision ? { vision } : {}),
    ...(imageEncoder ? { imageEncoder } : {}),
  });
  holder.core = core;
  return core;
}

/**
 * The engine `prism serve` and `prism engine` serve for a model path: the pooling engine for an
 * embedding or reranking model (engine/pooling/load.ts says which; a decoder's runs its inputs
 * on a generation engine loaded here), else the generation engine,
 * with what its gRPC service needs besides the Engine (split prefill/decode's KV service).
 */
export interface ServedEngine {
  readonly engine: Engine;
  readonly kvTransfer?: EngineCore['features']['disaggregation'];
}

export async function loadServedEngine(
  modelPath: string,
  options: EngineOptions,
  hooks: LoadEngineHooks = {},
): Promise<ServedEngine> {
  if (isPoolingModel(modelPath, options.pooling)) {
    if (options.mmproj !== undefined)
      throw invalidArgument(
        'mmproj',
        `${modelPath} is served for embeddings or scores, which take no images`,
      );
    const modelName = options.modelName ?? defaultServedModelName(modelPath);
    const core = (path: string, o: EngineOptions) => loadEngine(path, o, hooks);
    return { engine: await loadPoolingEngine(modelPath, { ...options, modelName }, core) };
  }
  const core = await loadEngine(modelPath, options, hooks);
  return { engine: core, kvTransfer: core.features.disaggregation };
}
