/**
 * llama.cpp server's tokenizer routes: `POST /tokenize` `{content, add_special, parse_special,
 * with_pieces}` → `{tokens}` (ids, or `{id, piece}` with pieces) and `POST /apply-template`
 * `{messages}` → `{prompt}`, the chat prompt text /v1/chat/completions would generate from.
 */
import type { Context } from 'koa';
import { chatSchema, toMessages, type ChatBody } from '../openai/chat.js';
import { toolPromptFields } from '../openai/chat-tools.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { notSupported } from '../shared/http-error.js';
import { noteUnknownFields } from '../shared/ignored-fields.js';
import { compileSchema, nullable } from '../shared/schema.js';

interface Tokenize {
  content: string;
  add_special?: boolean | null;
  parse_special?: boolean | null;
  with_pieces?: boolean | null;
}

const tokenizeSchema = {
  type: 'object',
  required: ['content'],
  properties: {
    content: { type: 'string' },
    add_special: nullable({ type: 'boolean' }),
    parse_special: nullable({ type: 'boolean' }),
    with_pieces: nullable({ type: 'boolean' }),
  },
};
const checkTokenize = compileSchema<Tokenize>(tokenizeSchema);

export async function handleLlamaTokenize(gw: GatewayContext, ctx: Context, raw: unknown): Promise<void> {
  const body = checkTokenize(raw);
  noteUnknownFields(ctx, raw, tokenizeSchema);
  // Special tokens written in the text always become their ids here.
  if (body.parse_special === false) throw notSupported('parse_special', 'tokenizing special tokens as text');
  const tokens = await gw.engine.tokenize(body.content, body.add_special ?? false);
  if (!body.with_pieces) {
    ctx.body = { tokens };
    return;
  }
  const pieces = (await gw.engine.detokenize(tokens)).tokens;
  ctx.body = { tokens: tokens.map((id, i) => ({ id, piece: pieces[i] })) };
}

type ApplyTemplate = Pick<ChatBody, 'messages' | 'tools' | 'tool_choice'> & {
  add_generation_prompt?: boolean | null;
  chat_template_kwargs?: Record<string, unknown> | null;
};

const applyTemplateSchema = {
  type: 'object',
  required: ['messages'],
  properties: {
    messages: chatSchema.properties.messages,
    tools: chatSchema.properties.tools,
    tool_choice: chatSchema.properties.tool_choice,
    add_generation_prompt: nullable({ type: 'boolean' }),
    chat_template_kwargs: nullable({ type: 'object' }),
  },
};
const checkApplyTemplate = compileSchema<ApplyTemplate>(applyTemplateSchema);

export async function handleApplyTemplate(gw: GatewayContext, ctx: Context, raw: unknown): Promise<void> {
  const body = checkApplyTemplate(raw);
  noteUnknownFields(ctx, raw, applyTemplateSchema);
  const { tools, toolChoice } = toolPromptFields(body, raw);
  ctx.body = {
    prompt: await gw.engine.applyChatTemplate(toMessages(body), body.add_generation_prompt ?? true, {
      ...(tools ? { tools } : {}),
      ...(toolChoice ? { toolChoice } : {}),
      ...(body.chat_template_kwargs ? { chatTemplateKwargs: body.chat_template_kwargs } : {}),
    }),
  };
}
