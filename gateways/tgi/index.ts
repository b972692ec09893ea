/**
 * The text-generation family (TGI) on the service listener, and POST /generate, which TGI and
 * the vLLM api_server share: a body with `inputs` is TGI, one with `prompt` is vLLM, anything
 * else is 422 (with MindIE's wording and its double-wrapped body).
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { readJsonBody } from '../shared/body.js';
import { mindieErrorFormat } from '../mindie/errors.js';
import { errorBoundary } from '../shared/error-boundary.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { toHttpError } from '../shared/http-error.js';
import { handleVllmGenerate } from '../vllm/generate.js';
import { handleTeiInfo, handleTeiRoot, servesPooling } from '../tei/index.js';
import { tgiErrorFormat } from './errors.js';
import { handleGenerate, handleGenerateStream, handleInfo, handleRoot } from './generate.js';

type Family = 'tgi' | 'vllm' | 'neither';

function familyOf(body: unknown): Family {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'neither';
  if ('inputs' in body) return 'tgi';
  if ('prompt' in body) return 'vllm';
  return 'neither';
}

async function dispatchGenerate(gw: GatewayContext, ctx: Context): Promise<void> {
  let family: Family = 'neither';
  try {
    const body = await readJsonBody(ctx, gw.config.maxRequestBytes);
    family = familyOf(body);
    if (family === 'vllm') ctx.state.family = 'vllm'; // counted as vLLM by the family stats
    if (family === 'tgi') return await handleGenerate(gw, ctx, body);
    if (family === 'vllm') return await handleVllmGenerate(gw, ctx, body);
  } catch (err) {
    if (ctx.respond === false) return;
    const httpErr = toHttpError(err);
    // Body-level failures (size, JSON) are answered like the TGI family.
    const reply = family === 'vllm' ? mindieErrorFormat(httpErr) : tgiErrorFormat(httpErr);
    ctx.status = reply.status;
    ctx.body = reply.body;
    return;
  }
  ctx.status = 422;
  ctx.body = {
    error: JSON.stringify({
      Error:
        '`inputs` or `prompt` must be necessary and data type must be string. Additionally, the request body must be valid json',
      error_type: 'validation',
    }),
    error_type: 'Input Validation Error',
  };
}

export function tgiRouter(gw: GatewayContext): Router {
  const router = new Router();
  router.post('/generate', (ctx) => dispatchGenerate(gw, ctx));
  const boundary = errorBoundary(tgiErrorFormat);
  router.post('/generate_stream', boundary, async (ctx) =>
    handleGenerateStream(gw, ctx, await readJsonBody(ctx, gw.config.maxRequestBytes)),
  );
  // A pooling model answers POST / as TEI does (gateways/tei/).
  router.post('/', boundary, async (ctx) => {
    const body = await readJsonBody(ctx, gw.config.maxRequestBytes);
    return servesPooling(gw) ? handleTeiRoot(gw, ctx, body) : handleRoot(gw, ctx, body);
  });
  return router;
}

/** GET /info (service and management listeners). */
export function tgiInfoRouter(gw: GatewayContext): Router {
  const router = new Router();
  router.get('/info', (ctx) => (servesPooling(gw) ? handleTeiInfo(gw, ctx) : handleInfo(gw, ctx)));
  return router;
}
