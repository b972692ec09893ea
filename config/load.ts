/**
 * Loads and validates a MindIE-style config.json: size check, JSON parse, environment
 * overrides, schema (ajv: all errors, defaults filled in), plugin_params, defaults derived from
 * the fields the user wrote (derived-defaults.ts), cross-field rules.
 * Every problem is reported at once, each naming its JSON path and the rule it breaks.
 */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { checkCrossFieldRules } from './cross-field-rules.js';
import { applyDerivedDefaults, writtenIn } from './derived-defaults.js';
import { parsePluginParams } from './plugin-params.js';
import {
  ADAPTER_NAME_PATTERN,
  configSchema,
  KV_EVENTS_ENDPOINT_PATTERN,
  MODEL_NAME_PATTERN,
} from './schema.js';
import type { PrismConfigFile, ResolvedConfig } from './types.js';

/** MindIE: the file's size must be in (0, 10 MB]. */
export const MAX_CONFIG_BYTES = 10 * 1024 * 1024;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly source: string,
    /** One line per problem: `JSON.path: rule`. */
    readonly issues: readonly string[],
  ) {
    super(`${source} is invalid:\n${issues.map((i) => `  - ${i}`).join('\n')}`);
  }
}

let validator: ValidateFunction | undefined;
function validate(): ValidateFunction {
  validator ??= new Ajv({ allErrors: true, useDefaults: true, verbose: true, strict: true }).compile(
    configSchema,
  );
  return validator;
}

/** `/BackendConfig/ModelDeployConfig/ModelConfig/0/modelName` → `BackendConfig.ModelDeployConfig.ModelConfig[0].modelName`. */
function jsonPath(pointer: string, child?: string): string {
  const parts =
    pointer === ''
      ? []
      : pointer
          .slice(1)
          .split('/')
          .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (child !== undefined) parts.push(child);
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out === '' ? p : `.${p}`;
  return out === '' ? '(root)' : out;
}

function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** Patterns as a reader would state them. */
const PATTERN_RULES: Record<string, string> = {
  [MODEL_NAME_PATTERN]:
    "must be 1-256 letters, digits, '-', '.' or '_', not starting or ending with '-', '.' or '_'",
  [ADAPTER_NAME_PATTERN]: "must be 1-256 letters, digits, '-' or '_', not starting or ending with '-' or '_'",
  '^/': 'must be an absolute path',
  [KV_EVENTS_ENDPOINT_PATTERN]:
    "must be '' (off), tcp://HOST:PORT (tcp://*:PORT binds), ipc://PATH or inproc://NAME",
};

function describe(e: ErrorObject): string {
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties':
      return `${jsonPath(e.instancePath, String(params.additionalProperty))}: unknown field (not in the config schema)`;
    case 'required':
      return `${jsonPath(e.instancePath, String(params.missingProperty))}: is required`;
    case 'enum':
      return `${jsonPath(e.instancePath)}: must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}, got ${shown(e.data)}`;
    case 'const':
      return `${jsonPath(e.instancePath)}: must be ${JSON.stringify(params.allowedValue)}, got ${shown(e.data)}`;
    case 'pattern':
      return `${jsonPath(e.instancePath)}: ${PATTERN_RULES[String(params.pattern)] ?? `must match pattern ${String(params.pattern)}`}, got ${shown(e.data)}`;
    case 'propertyNames':
      return `${jsonPath(e.instancePath, String(params.propertyName))}: invalid key name`;
    default:
      return `${jsonPath(e.instancePath)}: ${e.message ?? e.keyword}, got ${shown(e.data)}`;
  }
}

/** MindIE's environment overrides of the listen addresses. */
function applyEnvironment(json: Record<string, unknown>, env: NodeJS.ProcessEnv): void {
  const overrides: [string, string | undefined][] = [
    ['ipAddress', env.MIES_CONTAINER_IP],
    ['managementIpAddress', env.MIES_CONTAINER_MANAGEMENT_IP],
  ];
  for (const [field, value] of overrides) {
    if (value === undefined || value === '') continue;
    const server = json.ServerConfig;
    if (server === undefined) json.ServerConfig = { [field]: value };
    else if (typeof server === 'object' && server !== null && !Array.isArray(server))
      (server as Record<string, unknown>)[field] = value;
  }
}

