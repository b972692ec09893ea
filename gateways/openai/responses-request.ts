/**
 * The request side of POST /v1/responses: its schema, and `input` (text, or a list of items:
 * messages, function calls and their outputs, reasoning) with `instructions` onto the engine's
 * chat messages. What a stateless server cannot honour is refused naming the field:
 * `previous_response_id`, `store: true`, `conversation`, `background`, stored prompts, item
 * references, and tool types other than `function`.
 */
import type { ChatMessage, ChatTool, ContentPart, ToolChoice } from '../../engine/api.js';
import { invalid, notSupported } from '../shared/http-error.js';
import {
  contentParts,
  NO_IMAGES,
  partsText,
  type FoundImage,
  type ImageParts,
} from '../shared/images/image-parts.js';
import { checkImageDetail } from './chat-images.js';
import { compileSchema, nullable } from '../shared/schema.js';

const contentPart = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { type: 'string' },
    text: { type: 'string' },
    // input_image's
    image_url: { type: 'string' },
    file_id: nullable({ type: 'string' }),
    detail: nullable({ type: 'string' }),
  },
};

const inputItem = {
  type: 'object',
  properties: {
    type: { type: 'string' },
    role: { enum: ['user', 'assistant', 'system', 'developer'] },
    content: { anyOf: [{ type: 'string' }, { type: 'array', items: contentPart }] },
    call_id: { type: 'string', minLength: 1 },
    name: { type: 'string' },
    arguments: { type: 'string' },
    output: { anyOf: [{ type: 'string' }, { type: 'array', items: contentPart }] },
  },
};

export const responsesSchema = {
  type: 'object',
  required: ['input'],
  properties: {
    model: { type: 'string' },
    input: { anyOf: [{ type: 'string' }, { type: 'array', items: inputItem }] },
    instructions: nullable({ type: 'string' }),
    max_output_tokens: nullable({ type: 'integer', minimum: 1 }),
    temperature: nullable({ type: 'number', minimum: 0, maximum: 2 }),
    top_p: nullable({ type: 'number', exclusiveMinimum: 0, maximum: 1 }),
    top_logprobs: nullable({ type: 'integer', minimum: 0, maximum: 20 }),
    stream: nullable({ type: 'boolean' }),
    store: nullable({ type: 'boolean' }),
    background: nullable({ type: 'boolean' }),
    previous_response_id: nullable({ type: 'string' }),
    conversation: {},
    prompt: {},
    tools: nullable({
      type: 'array',
      maxItems: 128,
      items: {
        type: 'object',
        required: ['type'],
        properties: {
          type: { type: 'string' },
          name: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
          description: nullable({ type: 'string' }),
          parameters: nullable({ type: 'object' }),
          strict: nullable({ type: 'boolean' }),
        },
      },
    }),
    tool_choice: nullable({
      anyOf: [
        { enum: ['none', 'auto', 'required'] },
        {
          type: 'object',
          required: ['type'],
          properties: { type: { type: 'string' }, name: { type: 'string' } },
        },
      ],
    }),
    parallel_tool_calls: nullable({ type: 'boolean' }),
    text: nullable({
      type: 'object',
      properties: {
        format: nullable({
          type: 'object',
          required: ['type'],
          properties: {
            type: { enum: ['text', 'json_object', 'json_schema'] },
            name: { type: 'string' },
            schema: { type: 'object' },
            description: nullable({ type: 'string' }),
            strict: nullable({ type: 'boolean' }),
          },
        }),
        verbosity: nullable({ enum: ['low', 'medium', 'high'] }),
      },
    }),
    reasoning: nullable({
      type: 'object',
      properties: {
        effort: nullable({ enum: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] }),
        summary: nullable({ enum: ['auto', 'concise', 'detailed'] }),
        generate_summary: nullable({ enum: ['auto', 'concise', 'detailed'] }),
      },
    }),
    truncation: nullable({ enum: ['auto', 'disabled'] }),
    include: nullable({ type: 'array', items: { type: 'string' } }),
    metadata: nullable({
      type: 'object',
      maxProperties: 16,
      additionalProperties: { type: 'string', maxLength: 512 },
    }),
    user: nullable({ type: 'string' }),
    safety_identifier: nullable({ type: 'string' }),
    prompt_cache_key: nullable({ type: 'string' }),
    service_tier: nullable({ enum: ['auto', 'default', 'flex', 'scale', 'priority'] }),
    stream_options: nullable({ type: 'object' }),
    seed: nullable({ type: 'integer', minimum: 0 }),
  },
};

interface ResponsesContentPart {
  type: string;
  text?: string;
  image_url?: string;
  file_id?: string | null;
  detail?: string | null;
}

