/**
 * The TGI request body (`{"inputs", "parameters", "stream"}`), its schema and its mapping onto
 * one engine request. TGI semantics: greedy unless `do_sample` or a sampling warper
 * (temperature ≠ 1, top_k, top_p < 1) is set; `temperature` and `top_p` are open intervals.
 */
import type { GenerateRequest } from '../../engine/api.js';
import { fromTgiGrammar, withConstraintField } from '../shared/structured.js';
import { resolveModel, adapterFor, type GatewayContext } from '../shared/gateway-context.js';
import { invalid, notSupported } from '../shared/http-error.js';
import type { Context } from 'koa';
import { noteIgnoredFields, noteUnknownFields, unknownKeys } from '../shared/ignored-fields.js';
import { compileSchema, nullable } from '../shared/schema.js';
import { loadImageParts, partsText } from '../shared/images/image-parts.js';
import { findMarkdownImages } from '../shared/images/markdown-images.js';

const tgiSchema = {
  type: 'object',
  required: ['inputs'],
  properties: {
    inputs: { type: 'string', minLength: 1 },
    stream: { type: 'boolean' },
    parameters: nullable({
      type: 'object',
      properties: {
        adapter_id: nullable({ type: 'string' }),
        best_of: nullable({ type: 'integer', minimum: 1, maximum: 128 }),
        decoder_input_details: { type: 'boolean' },
        details: { type: 'boolean' },
        do_sample: { type: 'boolean' },
        frequency_penalty: nullable({ type: 'number', exclusiveMinimum: -2, maximum: 2 }),
        grammar: {},
        max_new_tokens: nullable({ type: 'integer', minimum: 1 }),
        repetition_penalty: nullable({ type: 'number', exclusiveMinimum: 0 }),
        return_full_text: nullable({ type: 'boolean' }),
        seed: nullable({ type: 'integer', minimum: 0 }),
        stop: nullable({ type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 16 }),
        temperature: nullable({ type: 'number', exclusiveMinimum: 0 }),
        top_k: nullable({ type: 'integer', minimum: 1 }),
        top_n_tokens: nullable({ type: 'integer', minimum: 0, maximum: 20 }),
        top_p: nullable({ type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 }),
        truncate: nullable({ type: 'integer', minimum: 1 }),
        typical_p: nullable({ type: 'number', exclusiveMinimum: 0, maximum: 1 }),
        watermark: { type: 'boolean' },
      },
    }),
  },
};

export interface TgiParameters {
  adapter_id?: string | null;
  best_of?: number | null;
  decoder_input_details?: boolean;
  details?: boolean;
  do_sample?: boolean;
  frequency_penalty?: number | null;
  grammar?: unknown;
  max_new_tokens?: number | null;
  repetition_penalty?: number | null;
  return_full_text?: boolean | null;
  seed?: number | null;
  stop?: string[] | null;
  temperature?: number | null;
  top_k?: number | null;
  top_n_tokens?: number | null;
  top_p?: number | null;
  truncate?: number | null;
  typical_p?: number | null;
  watermark?: boolean;
}

export interface TgiBody {
  inputs: string;
  stream?: boolean;
  parameters?: TgiParameters | null;
}

const checkTgi = compileSchema<TgiBody>(tgiSchema);
const parameterFields = (tgiSchema.properties.parameters as { anyOf: [{ properties: object }] }).anyOf[0];

/**
 * Validates a TGI body; fields TGI does not define (top level or in `parameters`) are answered
 * and named as ignored (shared/ignored-fields.ts), as TGI's router ignores them.
 */
export function validateTgi(raw: unknown, ctx: Context): TgiBody {
  const body = checkTgi(raw);
  noteUnknownFields(ctx, raw, tgiSchema);
  const p = body.parameters;
  if (p) noteIgnoredFields(ctx, unknownKeys(p, parameterFields.properties, 'parameters'));
  return body;
}

const d = <T>(v: T | null | undefined): T | undefined => (v === null ? undefined : v);

