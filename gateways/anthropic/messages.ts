/**
 * POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API as one engine chat
 * request (request.ts maps it in, images.ts finds its image blocks, output.ts maps the answer back).
 */
import type { Context } from 'koa';
import type { GenerateEvent, GenerateRequest } from '../../engine/api.js';
import { readJsonBody } from '../shared/body.js';
import { loadImageParts } from '../shared/images/image-parts.js';
import { collect, events, newRequestId } from '../shared/engine-calls.js';
import {
  adapterFor,
  assertAccepting,
  resolveModel,
  resolveServedModel,
  type GatewayContext,
} from '../shared/gateway-context.js';
import { clientGoneSignal, type SseWriter } from '../shared/sse.js';
import { streamSse } from '../shared/stream.js';
import { anthropicErrorBody } from './errors.js';
import { findMessageImages } from './images.js';
import { anthropicUsage, BlockStream, contentBlocks, StopSequences, stopReason } from './output.js';
import { withConstraintField } from '../shared/structured.js';
import {
  engineConstraint,
  engineMessages,
  engineParams,
  engineTools,
  validateCountTokens,
  validateMessages,
  type MessagesBody,
} from './request.js';

/** `thinking: {type: "disabled"}` switches a template's thinking off where it has the switch. */
function thinkingKwargs(body: MessagesBody): { chatTemplateKwargs?: Record<string, unknown> } {
  return body.thinking?.type === 'disabled' ? { chatTemplateKwargs: { enable_thinking: false } } : {};
}

export async function handleMessages(gw: GatewayContext, ctx: Context): Promise<void> {
  const body = validateMessages(await readJsonBody(ctx, gw.config.maxRequestBytes));
  const model = resolveModel(gw, body.model);
  const found = findMessageImages(body.messages);
  const params = engineParams(body);
  const constraint = engineConstraint(body);
  assertAccepting(gw);
  const images = await loadImageParts(found, gw.config.media);
  const prompt = {
    kind: 'chat' as const,
    messages: engineMessages(body, images),
    ...engineTools(body),
    ...thinkingKwargs(body),
  };
  const id = newRequestId('msg');
  const request: GenerateRequest = {
    requestId: id,
    prompt,
    params,
    ...adapterFor(gw, model),
    ...(images.images.length > 0 ? { images: images.images } : {}),
    ...(constraint ? { constraint } : {}),
  };
  withConstraintField(
    request,
    constraint
      ? { constraint, field: 'output_config.format', schemaField: 'output_config.format.schema' }
      : undefined,
  );
  const signal = clientGoneSignal(ctx);
  const stops = new StopSequences(body.stop_sequences ?? []);
  const showThinking = body.thinking?.display !== 'omitted';
  const message = { id, type: 'message', role: 'assistant', model };

  if (!body.stream) {
    const answer = await collect(gw, request, signal);
    const finish = answer.choices[0].finish;
    const content = contentBlocks(finish, stops, showThinking);
    ctx.body = {
      ...message,
      content,
      stop_reason: stopReason(finish.reason, stops.matched),
      stop_sequence: stops.matched,
      usage: anthropicUsage(answer.usage),
    };
    return;
  }

  let sse: SseWriter | undefined;
  const emit = (event: string, data: Record<string, unknown>): void => sse?.data(data, event);
  const blocks = new BlockStream(emit, stops, showThinking);
  await streamSse<GenerateEvent>(ctx, {
    events: events(gw, request, signal),
    signal,
    errorBody: anthropicErrorBody,
    errorEvent: 'error',
    onOpen: (out) => {
      sse = out;
      // Token counts are known at the end: message_delta carries them all (the SDKs take them from there).
      emit('message_start', {
        type: 'message_start',
        message: {
          ...message,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 0, output_tokens: 0 },
        },
      });
      emit('ping', { type: 'ping' });
    },
    onEvent: (ev) => {
      if (ev.type === 'token') return blocks.push(ev.text, ev.chat);
      blocks.close();
      emit('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: stopReason(ev.reason, stops.matched), stop_sequence: stops.matched },
        usage: anthropicUsage(ev.usage),
      });
      emit('message_stop', { type: 'message_stop' });
    },
  });
}

/**
 * The prompt's tokens as /v1/messages would render them (system, messages, tools). An image
 * block is refused (400 naming it): its tokens are the tiles the engine's image processor cuts.
 */
export async function handleCountTokens(gw: GatewayContext, ctx: Context): Promise<void> {
  const body = validateCountTokens(await readJsonBody(ctx, gw.config.maxRequestBytes));
  await resolveServedModel(gw, body.model);
  const { parallelToolCalls: _unused, ...tools } = engineTools(body);
  const text = await gw.engine.applyChatTemplate(engineMessages(body), true, {
    ...tools,
    ...thinkingKwargs(body),
  });
  // The rendered template already holds its special tokens (BOS included).
  const ids = await gw.engine.tokenize(text, false);
  ctx.body = { input_tokens: ids.length };
}
