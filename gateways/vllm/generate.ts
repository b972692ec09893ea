/**
 * The old vLLM api_server `/generate` (body with `prompt`): `{"text": [prompt + completion, …]}`,
 * or, streaming, one `{"text": [...]}` JSON object per step, each followed by a NUL byte, every
 * object holding each sequence's whole text so far (vLLM's own framing, not SSE).
 */
import type { Context } from 'koa';
import type { GenerateEvent, GenerateRequest } from '../../engine/api.js';
import { constraintFromFields, withConstraintField, type ConstraintFields } from '../shared/structured.js';
import { pdHeaderFields } from '../pd/mindie-headers.js';
import { collect, events, newRequestId } from '../shared/engine-calls.js';
import { assertAccepting, resolveModel, adapterFor, type GatewayContext } from '../shared/gateway-context.js';
import { beamSamplingParams, beamSchemaProperties, type BeamFields } from '../shared/beam-fields.js';
import { compileSchema, nullable } from '../shared/schema.js';
import { mindieErrorBody } from '../mindie/errors.js';
import { clientGoneSignal } from '../shared/sse.js';
import { streamNulJson } from '../shared/stream.js';
import { noteUnknownFields } from '../shared/ignored-fields.js';
import { refuseUnserved, UNSERVED_FIELDS } from '../shared/unserved-fields.js';
import {
  samplingExtras,
  samplingExtrasSchemaProperties,
  type SamplingExtraFields,
} from '../shared/sampling-extras.js';

const vllmSchema = {
  type: 'object',
  required: ['prompt'],
  properties: {
    prompt: { type: 'string', minLength: 1 },
    model: nullable({ type: 'string' }),
    stream: nullable({ type: 'boolean' }),
    max_tokens: nullable({ type: 'integer', minimum: 1 }),
    n: nullable({ type: 'integer', minimum: 1, maximum: 128 }),
    best_of: nullable({ type: 'integer', minimum: 1, maximum: 128 }),
    temperature: nullable({ type: 'number', minimum: 0 }),
    top_p: nullable({ type: 'number', exclusiveMinimum: 0, maximum: 1 }),
    top_k: nullable({ type: 'integer', minimum: -1 }),
    // -1 is llama.cpp's "random" (as absent); the engine's seeds are otherwise unsigned.
    seed: nullable({ type: 'integer', minimum: -1 }),
    repetition_penalty: nullable({ type: 'number', exclusiveMinimum: 0 }),
    presence_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
    frequency_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
    stop: nullable({ anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] }),
    stop_token_ids: nullable({ type: 'array', items: { type: 'integer', minimum: 0 } }),
    ignore_eos: nullable({ type: 'boolean' }),
    skip_special_tokens: nullable({ type: 'boolean' }),
    include_stop_str_in_output: nullable({ type: 'boolean' }),
    ...beamSchemaProperties,
    logprobs: nullable({ type: 'integer', minimum: 0, maximum: 20 }),
    ...samplingExtrasSchemaProperties,
    // Accepted at their off values only (shared/unserved-fields.ts).
    ...Object.fromEntries(UNSERVED_FIELDS.map((f) => [f, {}])),
  },
};

interface VllmBody extends ConstraintFields, BeamFields, SamplingExtraFields {
  prompt: string;
  model?: string | null;
  stream?: boolean | null;
  max_tokens?: number | null;
  n?: number | null;
  best_of?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  seed?: number | null;
  repetition_penalty?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  stop?: string | string[] | null;
  stop_token_ids?: number[] | null;
  ignore_eos?: boolean | null;
  skip_special_tokens?: boolean | null;
  include_stop_str_in_output?: boolean | null;
  logprobs?: number | null;
}

const validateVllm = compileSchema<VllmBody>(vllmSchema);
const d = <T>(v: T | null | undefined): T | undefined => (v === null ? undefined : v);

export async function handleVllmGenerate(gw: GatewayContext, ctx: Context, raw: unknown): Promise<void> {
  const body = validateVllm(raw);
  refuseUnserved(raw as Record<string, unknown>);
  noteUnknownFields(ctx, raw, vllmSchema);
  // The old api_server ignores `model`; MindIE's example sends "None". Only a real name is checked.
  const model = body.model && body.model !== 'None' ? resolveModel(gw, body.model) : gw.info.modelName;
  assertAccepting(gw);
  const stop = d(body.stop);
  const structured = constraintFromFields(body, { allowResponseFormat: false });
  const request: GenerateRequest = {
    requestId: newRequestId('vllm'),
    ...adapterFor(gw, model),
    ...(structured ? { constraint: structured.constraint } : {}),
    prompt: { kind: 'text', text: body.prompt },
    params: {
      maxNewTokens: d(body.max_tokens),
      n: d(body.n),
      bestOf: d(body.best_of),
      temperature: d(body.temperature),
      topP: d(body.top_p),
      topK: body.top_k === -1 || body.top_k === 0 ? undefined : d(body.top_k),
      seed: body.seed === -1 ? undefined : d(body.seed),
      repetitionPenalty: d(body.repetition_penalty),
      presencePenalty: d(body.presence_penalty),
      frequencyPenalty: d(body.frequency_penalty),
      stop: stop === undefined ? undefined : typeof stop === 'string' ? [stop] : stop,
      stopTokenIds: d(body.stop_token_ids),
      ignoreEos: d(body.ignore_eos),
      skipSpecialTokens: d(body.skip_special_tokens),
      includeStopStrInOutput: d(body.include_stop_str_in_output),
      ...samplingExtras(body),
      ...beamSamplingParams(body, body.stream === true),
    },
    ...pdHeaderFields(ctx),
  };
  withConstraintField(request, structured);
  const signal = clientGoneSignal(ctx);
  if (!body.stream) {
    const answer = await collect(gw, request, signal);
    ctx.body = { text: answer.choices.map((c) => body.prompt + c.text) };
    return;
  }
  const texts = Array.from({ length: request.params.n ?? 1 }, () => body.prompt);
  await streamNulJson<GenerateEvent>(ctx, {
    events: events(gw, request, signal),
    signal,
    errorBody: mindieErrorBody,
    onEvent: (ev, out) => {
      if (ev.type !== 'token' || ev.text === '') return;
      texts[ev.index] += ev.text;
      out.write(JSON.stringify({ text: texts }) + '\0');
    },
  });
}
