/**
 * Which engine a model gets, and the pooling one's assembly. A model is a pooling model when
 * it is an encoder (BERT family), when its files state a pooling (sentence-transformers'
 * modules.json, a GGUF `pooling_type`), or when the options ask for one (`task`: a
 * Qwen3-Reranker checkpoint is a plain causal LM whose files say nothing of reranking).
 */
import { availableParallelism } from 'node:os';
import { isEncoderModel, readPoolingSpec, type PoolingSpecInfo } from '../../native/native.js';
import type { EngineCore } from '../engine-core.js';
import { EngineError } from '../errors.js';
import { resolveEngineOptions, type EngineOptions } from '../options.js';
import { loadTokenizer } from '../tokenizer/index.js';
import type { PoolingBackend } from './backend.js';
import { decoderPooling } from './decoder-pooling.js';
import { loadEncoderBackend } from './encoder-backend.js';
import { PoolingEngine } from './pooling-engine.js';
import { RerankPrompt } from './rerank-prompt.js';
import type { PoolingOptions } from './options.js';
import { MAX_POOLING_INPUTS } from './validate.js';

/** Whether `path` is served by the pooling engine (see the header). */
export function isPoolingModel(path: string, options: PoolingOptions = {}): boolean {
  const task = options.task ?? 'auto';
  if (task === 'generate') {
    if (isEncoderModel(path))
      throw new EngineError(
        'INVALID_ARGUMENT',
        `task: ${path} is an encoder; it cannot generate text`,
        'task',
      );
    return false;
  }
  if (task !== 'auto' || isEncoderModel(path)) return true;
  const spec = readPoolingSpec(path);
  return spec.modes.length > 0 || spec.rank;
}

/** Loads the generation engine a decoder pools on (load-engine.ts's loadEngine). */
export type LoadCore = (path: string, options: EngineOptions) => Promise<EngineCore>;

/**
 * The pooling engine of `path`: an encoder's own passes, or a decoder's requests on the
 * generation engine `loadCore` loads (engine/load-engine.ts loadServedEngine passes it).
 */
export async function loadPoolingEngine(
  path: string,
  options: EngineOptions = {},
  loadCore?: LoadCore,
): Promise<PoolingEngine> {
  const o = resolveEngineOptions(options);
  const p = options.pooling ?? {};
  if ((o.device ?? 'cpu') !== 'cpu')
    throw new EngineError(
      'INVALID_ARGUMENT',
      `device: pooling models run on the CPU only (asked for ${o.device})`,
      'device',
    );
  if (o.speculative)
    throw new EngineError(
      'INVALID_ARGUMENT',
      `speculative: ${path} is a pooling model; it decodes no tokens, so there is nothing to speculate (leave speculative decoding off)`,
      'speculative',
    );
  // Every input of a request is one request of the engine: room for a whole request's.
  const maxQueued = Math.max(o.maxQueueSize, MAX_POOLING_INPUTS);
  const modelName = o.modelName ?? path;
  const common = {
    maxPassTokens: o.maxPrefillTokens,
    maxPassInputs: o.maxBatchSize,
    maxQueued,
    threads: o.threads ?? availableParallelism(),
    maxInputTokens: o.maxInputTokenLen,
    ...(p.matryoshkaDimensions !== undefined ? { matryoshkaDimensions: p.matryoshkaDimensions } : {}),
  };
  const tokenizer = await loadTokenizer(path);
  const encoder = isEncoderModel(path);
  const spec: PoolingSpecInfo = readPoolingSpec(path);
  let rerank: RerankPrompt | undefined;
  let backend: PoolingBackend;
  if (encoder) {
    backend = await loadEncoderBackend(path, tokenizer, { ...common, engine: options, modelName });
  } else {
    if (p.task === 'score' || spec.rank) rerank = await RerankPrompt.create(tokenizer, p.rerankInstruction);
    const pooling: PoolingSpecInfo =
      spec.modes.length > 0 || rerank ? spec : { ...spec, modes: ['lasttoken'], normalize: true };
    if (!loadCore)
      throw new EngineError(
        'INTERNAL',
        `${path}: a decoder pools on the generation engine; none was given to load`,
      );
    backend = await decoderPooling(await loadCore(path, { ...options, maxQueueSize: maxQueued }), path, {
      ...common,
      pooling,
      ...(rerank ? { rerankTokens: rerank.classTokens as [number, number] } : {}),
    });
  }
  return new PoolingEngine({
    backend,
    tokenizer,
    // The caller (load-engine.ts loadServedEngine) names it by the path when the options do not.
    modelName,
    modelPath: path,
    lowerCase: spec.doLowerCase,
    ...(rerank ? { rerank } : {}),
    byPriority: o.schedulingPolicy === 'priority',
    device: 'cpu',
    deviceName: 'CPU',
  });
}
