/**
 * An Anthropic Messages request → one engine chat request: `system` (a string or text blocks)
 * as the system message, each message's content blocks (text, image, tool_use, tool_result,
 * thinking) as the engine's chat messages, `tools` / `tool_choice` as the engine's tools, and
 * the sampling fields. Anthropic's API refuses fields it does not know (400), and so does this;
 * every block type it cannot serve (documents, search results, server tools) is a 400 naming
 * it. Image blocks (images.ts) are decoded by the shared image path before the messages are
 * built; a user message holding one carries its parts in order, as OpenAI's image parts do.
 */
import type {
  ChatMessage,
  ChatTool,
  ChatToolCall,
  Constraint,
  ContentPart,
  SamplingParams,
  ToolChoice,
} from '../../engine/api.js';
import { invalid, notSupported } from '../shared/http-error.js';
import type { ImageParts } from '../shared/images/image-parts.js';
import { compileSchema } from '../shared/schema.js';
import { schemaConstraint } from '../shared/structured.js';
import { onlyFields, stringField, type Block } from './blocks.js';
import { imageMisplaced } from './images.js';

const cacheControl = {
  type: 'object',
  properties: { type: { const: 'ephemeral' }, ttl: { type: 'string' } },
};

const messagesSchema = {
  type: 'object',
  required: ['model', 'messages', 'max_tokens'],
  additionalProperties: false,
  properties: {
    model: { type: 'string', minLength: 1 },
    max_tokens: { type: 'integer', minimum: 1 },
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role', 'content'],
        additionalProperties: false,
        properties: {
          role: { enum: ['user', 'assistant'] },
          content: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }] },
        },
      },
    },
    system: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }] },
    stop_sequences: { type: 'array', maxItems: 32, items: { type: 'string', minLength: 1 } },
    stream: { type: 'boolean' },
    temperature: { type: 'number', minimum: 0, maximum: 1 },
    top_p: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
    top_k: { type: 'integer', minimum: 1 },
    metadata: {
      type: 'object',
      additionalProperties: false,
      properties: { user_id: { anyOf: [{ type: 'string', maxLength: 256 }, { type: 'null' }] } },
    },
    tools: {
      type: 'array',
      maxItems: 128,
      items: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
          description: { type: 'string' },
          input_schema: { type: 'object' },
          type: { type: 'string' },
          cache_control: cacheControl,
        },
      },
    },
    tool_choice: {
      type: 'object',
      required: ['type'],
      additionalProperties: false,
      properties: {
        type: { enum: ['auto', 'any', 'tool', 'none'] },
        name: { type: 'string' },
        disable_parallel_tool_use: { type: 'boolean' },
      },
    },
    thinking: {
      type: 'object',
      required: ['type'],
      additionalProperties: false,
      properties: {
        type: { enum: ['enabled', 'disabled', 'adaptive'] },
        budget_tokens: { type: 'integer', minimum: 1024 },
        display: { anyOf: [{ enum: ['summarized', 'omitted'] }, { type: 'null' }] },
      },
    },
    output_config: {
      type: 'object',
      additionalProperties: false,
      properties: {
        effort: { anyOf: [{ enum: ['low', 'medium', 'high', 'xhigh', 'max'] }, { type: 'null' }] },
        format: {
          anyOf: [
            {
              type: 'object',
              required: ['type', 'schema'],
              additionalProperties: false,
              properties: { type: { const: 'json_schema' }, schema: { type: 'object' } },
            },
            { type: 'null' },
          ],
        },
      },
    },
    // Prompt caching is automatic here (the prefix cache): the hint is taken as met.
    cache_control: cacheControl,
    service_tier: { enum: ['auto', 'standard_only'] },
  },
};

