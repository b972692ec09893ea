/** The MindIE family (its self-developed API): inference on the service listener, control on management, /metrics on the metrics listener. */
import Router from '@koa/router';
import { errorBoundary } from '../shared/error-boundary.js';
import { mindieErrorFormat } from './errors.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import {
  handleConfig,
  handleMetricsJson,
  handleRole,
  handleSlotCount,
  handleStatus,
  handleStopService,
} from './control.js';
import { handleNativeInfer, handleTokenizer } from './infer.js';
import { handleDResult } from '../pd/dresult.js';
import { PrometheusExporter } from './prometheus.js';

export function mindieServiceRouter(gw: GatewayContext): Router {
  const router = new Router();
  const boundary = errorBoundary(mindieErrorFormat);
  router.post('/infer', boundary, (ctx) => handleNativeInfer(gw, ctx, false));
  router.post('/infer_token', boundary, (ctx) => handleNativeInfer(gw, ctx, true));
  router.post('/v1/tokenizer', boundary, (ctx) => handleTokenizer(gw, ctx));
  router.get('/dresult', boundary, (ctx) => handleDResult(gw, ctx));
  return router;
}

export function mindieControlRouter(gw: GatewayContext): Router {
  const router = new Router();
  const boundary = errorBoundary(mindieErrorFormat);
  router.get('/v2/models/:model/getSlotCount', boundary, (ctx) => handleSlotCount(gw, ctx, ctx.params.model));
  router.get('/v1/config', boundary, (ctx) => handleConfig(gw, ctx));
  router.get('/v1/status', boundary, (ctx) => handleStatus(gw, ctx, 1));
  router.get('/v2/status', boundary, (ctx) => handleStatus(gw, ctx, 2));
  router.post('/v1/role/:role', boundary, (ctx) => handleRole(gw, ctx, 1, ctx.params.role));
  router.post('/v2/role/:role', boundary, (ctx) => handleRole(gw, ctx, 2, ctx.params.role));
  router.get('/stopService', boundary, (ctx) => handleStopService(gw, ctx));
  router.get('/metrics-json', boundary, (ctx) => handleMetricsJson(gw, ctx));
  return router;
}

export function metricsRouter(gw: GatewayContext): Router {
  const router = new Router();
  const exporter = new PrometheusExporter(gw.info.modelName);
  router.get('/metrics', errorBoundary(mindieErrorFormat), async (ctx) => {
    const text = await exporter.render(await gw.engine.status());
    ctx.type = exporter.contentType;
    ctx.body = text;
  });
  return router;
}
