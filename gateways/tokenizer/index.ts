/**
 * The tokenizer routes of vLLM and llama.cpp server, which share their paths (service listener):
 *
 *   POST /tokenize      a body with `content` is llama.cpp's (llamacpp.ts); one with `prompt`
 *                       or `messages` is vLLM's (vllm.ts); anything else is a 400 naming both
 *   POST /detokenize    `{tokens}` in both; the answer carries vLLM's `prompt` and llama.cpp's
 *                       `content`, the same text, so either client reads it
 *   POST /apply-template  llama.cpp's (llamacpp.ts)
 *
 * Errors are OpenAI-shaped (`{"error": {"message", "type", ...}}`), as both servers answer them.
 * Unknown fields are answered and named as ignored (shared/ignored-fields.ts), as both servers
 * ignore them (vLLM with a warning).
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { openaiErrorFormat } from '../openai/errors.js';
import { readJsonBody } from '../shared/body.js';
import { errorBoundary } from '../shared/error-boundary.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { resolveServedModel } from '../shared/gateway-context.js';
import { invalid } from '../shared/http-error.js';
import { noteUnknownFields } from '../shared/ignored-fields.js';
import { compileSchema, nullable } from '../shared/schema.js';
import { handleApplyTemplate, handleLlamaTokenize } from './llamacpp.js';
import { handleVllmTokenize } from './vllm.js';

function object(raw: unknown): Record<string, unknown> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw invalid('request body', 'must be a JSON object');
  return raw as Record<string, unknown>;
}

async function handleTokenize(gw: GatewayContext, ctx: Context): Promise<void> {
  const body = object(await readJsonBody(ctx, gw.config.maxRequestBytes));
  if ('content' in body) return handleLlamaTokenize(gw, ctx, body);
  if ('prompt' in body || 'messages' in body) return handleVllmTokenize(gw, ctx, body);
  throw invalid(
    'request body',
    "needs `content` (llama.cpp's /tokenize), or `prompt` or `messages` (vLLM's /tokenize)",
  );
}

const detokenizeSchema = {
  type: 'object',
  required: ['tokens'],
  properties: {
    tokens: { type: 'array', items: { type: 'integer', minimum: 0 } },
    model: nullable({ type: 'string' }),
  },
};
const checkDetokenize = compileSchema<{ tokens: number[]; model?: string | null }>(detokenizeSchema);

async function handleDetokenize(gw: GatewayContext, ctx: Context): Promise<void> {
  const raw = await readJsonBody(ctx, gw.config.maxRequestBytes);
  const body = checkDetokenize(raw);
  noteUnknownFields(ctx, raw, detokenizeSchema);
  await resolveServedModel(gw, body.model);
  const { text } = await gw.engine.detokenize(body.tokens);
  ctx.body = { prompt: text, content: text };
}

export function tokenizerRouter(gw: GatewayContext): Router {
  const router = new Router();
  const boundary = errorBoundary(openaiErrorFormat);
  router.post('/tokenize', boundary, (ctx) => handleTokenize(gw, ctx));
  router.post('/detokenize', boundary, (ctx) => handleDetokenize(gw, ctx));
  router.post('/apply-template', boundary, async (ctx) =>
    handleApplyTemplate(gw, ctx, await readJsonBody(ctx, gw.config.maxRequestBytes)),
  );
  return router;
}
