/**
 * Ollama's `/api/chat` and `/api/generate` bodies → one engine request: messages (with their
 * `thinking`, `tool_calls` and `tool_name`), `tools`, `think`, `format` (structured output),
 * `options` (options.ts), the prompt forms of `/api/generate` (`system`, `raw`). What Ollama
 * has and Prism cannot serve (`suffix`, Go `template`s, `context`) is a 400 naming it; `images`
 * are decoded here (gateways/ollama/images.ts) and placed before their message's text;
 * unknown top-level fields are accepted and named as ignored, as Ollama's server ignores them.
 */
import type {
  ChatMessage,
  ChatTool,
  ChatToolCall,
  Constraint,
  GenerateRequest,
  PromptInput,
} from '../../engine/api.js';
import { invalid, notSupported } from '../shared/http-error.js';
import { unknownKeys } from '../shared/ignored-fields.js';
import { compileSchema, nullable } from '../shared/schema.js';
import { schemaConstraint } from '../shared/structured.js';
import { toolSchemaProperties } from '../openai/chat-tools.js';
import type { MediaConfig } from '../shared/images/media-config.js';
import { decodeOllamaImages, withChatImages } from './images.js';
import { mapOptions } from './options.js';

const common = {
  model: { type: 'string', minLength: 1 },
  stream: nullable({ type: 'boolean' }),
  think: nullable({ anyOf: [{ type: 'boolean' }, { enum: ['low', 'medium', 'high'] }] }),
  format: nullable({ anyOf: [{ enum: ['', 'json'] }, { type: 'object' }] }),
  options: nullable({ type: 'object' }),
  keep_alive: nullable({ anyOf: [{ type: 'number' }, { type: 'string' }] }),
  logprobs: nullable({ type: 'boolean' }),
  top_logprobs: nullable({ type: 'integer', minimum: 0, maximum: 20 }),
};

const chatSchema = {
  type: 'object',
  required: ['model'],
  properties: {
    ...common,
    messages: nullable({
      type: 'array',
      items: {
        type: 'object',
        required: ['role'],
        properties: {
          role: { enum: ['system', 'user', 'assistant', 'tool'] },
          content: nullable({ type: 'string' }),
          thinking: nullable({ type: 'string' }),
          images: nullable({ type: 'array', items: { type: 'string' } }),
          tool_name: nullable({ type: 'string' }),
          tool_calls: nullable({
            type: 'array',
            items: {
              type: 'object',
              required: ['function'],
              properties: {
                function: {
                  type: 'object',
                  required: ['name'],
                  properties: { name: { type: 'string' }, arguments: { type: 'object' } },
                },
              },
            },
          }),
        },
      },
    }),
    // OpenAI's tool shape (Ollama's clients send the same).
    tools: toolSchemaProperties.tools,
  },
};

const generateSchema = {
  type: 'object',
  required: ['model'],
  properties: {
    ...common,
    prompt: nullable({ type: 'string' }),
    system: nullable({ type: 'string' }),
    raw: nullable({ type: 'boolean' }),
    suffix: nullable({ type: 'string', maxLength: 0 }),
    template: nullable({ type: 'string', maxLength: 0 }),
    context: nullable({ type: 'array', maxItems: 0 }),
    images: nullable({ type: 'array', items: { type: 'string' } }),
  },
};

interface CommonBody {
  model: string;
  stream?: boolean | null;
  think?: boolean | 'low' | 'medium' | 'high' | null;
  format?: '' | 'json' | Record<string, unknown> | null;
  options?: Record<string, unknown> | null;
  keep_alive?: number | string | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
}

interface OllamaMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content?: string | null;
  thinking?: string | null;
  images?: string[] | null;
  tool_name?: string | null;
  tool_calls?: { function: { name: string; arguments?: Record<string, unknown> } }[] | null;
}

export interface ChatBody extends CommonBody {
  messages?: OllamaMessage[] | null;
  tools?: { function: { name: string; description?: string | null; parameters?: object | null } }[] | null;
}

export interface GenerateBody extends CommonBody {
  prompt?: string | null;
  system?: string | null;
  raw?: boolean | null;
  images?: string[] | null;
}

const checkChat = compileSchema<ChatBody>(chatSchema);
const checkGenerate = compileSchema<GenerateBody>(generateSchema);

/** What a schema rule can name better: the fields Ollama has and this server cannot serve. */
const UNSERVED: Readonly<Record<string, string>> = {
  suffix: 'suffix (fill-in-the-middle)',
  template: "template (Ollama's Go templates: the model's own chat template is used)",
  context: 'context (token ids of an earlier answer)',
};

function refuseUnserved(raw: Record<string, unknown>, at = ''): void {
  for (const [key, what] of Object.entries(UNSERVED)) {
    const v = raw[key];
    const empty = v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0);
    if (!empty) throw notSupported(at + key, what);
  }
}

function asObject(raw: unknown): Record<string, unknown> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw invalid('request body', 'must be a JSON object');
  return raw as Record<string, unknown>;
}

export function validateChat(raw: unknown): { body: ChatBody; ignored: string[] } {
  const o = asObject(raw);
  (Array.isArray(o.messages) ? o.messages : []).forEach((m, i) => {
    if (m !== null && typeof m === 'object') refuseUnserved(m as Record<string, unknown>, `messages[${i}].`);
  });
  return { body: checkChat(o), ignored: unknownKeys(o, new Set(Object.keys(chatSchema.properties))) };
}

export function validateGenerate(raw: unknown): { body: GenerateBody; ignored: string[] } {
  const o = asObject(raw);
  refuseUnserved(o);
  return { body: checkGenerate(o), ignored: unknownKeys(o, new Set(Object.keys(generateSchema.properties))) };
}

