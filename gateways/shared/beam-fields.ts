/**
 * vLLM's beam search fields (`use_beam_search`, `length_penalty`, `early_stopping`) and
 * `min_tokens`, as the OpenAI routes, vLLM's `/generate` and MindIE's native parameters accept
 * them; the engine checks their values and combinations. Beams are ranked only when they
 * finish, so a streamed beam search is refused (vLLM's choice) rather than sent in one piece
 * at the end.
 */
import type { SamplingParams } from '../../engine/api.js';
import { HttpError } from './http-error.js';
import { nullable } from './schema.js';

export const beamSchemaProperties = {
  use_beam_search: nullable({ type: 'boolean' }),
  length_penalty: nullable({ type: 'number' }),
  early_stopping: nullable({ anyOf: [{ type: 'boolean' }, { const: 'never' }] }),
  min_tokens: nullable({ type: 'integer', minimum: 0 }),
} as const;

export interface BeamFields {
  use_beam_search?: boolean | null;
  length_penalty?: number | null;
  early_stopping?: boolean | 'never' | null;
  min_tokens?: number | null;
}

type BeamSampling = Pick<SamplingParams, 'useBeamSearch' | 'lengthPenalty' | 'earlyStopping' | 'minTokens'>;

/** The engine's beam and min_tokens params; `prefix` names the fields as the client wrote them. */
export function beamSamplingParams(b: BeamFields, stream: boolean, prefix = ''): BeamSampling {
  if (b.use_beam_search && stream)
    throw new HttpError(
      'validation',
      `${prefix}use_beam_search: cannot be streamed (beams are ranked only when they finish); send stream: false`,
      `${prefix}use_beam_search`,
    );
  const out: { -readonly [K in keyof BeamSampling]: BeamSampling[K] } = {};
  if (b.use_beam_search != null) out.useBeamSearch = b.use_beam_search;
  if (b.length_penalty != null) out.lengthPenalty = b.length_penalty;
  if (b.early_stopping != null) out.earlyStopping = b.early_stopping;
  if (b.min_tokens != null) out.minTokens = b.min_tokens;
  return out;
}