export interface MessagesBody {
  model: string;
  max_tokens: number;
  messages: { role: 'user' | 'assistant'; content: string | Block[] }[];
  system?: string | Block[];
  stop_sequences?: string[];
  stream?: boolean;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  metadata?: { user_id?: string | null };
  tools?: { name: string; description?: string; input_schema?: object; type?: string }[];
  tool_choice?: {
    type: 'auto' | 'any' | 'tool' | 'none';
    name?: string;
    disable_parallel_tool_use?: boolean;
  };
  thinking?: {
    type: 'enabled' | 'disabled' | 'adaptive';
    budget_tokens?: number;
    display?: 'summarized' | 'omitted' | null;
  };
  output_config?: {
    effort?: string | null;
    format?: { type: 'json_schema'; schema: Record<string, unknown> } | null;
  };
  cache_control?: object;
  service_tier?: 'auto' | 'standard_only';
}

export const validateMessages = compileSchema<MessagesBody>(messagesSchema);

/** count_tokens takes the prompt fields only (no max_tokens, sampling or stream). */
const countSchema = {
  ...messagesSchema,
  required: ['model', 'messages'],
  properties: Object.fromEntries(
    ['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'output_config', 'cache_control'].map(
      (k) => [k, (messagesSchema.properties as Record<string, unknown>)[k]],
    ),
  ),
};
export const validateCountTokens = compileSchema<MessagesBody>(countSchema);

/** Blocks no model here can take: refused with the block's own path. */
function refuseBlock(type: unknown, at: string): never {
  if (type === 'document' || type === 'search_result')
    throw notSupported(`${at}.type`, `content block type '${String(type)}'`);
  throw invalid(`${at}.type`, `unknown content block type ${JSON.stringify(type)}`);
}

/**
 * An image block's part: its image among the request's (`images`, decoded from
 * findMessageImages' list). count_tokens reads no images (`images` undefined): an image's
 * tokens depend on the tiles the model's processor cuts it into, which only the engine knows.
 */
function imagePart(block: Block, at: string, images: ImageParts | undefined): ContentPart {
  if (images === undefined)
    throw notSupported(
      `${at}.type`,
      "counting an image block's tokens (POST /v1/messages reports them in usage.input_tokens)",
    );
  const image = images.indexOf(block);
  if (image === undefined) throw new Error(`${at}: an image block missing from the request's images`);
  return { type: 'image', image };
}

/** A message's (or tool result's) text and image parts in order; text blocks join with newlines. */
class PartList {
  readonly parts: ContentPart[] = [];
  private readonly texts: string[] = [];
  private images = 0;

  text(t: string): void {
    this.parts.push({ type: 'text', text: this.texts.length > 0 ? `\n${t}` : t });
    this.texts.push(t);
  }

  image(part: ContentPart): void {
    this.parts.push(part);
    this.images++;
  }

  get empty(): boolean {
    return this.parts.length === 0;
  }

  /** The text blocks joined (`content`), and the parts when an image is among them. */
  content(prefix = ''): { content: string; parts?: ContentPart[] } {
    const content = prefix + this.texts.join('\n');
    if (this.images === 0) return { content };
    return { content, parts: prefix ? [{ type: 'text', text: prefix }, ...this.parts] : this.parts };
  }
}

/** A text block's text (`citations` must be absent or null: none are made here). */
function textOf(block: Block, at: string): string {
  onlyFields(block, ['text', 'citations'], at);
  if (block.citations !== undefined && block.citations !== null)
    throw notSupported(`${at}.citations`, 'citations');
  return stringField(block, 'text', at);
}

/** `system`: a string or a list of text blocks, joined by newlines. */
function systemText(system: MessagesBody['system']): string | undefined {
  if (system === undefined) return undefined;
  if (typeof system === 'string') return system;
  return system
    .map((b, i) => {
      if (b.type === 'image') imageMisplaced(`system[${i}]`);
      if (b.type !== 'text') refuseBlock(b.type, `system[${i}]`);
      return textOf(b, `system[${i}]`);
    })
    .join('\n');
}

/**
 * A tool_result's content: a string, or text and image blocks; `is_error` says it reports a
 * failure. Its images are the tool message's parts.
 */
