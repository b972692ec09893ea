/**
 * Request parameters: engine defaults and validation, in this one place, so gRPC and HTTP
 * callers get the same INVALID_ARGUMENT errors. Each error names the field (snake_case, as the
 * wire APIs spell it) and the rule.
 */
import { randomInt } from 'node:crypto';
import { invalidArgument } from './errors.js';
import type { SamplingParams } from './types.js';

export interface ResolvedParams {
  /** Before the per-prompt cap (maxSeqLen - prompt length) is applied. */
  readonly maxNewTokens: number;
  /** The request set max_new_tokens (else it is the cap: engine/context-fit.ts). */
  readonly maxNewTokensExplicit: boolean;
  /** 0 = greedy. */
  readonly temperature: number;
  readonly topK: number;
  readonly topP: number;
  readonly repetitionPenalty: number;
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  readonly seed: number;
  readonly stop: readonly string[];
  readonly stopTokenIds: ReadonlySet<number>;
  readonly ignoreEos: boolean;
  readonly logprobs: boolean;
  /** Alternatives per token (0 = only the chosen token's logprob). */
  readonly topLogprobs: number;
  /** Prompt logprobs with this many alternatives per prompt token; null = not asked. */
  readonly promptLogprobs: number | null;
  readonly n: number;
  readonly bestOf: number;
  readonly truncate: number | undefined;
  readonly skipSpecialTokens: boolean;
  readonly includeStopStrInOutput: boolean;
  /** Beam search: `bestOf` beams; null = sampling (or greedy). */
  readonly beam: BeamParams | null;
  /** Output tokens before an end-of-sequence or stop token may end it (0 = no minimum). */
  readonly minTokens: number;
  /** Cap on draft tokens per step for this request (0 = no speculation); undefined: the engine's. */
  readonly numSpeculativeTokens: number | undefined;
  /** 0 = off. */
  readonly minP: number;
  /** 1 = off. */
  readonly typicalP: number;
  /** logit_bias as the sampler takes it; null = none. */
  readonly logitBias: LogitBias | null;
  /** Words that may not be generated (tokenized by engine/bad-words/). */
  readonly badWords: readonly string[];
  /** Scheduling priority: lower first (0 by default). */
  readonly priority: number;
}

interface LogitBias {
  readonly tokens: Int32Array;
  readonly values: Float32Array;
}

interface BeamParams {
  readonly width: number;
  readonly lengthPenalty: number;
  readonly earlyStopping: boolean | 'never';
}

export interface ParamLimits {
  readonly vocabSize: number;
  /** Cap of max_new_tokens (maxIterTimes). */
  readonly maxNewTokensCap: number;
  readonly maxN: number;
}

const MAX_TOP_LOGPROBS = 20;
/** OpenAI's bounds of logit_bias: at most 300 tokens, each bias in [-100, 100]. */
const MAX_LOGIT_BIAS = 300;
const LOGIT_BIAS_RANGE = 100;
const MAX_BAD_WORDS = 128;
const MAX_STOP_STRINGS = 32;
/** Largest seed: JS numbers stay exact up to 2^53 - 1. */
const MAX_SEED = Number.MAX_SAFE_INTEGER;

type Rule = [check: (v: number) => boolean, rule: string];

function num(value: unknown, field: string, fallback: number, integer: boolean, ...rules: Rule[]): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw invalidArgument(field, `must be a finite number, got ${JSON.stringify(value)}`);
  if (integer && !Number.isInteger(value)) throw invalidArgument(field, `must be an integer, got ${value}`);
  for (const [check, rule] of rules) if (!check(value)) throw invalidArgument(field, `${rule}, got ${value}`);
  return value;
}

/** An integer field with no default: undefined when absent, else checked as `num` checks it. */
function optionalInt(value: unknown, field: string, ...rules: Rule[]): number | undefined {
  return value === undefined || value === null ? undefined : num(value, field, 0, true, ...rules);
}

function bool(value: unknown, field: string, fallback: boolean): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'boolean')
    throw invalidArgument(field, `must be a boolean, got ${JSON.stringify(value)}`);
  return value;
}

const r = (check: (v: number) => boolean, rule: string): Rule => [check, rule];

