/**
 * The config rules JSON Schema cannot express: bounds that depend on another field, and
 * features the file can ask for that Prism does not have (rejected clearly, not ignored).
 * Runs after schema validation and derived defaults (derived-defaults.ts), so every field is
 * present and in its own range, and a rule only fires on a value the user wrote.
 */
import { checkAdapterPathText, checkBaseModelName } from '../engine/adapters/rules.js';
import type { ModelDeployConfig, PrismConfigFile } from './types.js';

export interface RuleResult {
  readonly errors: string[];
  readonly warnings: string[];
}

const SCHED = 'BackendConfig.ScheduleConfig';
const DEPLOY = 'BackendConfig.ModelDeployConfig';

const ALL_ZERO = new Set(['0.0.0.0', '::', '[::]', '0:0:0:0:0:0:0:0']);

export function checkCrossFieldRules(c: PrismConfigFile): RuleResult {
  const errors: string[] = [];
  const warnings: string[] = [];
  const s = c.BackendConfig.ScheduleConfig;
  const d = c.BackendConfig.ModelDeployConfig;
  const server = c.ServerConfig;

  // --- lengths -----------------------------------------------------------------------
  if (d.maxSeqLen < 2) {
    errors.push(
      `${DEPLOY}.maxSeqLen: must be >= 2 so a prompt of at least one token and one new token fit, got ${d.maxSeqLen}`,
    );
  }
  const effectiveInput = Math.min(d.maxInputTokenLen, d.maxSeqLen - 1);
  if (s.maxPrefillTokens < effectiveInput) {
    errors.push(
      `${SCHED}.maxPrefillTokens: must be >= ${DEPLOY}.maxInputTokenLen (effective ${effectiveInput} = ` +
        `min(maxInputTokenLen ${d.maxInputTokenLen}, maxSeqLen - 1)), got ${s.maxPrefillTokens}`,
    );
  }
  if (s.maxIterTimes > d.maxSeqLen) {
    errors.push(
      `${SCHED}.maxIterTimes: must be <= ${DEPLOY}.maxSeqLen (${d.maxSeqLen}), got ${s.maxIterTimes}`,
    );
  }

  // --- batch sizes ---------------------------------------------------------------------
  if (s.maxPrefillBatchSize > s.maxBatchSize) {
    errors.push(
      `${SCHED}.maxPrefillBatchSize: must be <= ${SCHED}.maxBatchSize (${s.maxBatchSize}), got ${s.maxPrefillBatchSize}`,
    );
  }
  if (s.maxN > s.maxBatchSize) {
    errors.push(`${SCHED}.maxN: must be <= ${SCHED}.maxBatchSize (${s.maxBatchSize}), got ${s.maxN}`);
  }
  if (s.maxPreemptCount > s.maxBatchSize) {
    errors.push(
      `${SCHED}.maxPreemptCount: must be <= ${SCHED}.maxBatchSize (${s.maxBatchSize}), got ${s.maxPreemptCount}`,
    );
  }
  if (s.maxPreemptCount > 0) {
    d.ModelConfig.forEach((m, i) => {
      if (m.cpuMemSize <= 0) {
        errors.push(
          `${SCHED}.maxPreemptCount: > 0 requires ${DEPLOY}.ModelConfig[${i}].cpuMemSize > 0 (swap space), got cpuMemSize ${m.cpuMemSize}`,
        );
      }
    });
  }
  if (s.cacheBlockSize % 16 !== 0) {
    warnings.push(
      `${SCHED}.cacheBlockSize: ${s.cacheBlockSize} is not a multiple of 16 (MindIE recommends multiples of 16)`,
    );
  }

  // --- listeners -----------------------------------------------------------------------
  for (const field of ['ipAddress', 'managementIpAddress'] as const) {
    if (ALL_ZERO.has(server[field]) && !server.allowAllZeroIpListening) {
      errors.push(
        `ServerConfig.${field}: binding all interfaces (${server[field]}) requires ServerConfig.allowAllZeroIpListening = true`,
      );
    }
  }

  // --- one model, no adapters (yet) ----------------------------------------------------
  if (d.ModelConfig.length !== 1) {
    errors.push(
      `${DEPLOY}.ModelConfig: a Prism engine serves exactly one model, got ${d.ModelConfig.length} entries`,
    );
  }
  d.ModelConfig.forEach((m, i) => {
    if (m.modelInstanceType === 'StandardMock') {
      errors.push(
        `${DEPLOY}.ModelConfig[${i}].modelInstanceType: 'StandardMock' (a mock model) is not supported by Prism; use 'Standard'`,
      );
    }
  });
  errors.push(...checkLoraRules(d));

  // --- deployment modes Prism does not have --------------------------------------------
  if (server.inferMode === 'dmi') {
    errors.push(
      `ServerConfig.inferMode: 'dmi' (split prefill/decode) is not supported by Prism; use 'standard'`,
    );
  }
  if (c.BackendConfig.modelInstanceNumber > 1) {
    errors.push(
      `BackendConfig.modelInstanceNumber: one Prism engine runs one model instance; run several engines ` +
        `behind \`prism gateway\` instead, got ${c.BackendConfig.modelInstanceNumber}`,
    );
  }
  if (c.BackendConfig.multiNodesInferEnabled) {
    errors.push(
      `BackendConfig.multiNodesInferEnabled: multi-node inference is not supported by Prism; set it to false`,
    );
  }
  if (s.enablePrefixCache !== undefined) {
    warnings.push(
      `${SCHED}.enablePrefixCache is deprecated and ignored: enable the prefix cache with ` +
        `ModelConfig.plugin_params "{\\"plugin_type\\":\\"prefix_cache\\"}"`,
    );
  }
  return { errors, warnings };
}

