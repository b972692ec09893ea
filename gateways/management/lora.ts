/**
 * Dynamic LoRA routes on the management listener: `POST /v1/load_lora_adapter`
 * {lora_name, lora_path} and `POST /v1/unload_lora_adapter` {lora_name}. Replies are plain
 * text, as in MindIE and vLLM:
 *  - a body that is not JSON: 200 "Req body converts to json fail." (MindIE); one over a
 *    body limit (size 413; nesting depth, list length, __proto__ 400) names the limit;
 *  - lora_name missing or not matching the name rule: 503 "Input invalid lora name" (MindIE);
 *  - lora_path missing, relative or with a '..' component: 503 "Input invalid lora path";
 *  - otherwise the engine's message: 200 on success; on failure vLLM's statuses (404 when
 *    no adapter is found or the name is unknown, 503 when dynamic loading is off, 400 for
 *    the rest: already added, waiting to unload, invalid files, rank, max_loras).
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { checkAdapterName, checkAdapterPathText, EngineError } from '../../engine/api.js';
import { readJsonBody } from '../shared/body.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { HttpError } from '../shared/http-error.js';

function reply(ctx: Context, status: number, text: string): void {
  ctx.status = status;
  ctx.type = 'text/plain';
  ctx.body = text;
}

async function body(gw: GatewayContext, ctx: Context): Promise<Record<string, unknown> | undefined> {
  try {
    const b = await readJsonBody(ctx, gw.config.maxRequestBytes);
    if (typeof b === 'object' && b !== null && !Array.isArray(b)) return b as Record<string, unknown>;
  } catch (err) {
    if (!(err instanceof HttpError)) throw err;
    // Limits of the shared body reader (size, nesting depth, list length, __proto__): a 4xx
    // naming the rule, in these routes' plain text.
    if (err.kind !== 'bad_json') {
      reply(ctx, err.kind === 'too_large' ? 413 : 400, err.message);
      return undefined;
    }
  }
  reply(ctx, 200, 'Req body converts to json fail.');
  return undefined;
}

async function engineCall(ctx: Context, call: () => Promise<{ message: string }>): Promise<void> {
  try {
    reply(ctx, 200, (await call()).message);
  } catch (err) {
    if (!(err instanceof EngineError)) throw err;
    const status = err.code === 'NOT_FOUND' ? 404 : err.code === 'UNAVAILABLE' ? 503 : 400;
    reply(ctx, status, err.message);
  }
}

export function loraRouter(gw: GatewayContext): Router {
  const router = new Router();
  router.post('/v1/load_lora_adapter', async (ctx) => {
    const b = await body(gw, ctx);
    if (!b) return;
    if (checkAdapterName(b.lora_name)) return reply(ctx, 503, 'Input invalid lora name');
    if (checkAdapterPathText(b.lora_path)) return reply(ctx, 503, 'Input invalid lora path');
    await engineCall(ctx, () => gw.engine.loadAdapter(b.lora_name as string, b.lora_path as string));
  });
  router.post('/v1/unload_lora_adapter', async (ctx) => {
    const b = await body(gw, ctx);
    if (!b) return;
    if (checkAdapterName(b.lora_name)) return reply(ctx, 503, 'Input invalid lora name');
    await engineCall(ctx, () => gw.engine.unloadAdapter(b.lora_name as string));
  });
  return router;
}
