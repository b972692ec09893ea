/**
 * `ModelConfig.plugin_params`: a JSON object *encoded as a string* (MindIE's format), e.g.
 * "{\"plugin_type\":\"mtp,prefix_cache\",\"num_speculative_tokens\":1}". `plugin_type` is a
 * comma-joined list of plugin names; unknown names are rejected, never silently dropped.
 */
import type { PluginParams } from './types.js';

export const KNOWN_PLUGINS = ['prefix_cache', 'mtp'] as const;
const KNOWN: ReadonlySet<string> = new Set(KNOWN_PLUGINS);
const KNOWN_KEYS: ReadonlySet<string> = new Set(['plugin_type', 'num_speculative_tokens']);
/** MindIE gives no bound; a draft longer than this has no benefit on any model it serves. */
export const MAX_SPECULATIVE_TOKENS = 16;

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

  let numSpeculativeTokens: number | undefined;
  const nst = obj.num_speculative_tokens;
  if (nst !== undefined) {
    if (typeof nst !== 'number' || !Number.isInteger(nst) || nst < 1 || nst > MAX_SPECULATIVE_TOKENS) {
      errors.push(
        `${at}.num_speculative_tokens: must be an integer in [1, ${MAX_SPECULATIVE_TOKENS}], got ${JSON.stringify(nst)}`,
      );
    } else if (!names.has('mtp')) {
      errors.push(`${at}.num_speculative_tokens: only applies with plugin 'mtp' in plugin_type`);
    } else {
      numSpeculativeTokens = nst;
    }
  }
  if (names.has('mtp')) {
    // MTP only changes speed (drafted tokens are verified), never the output; Prism's
    // models have no MTP heads, so the plugin is accepted for compatibility and has no effect.
    warnings.push(
      `${at}: plugin 'mtp' is accepted for compatibility but has no effect (Prism does not implement multi-token prediction)`,
    );
  }
  return {
    plugins: {
      prefixCache: names.has('prefix_cache'),
      mtp: names.has('mtp'),
      ...(numSpeculativeTokens !== undefined ? { numSpeculativeTokens } : {}),
    },
    errors,
    warnings,
  };
}