export function resolveParams(p: SamplingParams, limits: ParamLimits): ResolvedParams {
  if (p === null || typeof p !== 'object') throw invalidArgument('params', 'must be an object');
  const promptLogprobs =
    p.promptLogprobs === undefined || p.promptLogprobs === null
      ? null
      : num(
          p.promptLogprobs,
          'params.prompt_logprobs',
          0,
          true,
          r((v) => v >= 0 && v <= MAX_TOP_LOGPROBS, `must be in [0, ${MAX_TOP_LOGPROBS}]`),
        );
  // Scoring a prompt alone (lm-evaluation-harness's loglikelihood requests) generates nothing.
  const maxNewTokens = num(
    p.maxNewTokens,
    'params.max_new_tokens',
    limits.maxNewTokensCap,
    true,
    promptLogprobs === null
      ? r((v) => v >= 1, 'must be >= 1 (0 only with prompt logprobs)')
      : r((v) => v >= 0, 'must be >= 0'),
  );
  const doSample = bool(p.doSample, 'params.do_sample', true);
  let temperature = num(
    p.temperature,
    'params.temperature',
    1,
    false,
    r((v) => v >= 0, 'must be >= 0'),
    r((v) => v <= 100, 'must be <= 100'),
  );
  if (!doSample) temperature = 0;
  const topK = num(
    p.topK,
    'params.top_k',
    0,
    true,
    r((v) => v >= 0, 'must be >= 0 (0 = off)'),
  );
  const topP = num(
    p.topP,
    'params.top_p',
    1,
    false,
    r((v) => v > 0 && v <= 1, 'must be in (0, 1]'),
  );
  const repetitionPenalty = num(
    p.repetitionPenalty,
    'params.repetition_penalty',
    1,
    false,
    r((v) => v > 0, 'must be > 0'),
    r((v) => v <= 10, 'must be <= 10'),
  );
  const presencePenalty = num(
    p.presencePenalty,
    'params.presence_penalty',
    0,
    false,
    r((v) => v >= -2 && v <= 2, 'must be in [-2, 2]'),
  );
  const frequencyPenalty = num(
    p.frequencyPenalty,
    'params.frequency_penalty',
    0,
    false,
    r((v) => v >= -2 && v <= 2, 'must be in [-2, 2]'),
  );
  const seed = num(
    p.seed,
    'params.seed',
    -1,
    true,
    r((v) => v >= 0 && v <= MAX_SEED, `must be in [0, ${MAX_SEED}]`),
  );
  const topLogprobs = num(
    p.topLogprobs,
    'params.top_logprobs',
    0,
    true,
    r((v) => v >= 0 && v <= MAX_TOP_LOGPROBS, `must be in [0, ${MAX_TOP_LOGPROBS}]`),
  );
  const logprobs = bool(p.logprobs, 'params.logprobs', false) || (p.topLogprobs ?? 0) > 0;
  const n = num(
    p.n,
    'params.n',
    1,
    true,
    r((v) => v >= 1 && v <= limits.maxN, `must be in [1, ${limits.maxN}]`),
  );
  const bestOf = num(
    p.bestOf,
    'params.best_of',
    n,
    true,
    r((v) => v >= n, `must be >= n (${n})`),
    r((v) => v <= limits.maxN, `must be <= ${limits.maxN}`),
  );
  const truncate = optionalInt(
    p.truncate,
    'params.truncate',
    r((v) => v >= 1, 'must be >= 1'),
  );

  const minTokens = num(
    p.minTokens,
    'params.min_tokens',
    0,
    true,
    r((v) => v >= 0, 'must be >= 0'),
    r((v) => v <= maxNewTokens, `must be <= max_new_tokens (${maxNewTokens})`),
  );
  const numSpeculativeTokens = optionalInt(
    p.numSpeculativeTokens,
    'params.num_speculative_tokens',
    r((v) => v >= 0, 'must be >= 0'),
  );
  const minP = num(
    p.minP,
    'params.min_p',
    0,
    false,
    r((v) => v >= 0 && v <= 1, 'must be in [0, 1] (0 = off)'),
  );
  const typicalP = num(
    p.typicalP,
    'params.typical_p',
    1,
    false,
    r((v) => v > 0 && v <= 1, 'must be in (0, 1] (1 = off)'),
  );
  const beam = bool(p.useBeamSearch, 'params.use_beam_search', false)
    ? beamParams(p, bestOf, temperature, topK, topP, minP, typicalP)
    : null;
  // vLLM's rule: the beam-only fields are refused rather than ignored without beams.
  if (!beam && p.lengthPenalty !== undefined && p.lengthPenalty !== null && p.lengthPenalty !== 1)
    throw invalidArgument(
      'params.length_penalty',
      'applies only with use_beam_search (must be 1 without it)',
    );
  if (!beam && p.earlyStopping !== undefined && p.earlyStopping !== null && p.earlyStopping !== false)
    throw invalidArgument(
      'params.early_stopping',
      'applies only with use_beam_search (must be false without it)',
    );

  const stop = p.stop ?? [];
  if (!Array.isArray(stop)) throw invalidArgument('params.stop', 'must be a list of strings');
  if (stop.length > MAX_STOP_STRINGS)
    throw invalidArgument('params.stop', `at most ${MAX_STOP_STRINGS} stop strings, got ${stop.length}`);
  stop.forEach((s, i) => {
    if (typeof s !== 'string' || s.length === 0)
      throw invalidArgument(`params.stop[${i}]`, 'must be a non-empty string');
  });
  const stopIds = p.stopTokenIds ?? [];
  if (!Array.isArray(stopIds)) throw invalidArgument('params.stop_token_ids', 'must be a list of token ids');
  stopIds.forEach((id, i) => {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= limits.vocabSize) {
      throw invalidArgument(
        `params.stop_token_ids[${i}]`,
        `must be a token id in [0, ${limits.vocabSize}), got ${JSON.stringify(id)}`,
      );
    }
  });

  return {
    // max_new_tokens above maxIterTimes is capped, not rejected (MindIE: min(maxIterTimes, max_new_tokens)).
    maxNewTokens: Math.min(maxNewTokens, limits.maxNewTokensCap),
    maxNewTokensExplicit: p.maxNewTokens !== undefined && p.maxNewTokens !== null,
    temperature,
    topK,
    topP,
    repetitionPenalty,
    presencePenalty,
    frequencyPenalty,
    seed: seed >= 0 ? seed : randomInt(0, 2 ** 47),
    stop: [...stop],
    stopTokenIds: new Set(stopIds),
    ignoreEos: bool(p.ignoreEos, 'params.ignore_eos', false),
    logprobs,
    topLogprobs,
    promptLogprobs,
    n,
    bestOf,
    truncate,
    skipSpecialTokens: bool(p.skipSpecialTokens, 'params.skip_special_tokens', true),
    includeStopStrInOutput: bool(p.includeStopStrInOutput, 'params.include_stop_str_in_output', false),
    beam,
    minTokens,
    numSpeculativeTokens,
    minP,
    typicalP,
    logitBias: logitBias(p.logitBias, limits.vocabSize),
    badWords: badWords(p.badWords),
    priority: num(
      p.priority,
      'params.priority',
      0,
      true,
      r((v) => Math.abs(v) <= 2 ** 31 - 1, `must be in [-${2 ** 31 - 1}, ${2 ** 31 - 1}]`),
    ),
  };
}

