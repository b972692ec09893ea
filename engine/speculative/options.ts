/**
 * Speculative decoding's settings (`EngineOptions.speculative`), from `prism serve
 * --speculative ngram|draft|layer-skip` or config.json's `plugin_params` (config/plugin-params.ts),
 * checked once with errors that name the field.
 */
import { EngineError } from '../errors.js';
import { NGRAM_DEFAULTS } from './ngram.js';
import type { SpeculativeMethod } from './proposer.js';

export interface SpeculativeOptions {
  /**
   * The proposer. 'mtp' (MindIE's multi-token prediction) needs a model with MTP heads: the
   * engine refuses it, naming `field`, for a model without them.
   */
  readonly method: SpeculativeMethod | 'mtp';
  /**
   * Most draft tokens per sequence and step (num_speculative_tokens). Default 15 with the
   * adaptive k (it sends fewer wherever they do not pay), 5 without it.
   */
  readonly numSpeculativeTokens?: number;
  /** Per-sequence adaptive k (MindIE dynamic_algo; default on); off sends every proposal in full. */
  readonly adaptive?: boolean;
  /** 'draft': the draft model's file (same vocabulary as the served model). */
  readonly draftModel?: string;
  /** 'layer-skip': how many of the model's first layers propose (default: three quarters of them). */
  readonly draftLayers?: number;
  /** 'ngram': the longest and shortest suffix looked up (vLLM prompt_lookup_max / _min). */
  readonly ngramMax?: number;
  readonly ngramMin?: number;
  /** Where the setting came from, for errors (e.g. a config field path); default 'speculative'. */
  readonly field?: string;
}

export interface ResolvedSpeculativeOptions {
  readonly method: SpeculativeMethod | 'mtp';
  readonly numSpeculativeTokens: number;
  readonly adaptive: boolean;
  readonly draftModel: string | undefined;
  readonly draftLayers: number | undefined;
  readonly ngramMax: number;
  readonly ngramMin: number;
  readonly field: string;
}

/** MindIE gives no bound; past 16 no proposer here is accepted often enough to pay. */
export const MAX_SPECULATIVE_TOKENS = 16;
/**
 * The cap when none is given, with the adaptive k: it only bounds what the cost curve may
 * choose per sequence, so it sits where a long accepted run still pays. Grounded rewriting
 * on the default model, one sequence, was fastest at a cap of 10-12 with the earlier
 * kernels (5 left most of each accepted run unproposed), and at 15 when steps of 16+
 * tokens took an AMX-BF16 matmul (since removed): there a verify step of 1 + 15 tokens cost
 * 4.9 one-token steps and one of 1 + 10 5.2 (docs/benchmarks.md, speculative decoding,
 * session 6; rewrite 2.11x at 15, 1.56x at 10).
 */
export const DEFAULT_SPECULATIVE_TOKENS = 15;
/** The cap when none is given and the adaptive k is off: every proposal is verified in full, so a short one. */
export const DEFAULT_FIXED_SPECULATIVE_TOKENS = 5;
const METHODS: readonly string[] = ['ngram', 'draft', 'layer-skip', 'mtp'];

export function resolveSpeculative(
  s: SpeculativeOptions | undefined,
): ResolvedSpeculativeOptions | undefined {
  if (s === undefined) return undefined;
  const field = s.field ?? 'speculative';
  const bad = (name: string, rule: string) =>
    new EngineError('INVALID_ARGUMENT', `engine option ${field}.${name}: ${rule}`, `${field}.${name}`);
  if (!METHODS.includes(s.method))
    throw bad('method', `must be one of ngram, draft, layer-skip, mtp, got ${JSON.stringify(s.method)}`);
  const int = (name: keyof SpeculativeOptions, v: unknown, min: number, max: number): number | undefined => {
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      throw bad(name, `must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
    return v;
  };
  const k = int('numSpeculativeTokens', s.numSpeculativeTokens, 1, MAX_SPECULATIVE_TOKENS);
  const ngramMax = int('ngramMax', s.ngramMax, 1, 64) ?? Math.max(NGRAM_DEFAULTS.maxN, s.ngramMin ?? 0);
  const ngramMin = int('ngramMin', s.ngramMin, 1, ngramMax) ?? Math.min(NGRAM_DEFAULTS.minN, ngramMax);
  const draftLayers = int('draftLayers', s.draftLayers, 1, 4096);
  if (s.adaptive !== undefined && typeof s.adaptive !== 'boolean') throw bad('adaptive', 'must be a boolean');
  if (s.method === 'draft' && (typeof s.draftModel !== 'string' || s.draftModel === ''))
    throw bad('draftModel', "is required with method 'draft' (prism serve --draft-model PATH)");
  if (s.method !== 'draft' && s.draftModel !== undefined)
    throw bad('draftModel', `only applies with method 'draft', not '${s.method}'`);
  if (s.method !== 'layer-skip' && draftLayers !== undefined)
    throw bad('draftLayers', `only applies with method 'layer-skip', not '${s.method}'`);
  return {
    method: s.method,
    numSpeculativeTokens:
      k ?? (s.adaptive === false ? DEFAULT_FIXED_SPECULATIVE_TOKENS : DEFAULT_SPECULATIVE_TOKENS),
    adaptive: s.adaptive ?? true,
    draftModel: s.draftModel,
    draftLayers,
    ngramMax,
    ngramMin,
    field,
  };
}