function toolResultContent(
  block: Block,
  at: string,
  images: ImageParts | undefined,
): { content: string; parts?: ContentPart[] } {
  onlyFields(block, ['tool_use_id', 'content', 'is_error'], at);
  const content = block.content;
  const list = new PartList();
  if (content === undefined) list.text('');
  else if (typeof content === 'string') list.text(content);
  else if (Array.isArray(content)) {
    content.forEach((b: Block, j) => {
      const inner = `${at}.content[${j}]`;
      if (b === null || typeof b !== 'object') refuseBlock(undefined, inner);
      if (b.type === 'image') list.image(imagePart(b, inner, images));
      else if (b.type === 'text') list.text(textOf(b, inner));
      else refuseBlock(b.type, inner);
    });
  } else throw invalid(`${at}.content`, 'must be a string or a list of text and image blocks');
  if (block.is_error !== undefined && typeof block.is_error !== 'boolean')
    throw invalid(`${at}.is_error`, 'must be a boolean');
  // The chat templates have no error flag on a tool message: the model reads it in the text.
  return list.content(block.is_error === true ? 'Error: ' : '');
}

/** One Anthropic message → the engine's messages (a user turn's tool results come first, as tool messages). */
function toEngineMessages(
  m: MessagesBody['messages'][number],
  i: number,
  images: ImageParts | undefined,
): ChatMessage[] {
  const at = `messages[${i}].content`;
  if (typeof m.content === 'string') return [{ role: m.role, content: m.content }];
  const list = new PartList();
  const reasoning: string[] = [];
  const calls: ChatToolCall[] = [];
  const results: ChatMessage[] = [];
  m.content.forEach((block, j) => {
    const b = `${at}[${j}]`;
    switch (block.type) {
      case 'text':
        list.text(textOf(block, b));
        return;
      case 'image':
        if (m.role !== 'user') imageMisplaced(b);
        list.image(imagePart(block, b, images));
        return;
      case 'tool_use': {
        if (m.role !== 'assistant')
          throw invalid(`${b}.type`, 'tool_use blocks belong to assistant messages');
        onlyFields(block, ['id', 'name', 'input', 'caller', 'toolset_name'], b);
        // What the SDKs echo back from a response: a call the model made itself, outside any toolset.
        const caller = block.caller as { type?: unknown } | null | undefined;
        if (caller !== undefined && caller !== null && caller.type !== 'direct')
          throw notSupported(`${b}.caller`, 'calls made by server tools');
        if (block.toolset_name !== undefined && block.toolset_name !== null)
          throw notSupported(`${b}.toolset_name`, 'toolsets');
        const input = block.input;
        if (input === null || typeof input !== 'object' || Array.isArray(input))
          throw invalid(`${b}.input`, 'must be an object');
        calls.push({
          id: stringField(block, 'id', b),
          type: 'function',
          function: { name: stringField(block, 'name', b), arguments: JSON.stringify(input) },
        });
        return;
      }
      case 'tool_result':
        if (m.role !== 'user') throw invalid(`${b}.type`, 'tool_result blocks belong to user messages');
        results.push({
          role: 'tool',
          toolCallId: stringField(block, 'tool_use_id', b),
          ...toolResultContent(block, b, images),
        });
        return;
      case 'thinking':
        if (m.role !== 'assistant')
          throw invalid(`${b}.type`, 'thinking blocks belong to assistant messages');
        onlyFields(block, ['thinking', 'signature'], b);
        reasoning.push(stringField(block, 'thinking', b));
        return;
      case 'redacted_thinking':
        // Another provider's encrypted reasoning: nothing a template could render.
        onlyFields(block, ['data'], b);
        return;
      default:
        refuseBlock(block.type, b);
    }
  });
  const out: ChatMessage[] = [...results];
  if (!list.empty || calls.length > 0 || results.length === 0) {
    out.push({
      role: m.role,
      ...list.content(),
      ...(calls.length > 0 ? { toolCalls: calls } : {}),
      ...(reasoning.length > 0 ? { reasoningContent: reasoning.join('\n') } : {}),
    });
  }
  return out;
}

/**
 * The whole conversation: the system prompt, then every message's engine messages; `images`:
 * the request's decoded image blocks (absent for count_tokens, which refuses them).
 */
