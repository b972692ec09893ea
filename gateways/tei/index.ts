/**
 * The Text Embeddings Inference family (service listener): /embed, /embed_all, /predict, and
 * the two routes it shares with other families, told apart here: POST /rerank (a body with
 * `texts` is TEI's, one with `documents` vLLM's / Jina's), and GET /info and POST / (TEI's for a
 * pooling model, TGI's for a generation model).
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { openaiErrorFormat } from '../openai/errors.js';
import { readJsonBody } from '../shared/body.js';
import { errorBoundary } from '../shared/error-boundary.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { toHttpError } from '../shared/http-error.js';
import { tgiErrorFormat } from '../tgi/errors.js';
import { handleRerank } from '../vllm/pooling.js';
import { handleEmbed, handlePredict, handleTeiRerank, teiInfo } from './routes.js';

/** TEI answers errors as TGI does: {"error", "error_type"}, 422 for bad input. */
const teiErrorFormat = tgiErrorFormat;

async function dispatchRerank(gw: GatewayContext, ctx: Context): Promise<void> {
  let tei = true;
  try {
    const body = await readJsonBody(ctx, gw.config.maxRequestBytes);
    tei = body === null || typeof body !== 'object' || !('documents' in body);
    ctx.state.family = tei ? 'tei' : 'vllm';
    if (tei) await handleTeiRerank(gw, ctx, body);
    else await handleRerank(gw, ctx, body, false);
  } catch (err) {
    if (ctx.respond === false) return;
    const reply = (tei ? teiErrorFormat : openaiErrorFormat)(toHttpError(err));
    ctx.status = reply.status;
    ctx.body = reply.body;
  }
}

export function teiRouter(gw: GatewayContext): Router {
  const router = new Router();
  const boundary = errorBoundary(teiErrorFormat);
  const json = (ctx: Context) => readJsonBody(ctx, gw.config.maxRequestBytes);
  router.post('/embed', boundary, async (ctx) => handleEmbed(gw, ctx, await json(ctx), false));
  router.post('/embed_all', boundary, async (ctx) => handleEmbed(gw, ctx, await json(ctx), true));
  router.post('/predict', boundary, async (ctx) => handlePredict(gw, ctx, await json(ctx)));
  router.post('/rerank', (ctx) => dispatchRerank(gw, ctx));
  return router;
}

/** True when the served model is a pooling model: `/info` and `POST /` are TEI's then. */
export const servesPooling = (gw: GatewayContext): boolean => gw.info.pooling !== undefined;

/** GET /info of a pooling model (TEI's shape). */
export function handleTeiInfo(gw: GatewayContext, ctx: Context): void {
  ctx.body = teiInfo(gw);
}

/** POST / of a pooling model (TEI's compat route): embed for an embedder, predict for a classifier. */
export async function handleTeiRoot(gw: GatewayContext, ctx: Context, body: unknown): Promise<void> {
  ctx.state.family = 'tei';
  if (gw.info.pooling!.tasks.includes('embed')) await handleEmbed(gw, ctx, body, false);
  else await handlePredict(gw, ctx, body);
}