/**
 * Ollama's tool calls carry no ids: each call gets one, and each `tool` message answers the
 * earliest unanswered call of the assistant turn before it (the one its `tool_name` names, when given).
 */
function chatMessages(messages: readonly OllamaMessage[]): ChatMessage[] {
  let pending: ChatToolCall[] = [];
  return messages.map((m, i): ChatMessage => {
    const content = m.content ?? '';
    if (m.role === 'tool') {
      const k = m.tool_name ? pending.findIndex((c) => c.function.name === m.tool_name) : 0;
      if (pending.length === 0 || k < 0)
        throw invalid(
          `messages[${i}]`,
          m.tool_name
            ? `answers a call of '${m.tool_name}', which the assistant message before it did not make`
            : 'a tool message must answer a tool call of an earlier assistant message',
        );
      const [call] = pending.splice(k, 1);
      return { role: 'tool', content, toolCallId: call.id, ...(m.tool_name ? { name: m.tool_name } : {}) };
    }
    if (m.role !== 'assistant') return { role: m.role, content };
    const calls = (m.tool_calls ?? []).map((c, j): ChatToolCall => ({
      id: `call_${i}_${j}`,
      type: 'function',
      function: { name: c.function.name, arguments: JSON.stringify(c.function.arguments ?? {}) },
    }));
    pending = [...calls];
    return {
      role: 'assistant',
      content,
      ...(calls.length > 0 ? { toolCalls: calls } : {}),
      ...(m.thinking ? { reasoningContent: m.thinking } : {}),
    };
  });
}

function chatTools(body: ChatBody): ChatTool[] {
  return (body.tools ?? []).map((t) => ({
    name: t.function.name,
    ...(t.function.description ? { description: t.function.description } : {}),
    ...(t.function.parameters ? { parameters: t.function.parameters as Record<string, unknown> } : {}),
  }));
}

/**
 * `think`: true / false switch a template's thinking on or off (Qwen3's `enable_thinking`);
 * the effort levels belong to gpt-oss, whose family is not served here.
 */
function thinkKwargs(think: CommonBody['think']): { chatTemplateKwargs?: Record<string, unknown> } {
  if (think === undefined || think === null) return {};
  if (typeof think !== 'boolean') throw notSupported('think', `think level '${think}'`);
  return { chatTemplateKwargs: { enable_thinking: think } };
}

function formatConstraint(format: CommonBody['format']): Constraint | undefined {
  if (format === undefined || format === null || format === '') return undefined;
  if (format === 'json') return { kind: 'json_object' };
  return schemaConstraint(format, 'format');
}

export interface OllamaRequest {
  readonly request: Omit<GenerateRequest, 'requestId' | 'adapter'>;
  /** The prompt is empty: Ollama answers "load" without generating. */
  readonly loadOnly: boolean;
}

function engineRequest(body: CommonBody, prompt: PromptInput, maxSeqLen: number, ignored: string[]) {
  const options = mapOptions(body.options, { maxSeqLen });
  ignored.push(...options.ignored);
  const constraint = formatConstraint(body.format);
  const logprobs = body.logprobs === true || (body.top_logprobs ?? 0) > 0;
  return {
    prompt,
    params: {
      ...options.params,
      ...(logprobs ? { logprobs: true, topLogprobs: body.top_logprobs ?? 0 } : {}),
    },
    ...(constraint ? { constraint } : {}),
  };
}

export async function chatRequest(
  body: ChatBody,
  maxSeqLen: number,
  ignored: string[],
  media: MediaConfig,
): Promise<OllamaRequest> {
  const sent = (body.messages ?? []).map((m) => m.images);
  const { messages, images } = await withChatImages(chatMessages(body.messages ?? []), sent, media);
  const tools = chatTools(body);
  const prompt: PromptInput = {
    kind: 'chat',
    messages,
    ...(tools.length > 0 ? { tools } : {}),
    ...thinkKwargs(body.think),
  };
  return {
    request: { ...engineRequest(body, prompt, maxSeqLen, ignored), ...(images.length > 0 ? { images } : {}) },
    loadOnly: messages.length === 0,
  };
}

/**
 * `/api/generate`: the prompt as a user turn of the chat template, or as is with `raw`; its
 * `images` go before the prompt in that turn (a raw prompt has no place for them).
 */
export async function generateRequest(
  body: GenerateBody,
  maxSeqLen: number,
  ignored: string[],
  media: MediaConfig,
): Promise<OllamaRequest> {
  const text = body.prompt ?? '';
  if (body.raw === true && body.system) throw invalid('system', 'cannot be combined with raw (no template)');
  if (body.raw === true && body.think !== undefined && body.think !== null)
    throw invalid('think', 'cannot be combined with raw (no template)');
  const sent = body.images ?? [];
  if (body.raw === true && sent.length > 0)
    throw invalid('images', 'cannot be combined with raw (no template places them)');
  const { images, parts } = await decodeOllamaImages([{ images: sent, field: 'images', text }], media);
  const prompt: PromptInput =
    body.raw === true
      ? { kind: 'text', text }
      : {
          kind: 'chat',
          messages: [
            ...(body.system ? [{ role: 'system' as const, content: body.system }] : []),
            { role: 'user' as const, content: text, ...(parts[0] ? { parts: parts[0] } : {}) },
          ],
          ...thinkKwargs(body.think),
        };
  return {
    request: { ...engineRequest(body, prompt, maxSeqLen, ignored), ...(images.length > 0 ? { images } : {}) },
    loadOnly: text === '' && images.length === 0,
  };
}