/** Whether TGI would sample for these parameters. */
export function tgiSamples(p: TgiParameters): boolean {
  return (
    p.do_sample === true ||
    (p.temperature != null && p.temperature !== 1) ||
    p.top_k != null ||
    (p.top_p != null && p.top_p < 1) ||
    (p.typical_p != null && p.typical_p < 1)
  );
}

/**
 * `inputs` as the engine's prompt: its text, and where it holds `![](URL)` images (fetched and
 * decoded here) its parts in order. As in TGI, only a model that takes images reads them: for
 * a text-only model the markdown is text like any other (TGI's router chunks `inputs` for
 * vision-language models only).
 */
export async function tgiPrompt(gw: GatewayContext, inputs: string): Promise<TgiPrompt> {
  if (!gw.info.images) return { prompt: { kind: 'text', text: inputs } };
  const markdown = findMarkdownImages(inputs, 'inputs');
  if (markdown.found.length === 0) return { prompt: { kind: 'text', text: inputs } };
  const images = await loadImageParts(markdown.found, gw.config.media);
  const parts = markdown.parts(images);
  return { prompt: { kind: 'text', text: partsText(parts), parts }, images: images.images };
}

export type TgiPrompt = Pick<GenerateRequest, 'prompt' | 'images'>;

/** `ids`: the request's id, and the split prefill/decode fields of its headers (which win). */
export function toEngineRequest(
  gw: GatewayContext,
  body: TgiBody,
  ids: Pick<GenerateRequest, 'requestId' | 'kvTransfer'>,
  streaming: boolean,
  prompt: TgiPrompt,
): GenerateRequest {
  const p = body.parameters ?? {};
  // adapter_id names a LoRA adapter (as in TGI); the base model's name or none = no adapter.
  const model = p.adapter_id ? resolveModel(gw, p.adapter_id, 'parameters.adapter_id') : gw.info.modelName;
  const structured = fromTgiGrammar(p.grammar);
  if (p.watermark) throw notSupported('parameters.watermark', 'watermarking');
  const samples = tgiSamples(p);
  const bestOf = d(p.best_of) ?? 1;
  if (bestOf > 1 && !samples)
    throw invalid('parameters.best_of', 'best_of > 1 requires sampling (do_sample or a sampling parameter)');
  if (bestOf > 1 && p.seed != null)
    throw invalid('parameters.seed', 'must not be set together with best_of > 1');
  if (bestOf > 1 && streaming) throw invalid('parameters.best_of', 'must be 1 when streaming tokens');
  const details = p.details === true || streaming;
  // TGI's router refuses it with a stream; its prefill details need the prompt's logprobs.
  if (p.decoder_input_details && streaming)
    throw invalid(
      'parameters.decoder_input_details',
      'decoder_input_details == true is not supported with stream',
    );
  const prefill = p.decoder_input_details === true && p.details === true;
  const request: GenerateRequest = {
    ...ids,
    ...adapterFor(gw, model),
    ...prompt,
    ...(structured ? { constraint: structured.constraint } : {}),
    params: {
      maxNewTokens: d(p.max_new_tokens),
      doSample: samples,
      temperature: d(p.temperature),
      topK: d(p.top_k),
      topP: d(p.top_p),
      typicalP: d(p.typical_p),
      repetitionPenalty: d(p.repetition_penalty),
      frequencyPenalty: d(p.frequency_penalty),
      seed: d(p.seed),
      stop: d(p.stop),
      truncate: d(p.truncate),
      // best_of: every candidate comes back (n = best_of) and generate.ts ranks them as the
      // engine ranks best_of (cumulative logprob), so the others can be `best_of_sequences`.
      n: bestOf,
      // Per-token logprobs feed `details.tokens` (and stream frames).
      logprobs: details || undefined,
      topLogprobs: p.top_n_tokens ? p.top_n_tokens : undefined,
      promptLogprobs: prefill ? 0 : undefined,
    },
  };
  return withConstraintField(request, structured);
}