interface ResponsesInputItem {
  type?: string;
  role?: 'user' | 'assistant' | 'system' | 'developer';
  content?: string | ResponsesContentPart[];
  call_id?: string;
  name?: string;
  arguments?: string;
  output?: string | ResponsesContentPart[];
}

interface ResponsesFunctionTool {
  type: string;
  name?: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  strict?: boolean | null;
}

interface ResponsesTextFormat {
  type: 'text' | 'json_object' | 'json_schema';
  name?: string;
  schema?: Record<string, unknown>;
  description?: string | null;
  strict?: boolean | null;
}

export interface ResponsesBody {
  model?: string;
  input: string | ResponsesInputItem[];
  instructions?: string | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_logprobs?: number | null;
  stream?: boolean | null;
  store?: boolean | null;
  background?: boolean | null;
  previous_response_id?: string | null;
  conversation?: unknown;
  prompt?: unknown;
  tools?: ResponsesFunctionTool[] | null;
  tool_choice?: 'none' | 'auto' | 'required' | { type: string; name?: string } | null;
  parallel_tool_calls?: boolean | null;
  text?: { format?: ResponsesTextFormat | null; verbosity?: string | null } | null;
  reasoning?: { effort?: string | null; summary?: string | null; generate_summary?: string | null } | null;
  truncation?: 'auto' | 'disabled' | null;
  include?: string[] | null;
  metadata?: Record<string, string> | null;
  user?: string | null;
  service_tier?: string | null;
  seed?: number | null;
}

export const validateResponses = compileSchema<ResponsesBody>(responsesSchema);

/** `include` values this server fills; others (encrypted reasoning, hosted tools' results) have nothing to fill. */
export const LOGPROBS_INCLUDE = 'message.output_text.logprobs';

/**
 * The request fields a stateless server cannot honour. Prism keeps no responses: every request
 * carries its whole conversation in `input` (what the Agents SDK and `store: false` clients
 * do), so a second gateway replica answers it as well as the first.
 */
export function refuseStateful(body: ResponsesBody): void {
  if (body.previous_response_id != null)
    throw notSupported(
      'previous_response_id',
      'continuing a stored response (this server stores no responses: send the conversation in input)',
    );
  if (body.store === true)
    throw notSupported('store', 'storing responses (send store: false or leave it out)');
  if (body.conversation != null)
    throw notSupported('conversation', 'server-side conversations (send the conversation in input)');
  if (body.background === true) throw notSupported('background', 'background responses');
  if (body.prompt != null) throw notSupported('prompt', 'stored prompt templates');
  if (body.truncation === 'auto')
    throw notSupported('truncation', "'auto' (dropping input items to fit the context)");
}

/** A message's `input_image` parts (a URL: data:, file:// or http(s); stored files are not kept here). */
export function findResponsesImages(body: ResponsesBody): FoundImage[] {
  const found: FoundImage[] = [];
  if (typeof body.input === 'string') return found;
  body.input.forEach((item, i) => {
    if ((item.type ?? 'message') !== 'message' || !Array.isArray(item.content)) return;
    item.content.forEach((part, j) => {
      if (part.type !== 'input_image') return;
      const field = `input[${i}].content[${j}]`;
      if (part.file_id != null) throw notSupported(`${field}.file_id`, 'stored files (send image_url)');
      if (part.image_url === undefined)
        throw invalid(`${field}.image_url`, "is required in an 'input_image' part");
      checkImageDetail(part.detail, `${field}.detail`);
      found.push({ part, url: part.image_url, field: `${field}.image_url` });
    });
  });
  return found;
}

const TEXT_PARTS = ['input_text', 'output_text', 'text', 'refusal'];

/** A function call output's text (it takes no images). */
function textOf(content: string | ResponsesContentPart[] | undefined, field: string): string {
  return contentOf(content, field, undefined).content;
}

/** A content list's text joined, and its parts in order when it holds images. */
function contentOf(
  content: string | ResponsesContentPart[] | undefined,
  field: string,
  images: ImageParts | undefined,
): { content: string; parts?: ContentPart[] } {
  if (content === undefined) return { content: '' };
  if (typeof content === 'string') return { content };
  const parts = contentParts(content, images ?? NO_IMAGES, (p, j) => {
    const part = p as ResponsesContentPart;
    if (!TEXT_PARTS.includes(part.type))
      throw notSupported(
        `${field}[${j}].type`,
        `content part type '${part.type}' (only text and input_image)`,
      );
    if (typeof part.text !== 'string') throw invalid(`${field}[${j}].text`, 'is required');
    return part.text;
  });
  const text = partsText(parts);
  return parts.some((p) => p.type === 'image') ? { content: text, parts } : { content: text };
}

/**
 * `instructions` and `input` → the chat messages the engine renders with the model's template.
 * Function calls made by the assistant join the assistant turn they follow; a function call's
 * output becomes a tool message naming its function. A reasoning item's text is the
 * `reasoning_content` of the assistant turn after it (the template renders it where it
 * renders past reasoning, Qwen3's within the current tool-call turn, or drops it).
 */
