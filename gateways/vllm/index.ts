/**
 * vLLM's own routes besides POST /generate (which it shares with TGI: tgi/index.ts tells them
 * apart): the pooling routes of gateways/vllm/pooling.ts. POST /rerank is shared with TEI and
 * dispatched in gateways/tei/. Errors in the OpenAI shape, as vLLM's server answers them.
 */
import Router from '@koa/router';
import { openaiErrorFormat } from '../openai/errors.js';
import { readJsonBody } from '../shared/body.js';
import { errorBoundary } from '../shared/error-boundary.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { handleClassify, handlePooling, handleRerank, handleScore } from './pooling.js';

export function vllmRouter(gw: GatewayContext): Router {
  const router = new Router();
  const boundary = errorBoundary(openaiErrorFormat);
  router.post('/pooling', boundary, (ctx) => handlePooling(gw, ctx));
  router.post('/classify', boundary, (ctx) => handleClassify(gw, ctx));
  for (const path of ['/score', '/v1/score']) router.post(path, boundary, (ctx) => handleScore(gw, ctx));
  router.post('/v1/rerank', boundary, async (ctx) =>
    handleRerank(gw, ctx, await readJsonBody(ctx, gw.config.maxRequestBytes), false),
  );
  router.post('/v2/rerank', boundary, async (ctx) =>
    handleRerank(gw, ctx, await readJsonBody(ctx, gw.config.maxRequestBytes), true),
  );
  return router;
}
