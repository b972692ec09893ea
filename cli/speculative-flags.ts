/**
 * `--speculative ngram|draft|layer-skip`, `--num-speculative-tokens N`, `--draft-model PATH`,
 * `--draft-layers N`, shared by `prism serve` and `prism engine`: speculative decoding (engine/speculative/) from
 * the command line. The flags replace config.json's plugin_params speculative plugin
 * (memory_decoding / mtp) when given.
 */
import type { SpeculativeOptions } from '../engine/speculative/options.js';
import { MAX_SPECULATIVE_TOKENS } from '../engine/speculative/options.js';

export const speculativeFlagOptions = {
  speculative: { type: 'string' },
  'num-speculative-tokens': { type: 'string' },
  'draft-model': { type: 'string' },
  'draft-layers': { type: 'string' },
} as const;

export const speculativeHelp = `  --speculative M       speculative decoding (output unchanged, fewer steps): ngram (draft-free
                        lookup of the prompt and output so far; plugin_params memory_decoding),
                        draft (a smaller model with the same vocabulary, --draft-model), or
                        layer-skip (the model's own first layers and its head propose);
                        default off
  --num-speculative-tokens N
                        most draft tokens per sequence and step, 1..${MAX_SPECULATIVE_TOKENS} (default 15; the
                        adaptive k sends fewer per sequence where its acceptance or the
                        batch's step cost says they do not pay; 5 when dynamic_algo is off)
  --draft-model PATH    the draft model's GGUF file or directory (--speculative draft)
  --draft-layers N      layers the layer-skip draft runs before the head, 1..the model's
                        layers (default: three quarters of them)`;

export type SpeculativeFlags = {
  speculative?: string;
  'num-speculative-tokens'?: string;
  'draft-model'?: string;
  'draft-layers'?: string;
};

/** The flags over the config file's setting; a usage message (thrown as `error`) names the flag. */
export function speculativeFromFlags(
  values: SpeculativeFlags,
  fromConfig: SpeculativeOptions | undefined,
  error: (message: string) => Error,
): SpeculativeOptions | undefined {
  const method = values.speculative;
  const k = values['num-speculative-tokens'];
  const draft = values['draft-model'];
  const layers = values['draft-layers'];
  if (method !== undefined && method !== 'ngram' && method !== 'draft' && method !== 'layer-skip')
    throw error(`--speculative: must be ngram, draft or layer-skip, got '${method}'`);
  if (k !== undefined && (!/^\d+$/.test(k) || Number(k) < 1 || Number(k) > MAX_SPECULATIVE_TOKENS))
    throw error(`--num-speculative-tokens: must be an integer in [1, ${MAX_SPECULATIVE_TOKENS}], got '${k}'`);
  if (draft !== undefined && method !== 'draft') throw error('--draft-model: needs --speculative draft');
  if (draft === '') throw error('--draft-model: must not be empty');
  if (method === 'draft' && draft === undefined) throw error('--speculative draft: needs --draft-model PATH');
  if (layers !== undefined && method !== 'layer-skip')
    throw error('--draft-layers: needs --speculative layer-skip');
  if (layers !== undefined && (!/^\d+$/.test(layers) || Number(layers) < 1))
    throw error(`--draft-layers: must be a positive integer, got '${layers}'`);
  if (method === undefined) {
    if (k === undefined) return fromConfig;
    if (!fromConfig)
      throw error('--num-speculative-tokens: needs --speculative (or a speculative plugin_params)');
    return { ...fromConfig, numSpeculativeTokens: Number(k), field: '--num-speculative-tokens' };
  }
  return {
    method,
    ...(k !== undefined ? { numSpeculativeTokens: Number(k) } : {}),
    ...(draft !== undefined ? { draftModel: draft } : {}),
    ...(layers !== undefined ? { draftLayers: Number(layers) } : {}),
    field: '--speculative',
  };
}