/** OpenAI's and vLLM's rules: token ids of the vocabulary, biases in [-100, 100], at most 300. */
function logitBias(bias: unknown, vocabSize: number): LogitBias | null {
  if (bias === undefined || bias === null) return null;
  if (typeof bias !== 'object' || Array.isArray(bias))
    throw invalidArgument('params.logit_bias', 'must be an object mapping token ids to biases');
  const entries = Object.entries(bias as Record<string, unknown>);
  if (entries.length > MAX_LOGIT_BIAS)
    throw invalidArgument('params.logit_bias', `at most ${MAX_LOGIT_BIAS} tokens, got ${entries.length}`);
  if (entries.length === 0) return null;
  const tokens = new Int32Array(entries.length);
  const values = new Float32Array(entries.length);
  entries.forEach(([key, value], i) => {
    const id = Number(key);
    if (!/^\d+$/.test(key) || id >= vocabSize)
      throw invalidArgument(`params.logit_bias.${key}`, `must be keyed by a token id in [0, ${vocabSize})`);
    tokens[i] = id;
    values[i] = num(
      value,
      `params.logit_bias.${key}`,
      0,
      false,
      r((v) => Math.abs(v) <= LOGIT_BIAS_RANGE, `must be in [-${LOGIT_BIAS_RANGE}, ${LOGIT_BIAS_RANGE}]`),
    );
  });
  return { tokens, values };
}

function badWords(words: unknown): readonly string[] {
  if (words === undefined || words === null) return [];
  if (!Array.isArray(words)) throw invalidArgument('params.bad_words', 'must be a list of strings');
  if (words.length > MAX_BAD_WORDS)
    throw invalidArgument('params.bad_words', `at most ${MAX_BAD_WORDS} words, got ${words.length}`);
  words.forEach((w, i) => {
    if (typeof w !== 'string' || w.trim().length === 0)
      throw invalidArgument(`params.bad_words[${i}]`, 'must be a string with a non-space character');
  });
  return words as string[];
}

/**
 * Beam search is deterministic (as vLLM requires): sampling parameters other than their
 * neutral values are refused rather than ignored. The width is best_of (default n).
 */
function beamParams(
  p: SamplingParams,
  width: number,
  temperature: number,
  topK: number,
  topP: number,
  minP: number,
  typicalP: number,
): BeamParams {
  const sampling = 'is deterministic: it takes no sampling parameter';
  if (p.temperature !== undefined && p.temperature !== null && temperature !== 0 && p.doSample !== false)
    throw invalidArgument('params.temperature', `must be 0 with use_beam_search (beam search ${sampling})`);
  if (topK !== 0)
    throw invalidArgument('params.top_k', `must be off with use_beam_search (beam search ${sampling})`);
  if (topP !== 1)
    throw invalidArgument('params.top_p', `must be 1 with use_beam_search (beam search ${sampling})`);
  if (minP !== 0)
    throw invalidArgument('params.min_p', `must be 0 with use_beam_search (beam search ${sampling})`);
  if (typicalP !== 1)
    throw invalidArgument('params.typical_p', `must be 1 with use_beam_search (beam search ${sampling})`);
  const lengthPenalty = num(p.lengthPenalty, 'params.length_penalty', 1, false);
  const e = p.earlyStopping;
  if (e !== undefined && e !== null && typeof e !== 'boolean' && e !== 'never')
    throw invalidArgument(
      'params.early_stopping',
      `must be true, false or "never", got ${JSON.stringify(e)}`,
    );
  return { width, lengthPenalty, earlyStopping: e ?? false };
}