/**
 * LoRA: static adapters (LoraModules) and the dynamic-loading limits. Dynamic load/unload
 * is on when maxLoras or maxLoraRank is set; then both must be > 0. The on-disk checks of
 * each path (real path, owner, permissions) run when the engine loads the adapter.
 */
function checkLoraRules(d: ModelDeployConfig): string[] {
  const errors: string[] = [];
  const modelName = d.ModelConfig[0]?.modelName ?? '';
  if ((d.maxLoras > 0 || d.maxLoraRank > 0) && (d.maxLoras === 0 || d.maxLoraRank === 0)) {
    const zero = d.maxLoras === 0 ? 'maxLoras' : 'maxLoraRank';
    errors.push(
      `${DEPLOY}.${zero}: must be > 0 when dynamic adapter loading is enabled ` +
        `(maxLoras ${d.maxLoras}, maxLoraRank ${d.maxLoraRank}; set both > 0, or both 0 to turn it off)`,
    );
  }
  if (d.maxCpuLoras > 0 && d.maxCpuLoras < d.maxLoras) {
    errors.push(
      `${DEPLOY}.maxCpuLoras: ${d.maxCpuLoras} must be >= maxLoras (${d.maxLoras}): adapters loaded at once include those in the slots`,
    );
  }
  if (d.maxCpuLoras > 0 && d.maxLoras === 0) {
    errors.push(`${DEPLOY}.maxCpuLoras: needs maxLoras > 0 (the native slots the loaded adapters share)`);
  }
  const loaded = Math.max(d.maxLoras, d.maxCpuLoras);
  if (d.maxLoras > 0 && d.LoraModules.length > loaded) {
    errors.push(
      `${DEPLOY}.LoraModules: ${d.LoraModules.length} adapters exceed ${d.maxCpuLoras > 0 ? 'maxCpuLoras' : 'maxLoras'} (${loaded}), the number loaded at once`,
    );
  }
  const seen = new Set<string>();
  d.LoraModules.forEach((m, i) => {
    const at = `${DEPLOY}.LoraModules[${i}]`;
    if (seen.has(m.name)) errors.push(`${at}.name: '${m.name}' is given twice`);
    seen.add(m.name);
    if (m.name === modelName)
      errors.push(`${at}.name: must differ from the base model's modelName '${modelName}'`);
    const base = checkBaseModelName(m.baseModelName, modelName);
    if (base) errors.push(`${at}.baseModelName: ${base}`);
    const path = checkAdapterPathText(m.path);
    if (path) errors.push(`${at}.path: ${path}`);
  });
  return errors;
}
