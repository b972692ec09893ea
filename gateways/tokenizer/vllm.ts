/**
 * vLLM's tokenizer routes. `POST /tokenize` with `prompt` (text) or `messages` (a chat,
 * rendered with the model's template as /v1/chat/completions renders it: `tools`,
 * `chat_template_kwargs`, `add_generation_prompt`) → `{count, max_model_len, tokens,
 * token_strs}`; `POST /detokenize` `{tokens}` → `{prompt}` (see index.ts for the llama.cpp
 * bodies on the same paths).
 */
import type { Context } from 'koa';
import { chatSchema, toMessages, type ChatBody } from '../openai/chat.js';
import { toolPromptFields } from '../openai/chat-tools.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { resolveServedModel } from '../shared/gateway-context.js';
import { notSupported } from '../shared/http-error.js';
import { noteUnknownFields } from '../shared/ignored-fields.js';
import { compileSchema, nullable } from '../shared/schema.js';

const shared = {
  model: nullable({ type: 'string' }),
  add_special_tokens: nullable({ type: 'boolean' }),
  return_token_strs: nullable({ type: 'boolean' }),
};

const completionSchema = {
  type: 'object',
  required: ['prompt'],
  properties: { ...shared, prompt: { type: 'string' } },
};

const chatTokenizeSchema = {
  type: 'object',
  required: ['messages'],
  properties: {
    ...shared,
    messages: chatSchema.properties.messages,
    tools: chatSchema.properties.tools,
    tool_choice: chatSchema.properties.tool_choice,
    add_generation_prompt: nullable({ type: 'boolean' }),
    continue_final_message: nullable({ type: 'boolean' }),
    chat_template: nullable({ type: 'string' }),
    chat_template_kwargs: nullable({ type: 'object' }),
  },
};

interface Shared {
  model?: string | null;
  add_special_tokens?: boolean | null;
  return_token_strs?: boolean | null;
}
type CompletionTokenize = Shared & { prompt: string };
type ChatTokenize = Shared &
  Pick<ChatBody, 'messages' | 'tools' | 'tool_choice'> & {
    add_generation_prompt?: boolean | null;
    continue_final_message?: boolean | null;
    chat_template?: string | null;
    chat_template_kwargs?: Record<string, unknown> | null;
  };

const checkCompletion = compileSchema<CompletionTokenize>(completionSchema);
const checkChat = compileSchema<ChatTokenize>(chatTokenizeSchema);

/** The prompt's text and whether the tokenizer adds its special tokens (vLLM: yes for text, no for a chat). */
async function promptText(
  gw: GatewayContext,
  ctx: Context,
  raw: Record<string, unknown>,
): Promise<[string, boolean, Shared]> {
  if (!('messages' in raw)) {
    const body = checkCompletion(raw);
    noteUnknownFields(ctx, raw, completionSchema);
    return [body.prompt, body.add_special_tokens ?? true, body];
  }
  const body = checkChat(raw);
  noteUnknownFields(ctx, raw, chatTokenizeSchema);
  if (body.continue_final_message)
    throw notSupported('continue_final_message', 'continuing the final message');
  if (body.chat_template) throw notSupported('chat_template', 'a chat template per request');
  const { tools, toolChoice } = toolPromptFields(body, raw);
  const text = await gw.engine.applyChatTemplate(toMessages(body), body.add_generation_prompt ?? true, {
    ...(tools ? { tools } : {}),
    ...(toolChoice ? { toolChoice } : {}),
    ...(body.chat_template_kwargs ? { chatTemplateKwargs: body.chat_template_kwargs } : {}),
  });
  return [text, body.add_special_tokens ?? false, body];
}

export async function handleVllmTokenize(
  gw: GatewayContext,
  ctx: Context,
  raw: Record<string, unknown>,
): Promise<void> {
  const [text, addSpecial, body] = await promptText(gw, ctx, raw);
  await resolveServedModel(gw, body.model);
  const tokens = await gw.engine.tokenize(text, addSpecial);
  const strs = body.return_token_strs ? (await gw.engine.detokenize(tokens)).tokens : null;
  ctx.body = { count: tokens.length, max_model_len: gw.info.maxSeqLen, tokens, token_strs: strs };
}
