/**
 * POST /v1/chat/completions: OpenAI chat request → one engine request with a chat prompt
 * (the engine renders the model's chat template) → chat.completion or chat.completion.chunk SSE.
 */
import type { Context } from 'koa';
import type {
  ChatMessage,
  ContentPart,
  GenerateEvent,
  GenerateRequest,
  TokenLogprob,
} from '../../engine/api.js';
import {
  contentParts,
  loadImageParts,
  NO_IMAGES,
  partsText,
  type ImageParts,
} from '../shared/images/image-parts.js';
import { contentPartSchema, findChatImages, type ContentPartBody } from './chat-images.js';
import { readJsonBody } from '../shared/body.js';
import { noteUnknownFields } from '../shared/ignored-fields.js';
import { collect, events, newRequestId } from '../shared/engine-calls.js';
import {
  adapterFor,
  assertAccepting,
  resolveRequestedModel,
  type GatewayContext,
} from '../shared/gateway-context.js';
import { invalid, notSupported } from '../shared/http-error.js';
import { compileSchema } from '../shared/schema.js';
import { withClientFields } from '../shared/client-fields.js';
import { withConstraintField } from '../shared/structured.js';
import { templateVariables, thinkingSchemaProperties, type ThinkingFields } from '../shared/thinking.js';
import { pdHeaderFields } from '../pd/mindie-headers.js';
import { clientGoneSignal } from '../shared/sse.js';
import { streamSse } from '../shared/stream.js';
import {
  chatDelta,
  chatMessage,
  mindieTimings,
  reasoningTokens,
  toolPromptFields,
  toolSchemaProperties,
  withReasoningTokens,
  type ToolFields,
  toolParameterFields,
} from './chat-tools.js';
import { openaiErrorBody } from './errors.js';
import { kvTransferFromBody, kvTransferResponse } from './kv-transfer.js';
import { chatConstraint } from '../tgi/chat-response-format.js';
import {
  openaiFinishReason,
  openaiUsage,
  samplingSchemaProperties,
  toSamplingParams,
  type SamplingFields,
} from './sampling.js';
import { promptLogprobsParam, promptLogprobsSchema, vllmPromptLogprobs } from './prompt-logprobs.js';

export const chatSchema = {
  type: 'object',
  required: ['messages'],
  properties: {
    ...samplingSchemaProperties,
    ...promptLogprobsSchema,
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role'],
        properties: {
          role: { enum: ['system', 'developer', 'user', 'assistant', 'tool'] },
          content: {
            anyOf: [{ type: 'string' }, { type: 'null' }, { type: 'array', items: contentPartSchema }],
          },
          name: { type: 'string' },
          tool_call_id: { type: 'string' },
          // An assistant turn's reasoning sent back: vLLM's older and newer names.
          reasoning_content: { anyOf: [{ type: 'string' }, { type: 'null' }] },
          reasoning: { anyOf: [{ type: 'string' }, { type: 'null' }] },
          tool_calls: {
            type: 'array',
            items: {
              type: 'object',
              required: ['id', 'function'],
              properties: {
                id: { type: 'string' },
                type: { const: 'function' },
                function: {
                  type: 'object',
                  required: ['name', 'arguments'],
                  properties: { name: { type: 'string' }, arguments: { type: 'string' } },
                },
              },
            },
          },
        },
      },
    },
    logprobs: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
    top_logprobs: { anyOf: [{ type: 'integer', minimum: 0, maximum: 20 }, { type: 'null' }] },
    ...toolSchemaProperties,
    ...thinkingSchemaProperties,
    // vLLM's: end the prompt without the assistant turn opener.
    add_generation_prompt: { anyOf: [{ type: 'boolean' }, { type: 'null' }] },
    response_format: {
      anyOf: [
        { type: 'object', required: ['type'], properties: { type: { type: 'string' } } },
        { type: 'null' },
      ],
    },
  },
};

