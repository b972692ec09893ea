/**
 * The resolved config.json mapped onto the engine core's one options record
 * (engine/options.ts). The engine validates the values again; this only translates names.
 */
import { dirname, isAbsolute, resolve } from 'node:path';
import type { EngineOptions } from '../engine/options.js';
import { ConfigError } from './load.js';
import type { ResolvedConfig } from './types.js';

const GIB = 1024 * 1024 * 1024;
const MODEL = 'BackendConfig.ModelDeployConfig.ModelConfig[0]';

/** Paths in config.json are relative to the file's own folder. */
function fromConfigDir(config: ResolvedConfig, path: string): string {
  if (isAbsolute(path) || config.source === undefined) return resolve(path);
  return resolve(dirname(config.source), path);
}

/**
 * The chat template file of `ModelConfig[0].models.<model_type>.chat_template`: the entry for
 * `modelType` when given and present, else the only entry that sets one.
 */
export function chatTemplatePath(config: ResolvedConfig, modelType?: string): string | undefined {
  const models = config.file.BackendConfig.ModelDeployConfig.ModelConfig[0].models ?? {};
  if (modelType !== undefined && models[modelType]?.chat_template) {
    return fromConfigDir(config, models[modelType].chat_template);
  }
  const set = Object.entries(models).filter(([, m]) => m.chat_template !== '');
  if (set.length === 0) return undefined;
  if (set.length > 1) {
    throw new ConfigError(config.source ?? '(defaults)', [
      `${MODEL}.models: chat_template is set for several model types (${set.map(([k]) => k).join(', ')}) ` +
        `and none matches this model's type${modelType ? ` '${modelType}'` : ''}`,
    ]);
  }
  return fromConfigDir(config, set[0][1].chat_template);
}

/**
 * `ModelConfig[0].models.<model_type>.tool_call_options.tool_call_parser`, every entry that
 * sets one: the engine picks the entry of its model's type once the model is loaded
 * (engine/tools/registry.ts), since the type is not known before.
 */
export function toolCallParsers(config: ResolvedConfig): Record<string, string> {
  const models = config.file.BackendConfig.ModelDeployConfig.ModelConfig[0].models ?? {};
  return Object.fromEntries(
    Object.entries(models)
      .map(([type, m]) => [type, m.tool_call_options?.tool_call_parser ?? ''] as const)
      .filter(([, name]) => name !== ''),
  );
}

/** The model to serve from `ModelConfig[0].modelWeightPath`, when the file names one. */
export function modelPathFromConfig(config: ResolvedConfig): string | undefined {
  const path = config.file.BackendConfig.ModelDeployConfig.ModelConfig[0].modelWeightPath;
  return path === undefined ? undefined : fromConfigDir(config, path);
}

export function engineOptionsFromConfig(config: ResolvedConfig, modelType?: string): EngineOptions {
  const {
    ModelDeployConfig: deploy,
    ScheduleConfig: sched,
    KvEventsConfig: kv,
    npuDeviceIds,
  } = config.file.BackendConfig;
  const model = deploy.ModelConfig[0];
  const template = chatTemplatePath(config, modelType);
  const parsers = toolCallParsers(config);
  return {
    maxBatchSize: sched.maxBatchSize,
    maxPrefillTokens: sched.maxPrefillTokens,
    maxPrefillBatchSize: sched.maxPrefillBatchSize,
    cacheBlockSize: sched.cacheBlockSize,
    // MindIE's limits when a config file sets them (its defaults when it leaves them out);
    // without a file, the model's own context (engine/options.ts).
    ...(config.source !== undefined
      ? {
          maxSeqLen: deploy.maxSeqLen,
          maxInputTokenLen: deploy.maxInputTokenLen,
          maxIterTimes: sched.maxIterTimes,
        }
      : {}),
    truncation: deploy.truncation,
    maxN: sched.maxN,
    // MindIE: maxLinkNum requests run, twice that many wait; the rest are refused.
    maxQueueSize: 2 * config.file.ServerConfig.maxLinkNum,
    prefixCache: config.plugins.prefixCache,
    ...speculativeFromPlugins(config.plugins),
    // The "NPU memory" budget is the KV cache's (on a GPU too); -1 (automatic) leaves the
    // engine default. backendType 'cuda' runs on the first listed device (one GPU per engine).
    ...(model.npuMemSize > 0 ? { kvCacheBytes: model.npuMemSize * GIB } : {}),
    ...(model.backendType === 'cuda' ? { device: `cuda:${npuDeviceIds[0]?.[0] ?? 0}` } : {}),
    ...(template !== undefined ? { chatTemplatePath: template } : {}),
    ...(Object.keys(parsers).length > 0 ? { toolCallParsers: parsers } : {}),
    // Without a file the served name is the model's own; with one it is modelName, as in MindIE.
    ...(config.source !== undefined ? { modelName: model.modelName } : {}),
    ...(kv.endpoint !== ''
      ? { kvEvents: { endpoint: kv.endpoint, ...(kv.topic !== '' ? { topic: kv.topic } : {}) } }
      : {}),
    ...(deploy.LoraModules.length > 0 || deploy.maxLoras > 0
      ? {
          lora: {
            maxLoras: deploy.maxLoras,
            ...(deploy.maxCpuLoras > 0 ? { maxCpuLoras: deploy.maxCpuLoras } : {}),
            maxLoraRank: deploy.maxLoraRank,
            modules: deploy.LoraModules.map((m) => ({ name: m.name, path: m.path })),
          },
        }
      : {}),
  };
}

/** plugin_params' speculative plugins as engine options; the field is named in the engine's errors. */
function speculativeFromPlugins(p: ResolvedConfig['plugins']): Pick<EngineOptions, 'speculative'> {
  if (!p.mtp && !p.memoryDecoding) return {};
  return {
    speculative: {
      method: p.mtp ? 'mtp' : 'ngram',
      ...(p.numSpeculativeTokens !== undefined ? { numSpeculativeTokens: p.numSpeculativeTokens } : {}),
      ...(p.dynamicAlgo !== undefined ? { adaptive: p.dynamicAlgo } : {}),
      field: `${MODEL}.plugin_params.plugin_type`,
    },
  };
}
