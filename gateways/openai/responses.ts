/**
 * POST /v1/responses, OpenAI's Responses API, for what a stateless server can honour: `input`
 * (text or items) and `instructions` become one engine chat request (the engine renders the
 * model's template, parses tool calls and reasoning); function tools, `tool_choice`,
 * `text.format` (JSON Schema through the structured-output engine), `max_output_tokens`,
 * `temperature`, `top_p`, `top_logprobs`; the answer is a Response object or its event
 * stream (responses-output.ts). Nothing is stored: see responses-request.ts for what is refused.
 */
import type { Context } from 'koa';
import type { GenerateEvent, GenerateRequest } from '../../engine/api.js';
import { readJsonBody } from '../shared/body.js';
import { noteUnknownFields } from '../shared/ignored-fields.js';
import { events, newRequestId } from '../shared/engine-calls.js';
import {
  adapterFor,
  assertAccepting,
  resolveRequestedModel,
  type GatewayContext,
} from '../shared/gateway-context.js';
import { invalid } from '../shared/http-error.js';
import { loadImageParts } from '../shared/images/image-parts.js';
import { clientGoneSignal } from '../shared/sse.js';
import { streamSse } from '../shared/stream.js';
import { withClientFields } from '../shared/client-fields.js';
import { schemaConstraint, withConstraintField, type ClientConstraint } from '../shared/structured.js';
import { pdHeaderFields } from '../pd/mindie-headers.js';
import { toolParameterFields } from './chat-tools.js';
import { openaiErrorBody } from './errors.js';
import { ResponseBuilder } from './responses-output.js';
import {
  LOGPROBS_INCLUDE,
  findResponsesImages,
  refuseStateful,
  toChatMessages,
  toolFields,
  responsesSchema,
  validateResponses,
  type ResponsesBody,
} from './responses-request.js';
import { templateVariables } from '../shared/thinking.js';

/** `text.format` → the engine constraint and the client field it came from. */
function textConstraint(body: ResponsesBody): ClientConstraint | undefined {
  const format = body.text?.format;
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { constraint: { kind: 'json_object' }, field: 'text.format' };
  if (typeof format.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(format.name))
    throw invalid(
      'text.format.name',
      'is required: letters, digits, underscores and dashes, at most 64 characters',
    );
  if (format.schema === undefined)
    throw invalid('text.format.schema', "is required when type is 'json_schema'");
  // `strict: true` refuses what the grammar alone cannot enforce, as chat's response_format;
  // the engine prepares the schema and its refusals are renamed to this field.
  const field = 'text.format.schema';
  return {
    constraint: schemaConstraint(format.schema, field, format.strict === true),
    field,
    schemaField: field,
  };
}

export async function handleResponses(gw: GatewayContext, ctx: Context): Promise<void> {
  const raw = await readJsonBody(ctx, gw.config.maxRequestBytes);
  const body = validateResponses(raw);
  noteUnknownFields(ctx, raw, responsesSchema);
  refuseStateful(body);
  const model = await resolveRequestedModel(gw, body.model);
  const tools = toolFields(body);
  const structured = textConstraint(body);
  const wantLogprobs = (body.include ?? []).includes(LOGPROBS_INCLUDE) || (body.top_logprobs ?? 0) > 0;
  assertAccepting(gw);
  const images = await loadImageParts(findResponsesImages(body), gw.config.media);
  const messages = toChatMessages(body, images);
  // The API's ids are `resp_…` (the SDKs do not check, but people and logs do).
  const id = newRequestId('resp').replace('-', '_');
  const request: GenerateRequest = withConstraintField(
    {
      requestId: id,
      prompt: {
        kind: 'chat',
        messages,
        ...tools,
        ...templateVariables(ctx, undefined, body.reasoning?.effort, 'reasoning.effort'),
      },
      params: {
        maxNewTokens: body.max_output_tokens ?? undefined,
        temperature: body.temperature ?? undefined,
        topP: body.top_p ?? undefined,
        seed: body.seed ?? undefined,
        ...(wantLogprobs
          ? { logprobs: true, ...(body.top_logprobs ? { topLogprobs: body.top_logprobs } : {}) }
          : {}),
      },
      ...adapterFor(gw, model),
      ...(images.images.length > 0 ? { images: images.images } : {}),
      ...(structured ? { constraint: structured.constraint } : {}),
      ...pdHeaderFields(ctx),
    },
    structured,
  );
  withClientFields(
    request,
    toolParameterFields(tools.tools, (i) => `tools[${i}].parameters`),
  );
  const builder = new ResponseBuilder(id, model, body, wantLogprobs);
  const signal = clientGoneSignal(ctx);

  if (!body.stream) {
    for await (const ev of events(gw, request, signal)) {
      if (ev.type === 'token') builder.token(ev);
      else builder.finished(ev);
    }
    ctx.body = builder.response();
    return;
  }

  await streamSse<GenerateEvent>(ctx, {
    events: events(gw, request, signal),
    signal,
    errorBody: (err) => builder.error(openaiErrorBody(err).error),
    onOpen: (sse) => {
      for (const e of builder.started()) sse.data(e, e.type);
    },
    onEvent: (ev, sse) => {
      for (const e of ev.type === 'token' ? builder.token(ev) : builder.finished(ev)) sse.data(e, e.type);
    },
  });
}