export interface ChatBody extends SamplingFields, ToolFields, ThinkingFields {
  prompt_logprobs?: number | null;
  messages: {
    role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
    content?: string | null | ContentPartBody[];
    name?: string;
    tool_call_id?: string;
    tool_calls?: { id: string; type?: 'function'; function: { name: string; arguments: string } }[];
    reasoning_content?: string | null;
    reasoning?: string | null;
  }[];
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  response_format?: { type: string } | null;
  add_generation_prompt?: boolean | null;
  structured_outputs?: unknown;
  guided_json?: unknown;
  guided_regex?: unknown;
  guided_choice?: unknown;
  guided_grammar?: unknown;
}

const validateChat = compileSchema<ChatBody>(chatSchema);

/**
 * OpenAI chat messages as the engine's: their text parts joined as `content`, and where a
 * message holds images (`images`: found and decoded by findChatImages / loadImageParts) its
 * parts in order. Also vLLM's /tokenize messages (no `images`: the route takes none).
 */
export function toMessages(body: Pick<ChatBody, 'messages'>, images?: ImageParts): ChatMessage[] {
  return body.messages.map((m, i) => {
    let content = '';
    let parts: ContentPart[] | undefined;
    if (typeof m.content === 'string') content = m.content;
    else if (Array.isArray(m.content)) {
      const list = contentParts(m.content, images ?? NO_IMAGES, (p, j) => {
        const part = p as ContentPartBody;
        if (part.type !== 'text' || typeof part.text !== 'string') {
          throw notSupported(
            `messages[${i}].content[${j}].type`,
            `content part type '${part.type}' (${images ? "only 'text' and 'image_url'" : "only 'text'"})`,
          );
        }
        return part.text;
      });
      content = partsText(list);
      if (list.some((p) => p.type === 'image')) parts = list;
    }
    return {
      ...(parts ? { parts } : {}),
      // OpenAI's newer `developer` role is the system prompt of chat templates.
      role: m.role === 'developer' ? 'system' : m.role,
      content,
      name: m.name,
      toolCallId: m.tool_call_id,
      toolCalls: m.tool_calls?.map((c) => ({ id: c.id, type: 'function' as const, function: c.function })),
      ...reasoningOf(m, i),
    };
  });
}

/** `reasoning_content` or `reasoning` of an assistant message (the same text if both are sent). */
function reasoningOf(m: ChatBody['messages'][number], i: number): { reasoningContent?: string } {
  const a = m.reasoning_content ?? undefined;
  const b = m.reasoning ?? undefined;
  if (a !== undefined && b !== undefined && a !== b)
    throw invalid(`messages[${i}].reasoning`, 'differs from reasoning_content (send one of them)');
  const text = a ?? b;
  if (text === undefined) return {};
  if (m.role !== 'assistant')
    throw invalid(`messages[${i}].reasoning_content`, 'belongs to assistant messages');
  return { reasoningContent: text };
}

/** `top_logprobs` needs `logprobs: true` (OpenAI's rule; across two fields, so not in the schema). */
function checkLogprobFields(body: ChatBody): void {
  if (body.top_logprobs && !body.logprobs) throw invalid('top_logprobs', 'requires logprobs to be true');
}

function chatLogprobs(list: readonly TokenLogprob[]): object {
  return {
    content: list.map((t) => ({
      token: t.text,
      logprob: t.logprob,
      bytes: [...Buffer.from(t.text, 'utf-8')],
      top_logprobs: t.top.map((a) => ({
        token: a.text,
        logprob: a.logprob,
        bytes: [...Buffer.from(a.text, 'utf-8')],
      })),
    })),
  };
}