export interface ValidateOptions {
  /** Environment for MIES_CONTAINER_IP / MIES_CONTAINER_MANAGEMENT_IP (default: process.env). */
  readonly env?: NodeJS.ProcessEnv;
}

/** Validates an already parsed config object (mutated: defaults are filled in). */
export function validateConfig(json: unknown, source: string, options: ValidateOptions = {}): ResolvedConfig {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ConfigError(source, ['(root): must be a JSON object']);
  }
  applyEnvironment(json as Record<string, unknown>, options.env ?? process.env);
  // What the user wrote, before the schema fills in defaults (derived defaults need it).
  const written = writtenIn(structuredClone(json));
  const check = validate();
  if (!check(json)) {
    throw new ConfigError(source, (check.errors ?? []).map(describe));
  }
  const raw = json as PrismConfigFile & {
    BackendConfig: { ModelDeployConfig: { truncation: boolean | number } };
  };
  // MindIE accepts booleans for truncation: true = cut from the right (-1), false = error (0).
  const t = raw.BackendConfig.ModelDeployConfig.truncation;
  if (typeof t === 'boolean') raw.BackendConfig.ModelDeployConfig.truncation = t ? -1 : 0;
  const file = raw as PrismConfigFile;

  const issues: string[] = [];
  const warnings: string[] = [];
  const models = file.BackendConfig.ModelDeployConfig.ModelConfig;
  const parsed = models.map((m, i) =>
    parsePluginParams(m.plugin_params, `BackendConfig.ModelDeployConfig.ModelConfig[${i}].plugin_params`),
  );
  for (const p of parsed) {
    issues.push(...p.errors);
    warnings.push(...p.warnings);
  }
  applyDerivedDefaults(file, written);
  const rules = checkCrossFieldRules(file);
  issues.push(...rules.errors);
  warnings.push(...rules.warnings);
  if (issues.length > 0) throw new ConfigError(source, issues);
  return { source, file, plugins: parsed[0].plugins, warnings };
}

/**
 * Reads and validates `path`. Errors: ConfigError (with every problem listed) for a file
 * that is missing, empty, over 10 MB, not JSON, or breaks a rule.
 */
export function loadConfigFile(path: string, options: ValidateOptions = {}): ResolvedConfig {
  const source = resolve(path);
  let size: number;
  try {
    const st = statSync(source);
    if (!st.isFile()) throw new ConfigError(source, ['(file): is not a regular file']);
    size = st.size;
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    throw new ConfigError(source, [`(file): cannot read: ${(e as Error).message}`]);
  }
  if (size === 0 || size > MAX_CONFIG_BYTES) {
    throw new ConfigError(source, [
      `(file): size must be in (0, 10 MB] (${MAX_CONFIG_BYTES} bytes), got ${size} bytes`,
    ]);
  }
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(source, 'utf8').replace(/^\uFEFF/, ''));
  } catch (e) {
    throw new ConfigError(source, [`(file): not valid JSON: ${(e as Error).message}`]);
  }
  return validateConfig(json, source, options);
}

/**
 * The configuration Prism runs on without a config file: every schema default, except that
 * the prefix cache is on and the HTTP listeners are plain HTTP (there are no certificates).
 */
export function defaultConfig(options: ValidateOptions = {}): ResolvedConfig {
  const resolved = validateConfig({ ServerConfig: { httpsEnabled: false } }, '(defaults)', options);
  return { ...resolved, source: undefined, plugins: { ...resolved.plugins, prefixCache: true } };
}

/** A config file when given, else the defaults. */
export function loadConfig(path: string | undefined, options: ValidateOptions = {}): ResolvedConfig {
  return path === undefined ? defaultConfig(options) : loadConfigFile(path, options);
}
