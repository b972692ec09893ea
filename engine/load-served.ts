/**
 * The engine `prism serve` and `prism engine` serve for a model path: the pooling engine for
 * an embedding or reranking model (engine/pooling/load.ts says which), else the generation
 * engine, with what its service needs besides the Engine (split prefill/decode's KV service).
 */
import type { KvTransferService } from './service/server.js';
import { loadEngine, type LoadEngineHooks } from './load-engine.js';
import type { EngineOptions } from './options.js';
import { isPoolingModel, loadPoolingEngine } from './pooling/load.js';
import type { Engine } from './types.js';

export interface ServedEngine {
  readonly engine: Engine;
  readonly kvTransfer?: KvTransferService;
}

export async function loadServedEngine(
  modelPath: string,
  options: EngineOptions,
  hooks: LoadEngineHooks = {},
): Promise<ServedEngine> {
  if (isPoolingModel(modelPath, options.pooling))
    return { engine: await loadPoolingEngine(modelPath, options) };
  const core = await loadEngine(modelPath, options, hooks);
  return { engine: core, kvTransfer: core.disaggregation };
}
