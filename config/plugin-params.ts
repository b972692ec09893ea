/**
 * `ModelConfig.plugin_params`: a JSON object *encoded as a string* (MindIE's format), e.g.
 * "{\"plugin_type\":\"mtp,prefix_cache\",\"num_speculative_tokens\":1}". `plugin_type` is a
 * comma-joined list of plugin names; unknown names are rejected, never silently dropped.
 *
 * Speculative decoding (engine/speculative/): `memory_decoding` is MindIE's draft-free
 * lookup decoding, served by the n-gram proposer (`decoding_length` or
 * `num_speculative_tokens` draft tokens; `dynamic_algo` false turns the adaptive k off);
 * `mtp` (multi-token prediction) is passed on and refused when the model is loaded unless
 * it has MTP heads. One of the two at most.
 */
import { MAX_SPECULATIVE_TOKENS } from '../engine/speculative/options.js';
import type { PluginParams } from './types.js';

const KNOWN_PLUGINS = ['prefix_cache', 'mtp', 'memory_decoding'] as const;
const KNOWN: ReadonlySet<string> = new Set(KNOWN_PLUGINS);
const KNOWN_KEYS: ReadonlySet<string> = new Set([
  'plugin_type',
  'num_speculative_tokens',
  'decoding_length',
  'dynamic_algo',
]);
const SPECULATIVE = ['mtp', 'memory_decoding'];

export interface ParsedPlugins {
  readonly plugins: PluginParams;
  readonly errors: string[];
  readonly warnings: string[];
}

const EXAMPLE = `e.g. "{\\"plugin_type\\":\\"prefix_cache\\"}"`;

/** `at` is the JSON path of the field, for messages. Absent field = no plugins. */
export function parsePluginParams(raw: string | undefined, at: string): ParsedPlugins {
  const errors: string[] = [];
  const warnings: string[] = [];
  const none: PluginParams = { prefixCache: false, mtp: false };
  if (raw === undefined) return { plugins: none, errors, warnings };

  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (e) {
    errors.push(`${at}: must be a JSON object encoded as a string (${EXAMPLE}); ${(e as Error).message}`);
    return { plugins: none, errors, warnings };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    errors.push(
      `${at}: must encode a JSON object (${EXAMPLE}), got ${Array.isArray(value) ? 'an array' : JSON.stringify(value)}`,
    );
    return { plugins: none, errors, warnings };
  }
  const obj = value as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (!KNOWN_KEYS.has(key))
      errors.push(`${at}.${key}: unknown key (allowed: ${[...KNOWN_KEYS].join(', ')})`);
  }

  const names = new Set<string>();
  const type = obj.plugin_type;
  if (type === undefined) {
    if (Object.keys(obj).length > 0) errors.push(`${at}.plugin_type: is required`);
  } else if (typeof type !== 'string') {
    errors.push(
      `${at}.plugin_type: must be a string of comma-joined plugin names, got ${JSON.stringify(type)}`,
    );
  } else {
    for (const part of type.split(',')) {
      const name = part.trim();
      if (name === '') {
        errors.push(`${at}.plugin_type: empty plugin name in '${type}'`);
      } else if (!KNOWN.has(name)) {
        errors.push(`${at}.plugin_type: unknown plugin '${name}' (supported: ${KNOWN_PLUGINS.join(', ')})`);
      } else if (names.has(name)) {
        errors.push(`${at}.plugin_type: plugin '${name}' is listed twice`);
      } else {
        names.add(name);
      }
    }
  }

  const speculative = SPECULATIVE.filter((n) => names.has(n));
  if (speculative.length > 1)
    errors.push(
      `${at}.plugin_type: plugins '${speculative.join("' and '")}' cannot be combined (one proposer)`,
    );
  const draftLength = (key: string, only: readonly string[]): number | undefined => {
    const v = obj[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_SPECULATIVE_TOKENS) {
      errors.push(
        `${at}.${key}: must be an integer in [1, ${MAX_SPECULATIVE_TOKENS}], got ${JSON.stringify(v)}`,
      );
    } else if (!only.some((n) => names.has(n))) {
      errors.push(
        `${at}.${key}: only applies with plugin ${only.map((n) => `'${n}'`).join(' or ')} in plugin_type`,
      );
    } else {
      return v;
    }
    return undefined;
  };
  const nst = draftLength('num_speculative_tokens', SPECULATIVE);
  const decodingLength = draftLength('decoding_length', ['memory_decoding']);
  if (nst !== undefined && decodingLength !== undefined && nst !== decodingLength)
    errors.push(`${at}.decoding_length: differs from num_speculative_tokens (${nst}); give one of them`);
  const numSpeculativeTokens = nst ?? decodingLength;
  let dynamicAlgo: boolean | undefined;
  if (obj.dynamic_algo !== undefined) {
    if (typeof obj.dynamic_algo !== 'boolean')
      errors.push(`${at}.dynamic_algo: must be a boolean, got ${JSON.stringify(obj.dynamic_algo)}`);
    else if (!names.has('memory_decoding'))
      errors.push(`${at}.dynamic_algo: only applies with plugin 'memory_decoding' in plugin_type`);
    else dynamicAlgo = obj.dynamic_algo;
  }
  return {
    plugins: {
      prefixCache: names.has('prefix_cache'),
      mtp: names.has('mtp'),
      ...(names.has('memory_decoding') ? { memoryDecoding: true } : {}),
      ...(numSpeculativeTokens !== undefined ? { numSpeculativeTokens } : {}),
      ...(dynamicAlgo !== undefined ? { dynamicAlgo } : {}),
    },
    errors,
    warnings,
  };
}