export async function handleChat(gw: GatewayContext, ctx: Context): Promise<void> {
  const raw = await readJsonBody(ctx, gw.config.maxRequestBytes);
  const body = validateChat(raw);
  noteUnknownFields(ctx, raw, chatSchema);
  const model = await resolveRequestedModel(gw, body.model);
  checkLogprobFields(body);
  const toolFields = toolPromptFields(body, raw);
  assertAccepting(gw);
  const images = await loadImageParts(findChatImages(body.messages), gw.config.media);
  const id = newRequestId('chatcmpl');
  const structured = chatConstraint(body);
  const request: GenerateRequest = {
    requestId: id,
    prompt: {
      kind: 'chat',
      messages: toMessages(body, images),
      ...(body.add_generation_prompt === false ? { addGenerationPrompt: false } : {}),
      ...toolFields,
      ...templateVariables(ctx, body.chat_template_kwargs, body.reasoning_effort),
    },
    params: {
      ...toSamplingParams(
        body,
        {
          logprobs: body.logprobs ?? undefined,
          topLogprobs: body.logprobs ? (body.top_logprobs ?? undefined) : undefined,
        },
        gw.info.maxInputTokenLen,
      ),
      promptLogprobs: promptLogprobsParam(body),
    },
    ...adapterFor(gw, model),
    ...(images.images.length > 0 ? { images: images.images } : {}),
    ...(structured ? { constraint: structured.constraint } : {}),
    ...kvTransferFromBody(body.kv_transfer_params),
    ...pdHeaderFields(ctx),
  };
  withConstraintField(request, structured);
  withClientFields(
    request,
    toolParameterFields(toolFields.tools, (i) => `tools[${i}].function.parameters`),
  );
  const created = Math.floor(Date.now() / 1000);
  const signal = clientGoneSignal(ctx);

  if (!body.stream) {
    const answer = await collect(gw, request, signal);
    const finishes = answer.choices.map((c) => c.finish);
    ctx.body = {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: answer.choices.map((c) => ({
        index: c.index,
        message: chatMessage(c.finish),
        logprobs: body.logprobs ? chatLogprobs(c.logprobs) : null,
        finish_reason: openaiFinishReason(c.finish.reason),
      })),
      usage: withReasoningTokens(openaiUsage(answer.usage), reasoningTokens(finishes)),
      // vLLM's: the rendered prompt's logprobs, once for the request.
      ...(body.prompt_logprobs != null
        ? { prompt_logprobs: vllmPromptLogprobs(finishes[0]?.promptLogprobs ?? [], body.prompt_logprobs) }
        : {}),
      // MindIE sends these with function-call responses.
      ...(toolFields.tools ? mindieTimings(finishes) : {}),
      ...kvTransferResponse(finishes),
    };
    return;
  }

  const includeUsage = body.stream_options?.include_usage === true;
  const base = { id, object: 'chat.completion.chunk', created, model };
  const chunk = (choices: object[], usage?: object): object =>
    includeUsage ? { ...base, choices, usage: usage ?? null } : { ...base, choices };
  const n = request.params.n ?? 1;
  const finishes: { completionTokens: number; promptTokens: number; cachedPromptTokens: number }[] = [];
  let reasoning = 0;
  await streamSse<GenerateEvent>(ctx, {
    events: events(gw, request, signal),
    signal,
    errorBody: openaiErrorBody,
    onOpen: (sse) => {
      for (let i = 0; i < n; i++) {
        sse.data(
          chunk([
            { index: i, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
          ]),
        );
      }
    },
    onEvent: (ev, sse) => {
      if (ev.type === 'token') {
        const delta = chatDelta(ev.text, ev.chat);
        if (delta === null && !ev.logprobs?.length) return;
        sse.data(
          chunk([
            {
              index: ev.index,
              delta: delta ?? {},
              logprobs: body.logprobs && ev.logprobs ? chatLogprobs(ev.logprobs) : null,
              finish_reason: null,
            },
          ]),
        );
      } else {
        finishes.push(ev.usage);
        reasoning += ev.chat?.reasoningTokens ?? 0;
        sse.data({
          ...chunk([
            { index: ev.index, delta: {}, logprobs: null, finish_reason: openaiFinishReason(ev.reason) },
          ]),
          ...kvTransferResponse([ev]),
        });
      }
    },
    onEnd: (sse) => {
      if (includeUsage) {
        const usage = {
          promptTokens: finishes[0]?.promptTokens ?? 0,
          cachedPromptTokens: finishes[0]?.cachedPromptTokens ?? 0,
          completionTokens: finishes.reduce((s, u) => s + u.completionTokens, 0),
        };
        sse.data({ ...base, choices: [], usage: withReasoningTokens(openaiUsage(usage), reasoning) });
      }
      sse.data('[DONE]');
    },
  });
}
