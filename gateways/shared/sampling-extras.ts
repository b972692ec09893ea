/**
 * The sampling fields vLLM adds to OpenAI's (and its old /generate takes): `min_p`,
 * `typical_p` (llama.cpp's and TGI's too), `logit_bias` (OpenAI's), `bad_words` and
 * `priority`, their schema and their engine parameters. The bounds are OpenAI's and vLLM's:
 * a bias in [-100, 100] for at most 300 token ids (the engine checks the ids against the
 * vocabulary), priority any integer (the engine refuses a non-zero one unless it schedules by
 * priority).
 */
import type { SamplingParams } from '../../engine/api.js';
import { nullable } from './schema.js';

export const samplingExtrasSchemaProperties = {
  min_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
  typical_p: nullable({ type: 'number', exclusiveMinimum: 0, maximum: 1 }),
  logit_bias: nullable({
    type: 'object',
    maxProperties: 300,
    propertyNames: { pattern: '^[0-9]+$' },
    additionalProperties: { type: 'number', minimum: -100, maximum: 100 },
  }),
  bad_words: nullable({ type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 128 }),
  priority: nullable({ type: 'integer' }),
} as const;

export interface SamplingExtraFields {
  min_p?: number | null;
  typical_p?: number | null;
  logit_bias?: Record<string, number> | null;
  bad_words?: string[] | null;
  priority?: number | null;
}

/** The engine parameters of the fields a body sets (null and empty ones leave them off). */
export function samplingExtras(b: SamplingExtraFields): Partial<SamplingParams> {
  const bias = b.logit_bias;
  return {
    ...(b.min_p != null ? { minP: b.min_p } : {}),
    ...(b.typical_p != null ? { typicalP: b.typical_p } : {}),
    ...(bias && Object.keys(bias).length > 0 ? { logitBias: bias } : {}),
    ...(b.bad_words && b.bad_words.length > 0 ? { badWords: b.bad_words } : {}),
    ...(b.priority != null ? { priority: b.priority } : {}),
  };
}
