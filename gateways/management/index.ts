/**
 * Health and readiness routes (management listener, and the service listener too so that a
 * load balancer can probe the port it sends traffic to). The dynamic LoRA routes are in lora.ts.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { events } from '../shared/engine-calls.js';
import { mindieErrorFormat } from '../mindie/errors.js';
import { errorBoundary } from '../shared/error-boundary.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { HttpError } from '../shared/http-error.js';
import { newRequestId } from '../shared/engine-calls.js';

/** 200 with an empty body (Koa would otherwise write "OK"). */
function emptyOk(ctx: Context): void {
  ctx.status = 200;
  ctx.body = '';
}

const STOPPED = { error: 'The service has been stopped.', error_type: 'Service Unavailable' };

/** MindIE `CheckHealthAndStop`: true when the reply was written (service stopping). */
function answeredStopping(gw: GatewayContext, ctx: Context): boolean {
  if (!gw.state.stopping) return false;
  ctx.status = 503;
  ctx.body = STOPPED;
  return true;
}

/** Busy: every batch slot is taken and requests are queued. */
async function busy(gw: GatewayContext): Promise<boolean> {
  const s = await gw.engine.status();
  return s.waiting > 0 && s.running >= s.maxBatchSize;
}

/** Default wait of `/health/timed` without a suffix, seconds. */
const TIMED_DEFAULT_SECONDS = 10;

/**
 * `/health/timed[-N]`: runs a one-token generation and waits at most N seconds. Healthy when a
 * token came back, or when the engine is busy (queue full) — as MindIE counts BUSY as healthy.
 */
async function handleTimed(gw: GatewayContext, ctx: Context, suffix: string | undefined): Promise<void> {
  let seconds = Math.min(TIMED_DEFAULT_SECONDS, gw.config.healthTimedMaxSeconds);
  if (suffix !== undefined) {
    const max = gw.config.healthTimedMaxSeconds;
    if (!/^[0-9]{1,3}$/.test(suffix) || Number(suffix) < 1 || Number(suffix) > max) {
      throw new HttpError('not_found', `Wait time should be in range of [1, ${max}], input is not valid`);
    }
    seconds = Number(suffix);
  }
  if (gw.state.stopping) {
    ctx.body = { status: 'healthy' };
    return;
  }
  const signal = AbortSignal.timeout(seconds * 1000);
  try {
    const request = {
      requestId: newRequestId('health'),
      prompt: { kind: 'text' as const, text: 'ping' },
      params: { maxNewTokens: 1, doSample: false },
    };
    for await (const ev of events(gw, request, signal)) {
      if (ev.type === 'finish' && ev.reason === 'cancelled') throw new Error(`no token within ${seconds} s`);
    }
    ctx.body = { status: 'healthy' };
  } catch (err) {
    if (err instanceof HttpError && err.kind === 'overloaded') {
      ctx.body = { status: 'healthy' };
      return;
    }
    const reason = signal.aborted
      ? `the probe produced no token within ${seconds} s`
      : (err as Error).message;
    ctx.status = 500;
    ctx.body = { error: `health check failed: ${reason}`, error_type: 'Incomplete Generation' };
  }
}

export function healthRouter(gw: GatewayContext): Router {
  const router = new Router();
  const boundary = errorBoundary(mindieErrorFormat);
  router.get('/health', boundary, (ctx) => {
    if (!answeredStopping(gw, ctx)) emptyOk(ctx);
  });
  router.get('/v2/health/live', boundary, async (ctx) => {
    if (answeredStopping(gw, ctx)) return;
    if (await busy(gw)) ctx.body = { message: 'Service is alive but busy' };
    else emptyOk(ctx);
  });
  router.get('/v2/health/ready', boundary, async (ctx) => {
    if (answeredStopping(gw, ctx)) return;
    if (await busy(gw)) {
      ctx.status = 503;
      ctx.body = { message: 'Service is alive but busy. Consider reducing request frequency' };
    } else emptyOk(ctx);
  });
  router.get('/v2/models/:model/ready', boundary, (ctx) => {
    if (answeredStopping(gw, ctx)) return;
    if (ctx.params.model !== gw.info.modelName)
      throw new HttpError('not_found', `Model ${ctx.params.model} not found.`);
    emptyOk(ctx);
  });
  router.get('/health/timed', boundary, (ctx) => handleTimed(gw, ctx, undefined));
  router.get('/health/timed-:n', boundary, (ctx) => handleTimed(gw, ctx, ctx.params.n));
  return router;
}
