/**
 * The `parameters` object of MindIE's requests, shared by its own routes (gateways/mindie/:
 * /infer, /infer_token) and the KServe v2 routes (gateways/kserve/): the schema, the mapping
 * to engine sampling parameters and constraint, and the request's `timeout`.
 */
import type { Context } from 'koa';
import type { GenerateRequest, SamplingParams } from '../../engine/api.js';
import { beamSamplingParams, beamSchemaProperties, type BeamFields } from './beam-fields.js';
import { notSupported } from './http-error.js';
import { nullable } from './schema.js';
import { clientGoneSignal } from './sse.js';
import { constraintFromFields, withConstraintField, type ConstraintFields } from './structured.js';

/** MindIE/TGI-style sampling parameters carried by KServe and MindIE requests. */
/** The `parameters` fields MindIE defines (the JSON Schema's properties). */
export const mindieParameterFields = {
  temperature: nullable({ type: 'number', exclusiveMinimum: 0 }),
  top_k: nullable({ type: 'integer', minimum: 0 }),
  top_p: nullable({ type: 'number', exclusiveMinimum: 0, maximum: 1 }),
  do_sample: nullable({ type: 'boolean' }),
  seed: nullable({ type: 'integer', minimum: 0 }),
  repetition_penalty: nullable({ type: 'number', exclusiveMinimum: 0 }),
  frequency_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
  presence_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
  max_new_tokens: nullable({ type: 'integer', minimum: 1 }),
  stop: nullable({ anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] }),
  stop_token_ids: nullable({ type: 'array', items: { type: 'integer', minimum: 0 } }),
  ignore_eos: nullable({ type: 'boolean' }),
  skip_special_tokens: nullable({ type: 'boolean' }),
  include_stop_str_in_output: nullable({ type: 'boolean' }),
  details: nullable({ type: 'boolean' }),
  typical_p: nullable({ type: 'number', exclusiveMinimum: 0, maximum: 1 }),
  watermark: nullable({ type: 'boolean' }),
  priority: nullable({ type: 'integer', minimum: 1, maximum: 5 }),
  timeout: nullable({ type: 'integer', minimum: 1 }),
  truncate: nullable({ type: 'integer', minimum: 1 }),
  batch_size: nullable({ type: 'integer', minimum: 1 }),
  // Beam search (the platform accepts use_beam_search with best_of); the best beam is returned.
  best_of: nullable({ type: 'integer', minimum: 1, maximum: 128 }),
  ...beamSchemaProperties,
};

export const parametersSchema = nullable({ type: 'object', properties: mindieParameterFields });

export interface MindieParameters extends ConstraintFields, BeamFields {
  best_of?: number | null;
  temperature?: number | null;
  top_k?: number | null;
  top_p?: number | null;
  do_sample?: boolean | null;
  seed?: number | null;
  repetition_penalty?: number | null;
  frequency_penalty?: number | null;
  presence_penalty?: number | null;
  max_new_tokens?: number | null;
  stop?: string | string[] | null;
  stop_token_ids?: number[] | null;
  ignore_eos?: boolean | null;
  skip_special_tokens?: boolean | null;
  include_stop_str_in_output?: boolean | null;
  details?: boolean | null;
  typical_p?: number | null;
  watermark?: boolean | null;
  priority?: number | null;
  timeout?: number | null;
  truncate?: number | null;
}

const d = <T>(v: T | null | undefined): T | undefined => (v === null ? undefined : v);

/** Adds the constraint named by `parameters.guided_*` / `parameters.structured_outputs`, if any. */
export function withMindieConstraint(request: GenerateRequest, p: MindieParameters): GenerateRequest {
  const s = constraintFromFields(p, { allowResponseFormat: false, prefix: 'parameters.' });
  return withConstraintField(s ? { ...request, constraint: s.constraint } : request, s);
}

/**
 * MindIE parameters → engine sampling params. `priority` 1 (the default, first served) to 5
 * is the engine's priority 0 to 4 (lower first, as MindIE orders them; refused unless the
 * engine schedules by priority, the 1 of an explicit default aside); `timeout` (seconds) is
 * enforced by the gateway, which cancels.
 */
export function mindieSampling(p: MindieParameters, field: string, stream: boolean): SamplingParams {
  if (p.watermark) throw notSupported(`${field}.watermark`, 'watermarking');
  const stop = d(p.stop);
  return {
    maxNewTokens: d(p.max_new_tokens),
    temperature: d(p.temperature),
    topK: p.top_k === 0 ? undefined : d(p.top_k),
    topP: d(p.top_p),
    // MindIE: do_sample false (or absent with no sampling parameter) is greedy.
    doSample: p.do_sample ?? (p.temperature != null || p.top_k != null || p.top_p != null),
    seed: d(p.seed),
    repetitionPenalty: d(p.repetition_penalty),
    frequencyPenalty: d(p.frequency_penalty),
    presencePenalty: d(p.presence_penalty),
    stop: stop === undefined ? undefined : typeof stop === 'string' ? [stop] : stop,
    stopTokenIds: d(p.stop_token_ids),
    ignoreEos: d(p.ignore_eos),
    skipSpecialTokens: d(p.skip_special_tokens),
    includeStopStrInOutput: d(p.include_stop_str_in_output),
    truncate: d(p.truncate),
    bestOf: d(p.best_of),
    ...(p.typical_p != null ? { typicalP: p.typical_p } : {}),
    ...(p.priority != null ? { priority: p.priority - 1 } : {}),
    ...beamSamplingParams(p, stream, `${field}.`),
  };
}

/** A signal that fires when the client leaves or the request's own `timeout` (seconds) passes. */
export function requestSignal(ctx: Context, timeoutSeconds: number | null | undefined): AbortSignal {
  const gone = clientGoneSignal(ctx);
  return timeoutSeconds ? AbortSignal.any([gone, AbortSignal.timeout(timeoutSeconds * 1000)]) : gone;
}
