/**
 * MindIE's self-developed inference routes (service listener): POST /infer (text, or a list of
 * text and image parts: inputs.ts), POST /infer_token (token ids), and POST /v1/tokenizer
 * (count tokens).
 */
import type { Context } from 'koa';
import type { GenerateEvent, GenerateRequest, ImageInput, PromptInput } from '../../engine/api.js';
import { readJsonBody } from '../shared/body.js';
import { collect, events, newRequestId } from '../shared/engine-calls.js';
import { resolveModel, adapterFor, assertAccepting, type GatewayContext } from '../shared/gateway-context.js';
import { HttpError, invalid } from '../shared/http-error.js';
import { noteIgnoredFields, noteUnknownFields, unknownKeys } from '../shared/ignored-fields.js';
import type { FoundImage } from '../shared/images/image-parts.js';
import { compileSchema } from '../shared/schema.js';
import { streamSse } from '../shared/stream.js';
import {
  mindieParameterFields,
  mindieSampling,
  parametersSchema,
  requestSignal,
  withMindieConstraint,
  type MindieParameters,
} from '../shared/mindie-parameters.js';
import { pdHeaderFields } from '../pd/mindie-headers.js';
import { mindieErrorBody } from './errors.js';
import { checkInputs, imagesPrompt, inputItemSchema, type InputItem } from './inputs.js';

/** Largest token id /infer_token accepts (MindIE's bound). */
const MAX_TOKEN_ID = 1048576;

const inferSchema = {
  type: 'object',
  properties: {
    inputs: {
      anyOf: [
        { type: 'string', minLength: 1 },
        { type: 'array', minItems: 1, items: inputItemSchema },
      ],
    },
    input_id: { type: 'array', minItems: 1, items: { type: 'integer', minimum: 0, maximum: MAX_TOKEN_ID } },
    stream: { type: 'boolean' },
    parameters: parametersSchema,
    /** The base model's name or a LoRA adapter id. */
    model: { type: 'string' },
  },
};

interface InferBody {
  inputs?: string | InputItem[];
  input_id?: number[];
  stream?: boolean;
  parameters?: MindieParameters | null;
  model?: string;
}

const validateInfer = compileSchema<InferBody>(inferSchema);

/** The prompt; for a list holding images, the images to read (checked before any is). */
function promptOf(body: InferBody, tokenRoute: boolean): PromptInput | { readonly found: FoundImage[] } {
  if (body.inputs !== undefined && body.input_id !== undefined) throw invalid('inputs', 'Input conflict.');
  if (tokenRoute) {
    if (body.input_id === undefined) throw invalid('input_id', 'Not found inputs.');
    return { kind: 'tokens', ids: body.input_id };
  }
  if (body.inputs === undefined) throw invalid('inputs', 'Not found inputs.');
  if (typeof body.inputs === 'string') return { kind: 'text', text: body.inputs };
  return checkInputs(body.inputs);
}

export async function handleNativeInfer(
  gw: GatewayContext,
  ctx: Context,
  tokenRoute: boolean,
): Promise<void> {
  const body = validateInfer(await readJsonBody(ctx, gw.config.maxRequestBytes));
  // Fields MindIE does not define are answered and named (docs/api.md, "Unknown fields").
  noteUnknownFields(ctx, body, inferSchema);
  if (Array.isArray(body.inputs))
    body.inputs.forEach((item, i) =>
      noteIgnoredFields(ctx, unknownKeys(item, inputItemSchema.properties, `inputs[${i}]`)),
    );
  const checked = promptOf(body, tokenRoute);
  const params = body.parameters ?? {};
  noteIgnoredFields(ctx, unknownKeys(params, mindieParameterFields, 'parameters'));
  assertAccepting(gw);
  const adapter = adapterFor(gw, resolveModel(gw, body.model));
  const sampling = mindieSampling(params, 'parameters', body.stream === true);
  const pd = pdHeaderFields(ctx);
  let prompt: PromptInput;
  let images: readonly ImageInput[] = [];
  if ('found' in checked)
    ({ prompt, images } = await imagesPrompt(body.inputs as InputItem[], checked.found, gw.config.media));
  else prompt = checked;
  const request: GenerateRequest = withMindieConstraint(
    {
      requestId: newRequestId('infer'),
      ...adapter,
      prompt,
      params: sampling,
      ...(images.length > 0 ? { images } : {}),
      ...pd,
    },
    params,
  );
  const signal = requestSignal(ctx, params.timeout);
  if (!body.stream) {
    const answer = await collect(gw, request, signal);
    const c = answer.choices[0];
    ctx.body = {
      generated_text: c.text,
      ...(params.details
        ? {
            details: {
              finish_reason: c.finish.reason,
              generated_tokens: c.tokenIds.length,
              generated_token_ids: c.tokenIds,
              seed: c.finish.seed,
            },
          }
        : {}),
    };
    return;
  }
  let full = '';
  await streamSse<GenerateEvent>(ctx, {
    events: events(gw, request, signal),
    signal,
    errorBody: mindieErrorBody,
    onEvent: (ev, sse) => {
      if (ev.type === 'token') {
        full += ev.text;
        sse.data({
          prefill_time: null,
          decode_time: null,
          token: { id: ev.tokenIds, text: gw.config.fullTextEnabled ? full : ev.text },
        });
      } else {
        sse.data({
          prefill_time: ev.timings.prefillMs,
          decode_time: ev.timings.decodeMs,
          generated_text: ev.text,
          details: params.details
            ? { finish_reason: ev.reason, generated_tokens: ev.tokenIds.length, seed: ev.seed }
            : null,
          token: { id: [], text: null },
        });
      }
    },
  });
}

const validateTokenizer = compileSchema<{ inputs: string; do_decode?: boolean }>({
  type: 'object',
  required: ['inputs'],
  properties: { inputs: { type: 'string', minLength: 1 }, do_decode: { type: 'boolean' } },
});

export async function handleTokenizer(gw: GatewayContext, ctx: Context): Promise<void> {
  const body = validateTokenizer(await readJsonBody(ctx, gw.config.maxRequestBytes));
  const ids = await gw.engine.tokenize(body.inputs, true);
  if (ids.length > gw.info.maxInputTokenLen) {
    throw new HttpError(
      'validation',
      `inputs: token length must be in (0, ${gw.info.maxInputTokenLen}], but got ${ids.length}`,
      'inputs',
    );
  }
  const tokens = body.do_decode === false ? [] : (await gw.engine.detokenize(ids, false)).tokens;
  ctx.body = { token_number: ids.length, tokens };
}