export function toChatMessages(body: ResponsesBody, images: ImageParts = NO_IMAGES): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (body.instructions) messages.push({ role: 'system', content: body.instructions });
  if (typeof body.input === 'string') {
    messages.push({ role: 'user', content: body.input });
    return messages;
  }
  const callNames = new Map<string, string>();
  let reasoning: string | undefined;
  /** The assistant turn an item adds to, with the reasoning before it. */
  const assistant = (m: ChatMessage): ChatMessage => {
    if (reasoning === undefined) return m;
    const withReasoning = { ...m, reasoningContent: reasoning };
    reasoning = undefined;
    return withReasoning;
  };
  body.input.forEach((item, i) => {
    const field = `input[${i}]`;
    const type = item.type ?? 'message';
    switch (type) {
      case 'message': {
        if (item.role === undefined) throw invalid(`${field}.role`, 'is required for a message');
        const m: ChatMessage = {
          role: item.role === 'developer' ? 'system' : item.role,
          ...contentOf(item.content, `${field}.content`, images),
        };
        messages.push(m.role === 'assistant' ? assistant(m) : m);
        return;
      }
      case 'function_call': {
        if (item.call_id === undefined) throw invalid(`${field}.call_id`, 'is required');
        if (item.name === undefined) throw invalid(`${field}.name`, 'is required');
        if (item.arguments === undefined) throw invalid(`${field}.arguments`, 'is required');
        callNames.set(item.call_id, item.name);
        const call = {
          id: item.call_id,
          type: 'function' as const,
          function: { name: item.name, arguments: item.arguments },
        };
        const last = messages[messages.length - 1];
        if (last?.role === 'assistant') {
          messages[messages.length - 1] = assistant({
            ...last,
            toolCalls: [...(last.toolCalls ?? []), call],
          });
        } else {
          messages.push(assistant({ role: 'assistant', content: '', toolCalls: [call] }));
        }
        return;
      }
      case 'function_call_output': {
        if (item.call_id === undefined) throw invalid(`${field}.call_id`, 'is required');
        if (item.output === undefined) throw invalid(`${field}.output`, 'is required');
        const name = callNames.get(item.call_id);
        if (name === undefined)
          throw invalid(
            `${field}.call_id`,
            `'${item.call_id}' is not the call_id of an earlier function_call item`,
          );
        messages.push({
          role: 'tool',
          content: textOf(item.output, `${field}.output`),
          toolCallId: item.call_id,
          name,
        });
        return;
      }
      case 'reasoning': {
        const parts = Array.isArray(item.content) ? item.content : [];
        const text = parts.map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
        if (text !== '') reasoning = (reasoning ?? '') + text;
        return;
      }
      case 'item_reference':
        throw notSupported(`${field}.type`, "'item_reference' (this server stores no items)");
      default:
        throw notSupported(`${field}.type`, `input item type '${type}'`);
    }
  });
  if (messages.length === 0) throw invalid('input', 'must hold at least one message');
  return messages;
}

/** `tools` (function tools only) and `tool_choice` → the engine's chat prompt fields. */
export function toolFields(body: ResponsesBody): {
  tools?: ChatTool[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
} {
  const tools = (body.tools ?? []).map((t, i): ChatTool => {
    if (t.type !== 'function')
      throw notSupported(`tools[${i}].type`, `tool type '${t.type}' (only 'function')`);
    if (t.name === undefined) throw invalid(`tools[${i}].name`, 'is required');
    return {
      name: t.name,
      ...(t.description != null ? { description: t.description } : {}),
      ...(t.parameters != null ? { parameters: t.parameters } : {}),
    };
  });
  const choice = body.tool_choice ?? undefined;
  let toolChoice: ToolChoice | undefined;
  if (typeof choice === 'object') {
    if (choice.type !== 'function')
      throw notSupported('tool_choice.type', `'${choice.type}' (only 'function' or a mode)`);
    if (choice.name === undefined) throw invalid('tool_choice.name', 'is required');
    if (!tools.some((t) => t.name === choice.name))
      throw invalid('tool_choice.name', `'${choice.name}' is not one of the tools`);
    toolChoice = { function: choice.name };
  } else if (choice !== undefined) {
    if (choice === 'required' && tools.length === 0) throw invalid('tool_choice', 'needs tools');
    toolChoice = choice;
  }
  return {
    ...(tools.length > 0 ? { tools } : {}),
    ...(toolChoice !== undefined && tools.length > 0 ? { toolChoice } : {}),
    ...(body.parallel_tool_calls != null ? { parallelToolCalls: body.parallel_tool_calls } : {}),
  };
}