export function engineMessages(
  body: Pick<MessagesBody, 'system' | 'messages'>,
  images?: ImageParts,
): ChatMessage[] {
  const system = systemText(body.system);
  const last = body.messages[body.messages.length - 1];
  if (last.role === 'assistant')
    throw notSupported(
      `messages[${body.messages.length - 1}].role`,
      'a final assistant message (continuing a prefilled answer)',
    );
  return [
    ...(system !== undefined ? [{ role: 'system' as const, content: system }] : []),
    ...body.messages.flatMap((m, i) => toEngineMessages(m, i, images)),
  ];
}

/** `tools` and `tool_choice` as the engine's chat prompt fields. */
export function engineTools(body: Pick<MessagesBody, 'tools' | 'tool_choice'>): {
  tools?: ChatTool[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
} {
  const tools = (body.tools ?? []).map((t, i): ChatTool => {
    // Anthropic's server tools (web search, code execution, computer use...) have a versioned type.
    if (t.type !== undefined && t.type !== 'custom')
      throw notSupported(`tools[${i}].type`, `tool type '${t.type}' (only custom tools)`);
    if (t.input_schema === undefined) throw invalid(`tools[${i}].input_schema`, 'is required');
    return {
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      parameters: t.input_schema as Record<string, unknown>,
    };
  });
  const choice = body.tool_choice;
  let toolChoice: ToolChoice | undefined;
  if (choice !== undefined) {
    if (choice.type !== 'tool' && choice.name !== undefined)
      throw invalid('tool_choice.name', "is only allowed when type is 'tool'");
    if (choice.type === 'tool') {
      if (choice.name === undefined) throw invalid('tool_choice.name', "is required when type is 'tool'");
      if (!tools.some((t) => t.name === choice.name))
        throw invalid('tool_choice.name', `'${choice.name}' is not one of the tools`);
      toolChoice = { function: choice.name };
    } else toolChoice = choice.type === 'any' ? 'required' : choice.type;
    if (toolChoice !== 'none' && toolChoice !== 'auto' && tools.length === 0)
      throw invalid('tool_choice', 'needs tools');
  }
  return {
    ...(tools.length > 0 ? { tools } : {}),
    ...(toolChoice !== undefined ? { toolChoice } : {}),
    ...(choice?.disable_parallel_tool_use === true ? { parallelToolCalls: false } : {}),
  };
}

/**
 * `output_config`: `format` is structured output (the schema rules of every family); `effort`
 * has no counterpart in the engine (no model family here has levels of effort) and is refused.
 */
export function engineConstraint(body: Pick<MessagesBody, 'output_config'>): Constraint | undefined {
  const out = body.output_config;
  if (out?.effort !== undefined && out.effort !== null) throw notSupported('output_config.effort', 'effort');
  if (!out?.format) return undefined;
  return schemaConstraint(out.format.schema, 'output_config.format.schema');
}

/**
 * The sampling fields. Stop sequences come back in the output (`includeStopStrInOutput`) so
 * that the answer can say which one stopped it (`stop_sequence`); the mapping cuts it off.
 */
export function engineParams(body: MessagesBody): SamplingParams {
  const thinking = body.thinking;
  if (thinking?.type === 'enabled') {
    const budget = thinking.budget_tokens;
    if (budget === undefined) throw invalid('thinking.budget_tokens', "is required when type is 'enabled'");
    if (budget >= body.max_tokens) throw invalid('thinking.budget_tokens', 'must be less than max_tokens');
  } else if (thinking?.budget_tokens !== undefined)
    throw invalid('thinking.budget_tokens', "is only allowed when type is 'enabled'");
  return {
    maxNewTokens: body.max_tokens,
    ...(body.temperature !== undefined ? { temperature: body.temperature } : {}),
    ...(body.top_p !== undefined ? { topP: body.top_p } : {}),
    ...(body.top_k !== undefined ? { topK: body.top_k } : {}),
    ...(body.stop_sequences?.length ? { stop: body.stop_sequences, includeStopStrInOutput: true } : {}),
  };
}
