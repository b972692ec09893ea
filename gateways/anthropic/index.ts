/** Anthropic's Messages API (service listener): POST /v1/messages, /v1/messages/count_tokens. */
import Router from '@koa/router';
import { errorBoundary } from '../shared/error-boundary.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { anthropicErrorFormat } from './errors.js';
import { handleCountTokens, handleMessages } from './messages.js';

export function anthropicRouter(gw: GatewayContext): Router {
  const router = new Router();
  const boundary = errorBoundary(anthropicErrorFormat);
  router.post('/v1/messages', boundary, (ctx) => handleMessages(gw, ctx));
  router.post('/v1/messages/count_tokens', boundary, (ctx) => handleCountTokens(gw, ctx));
  return router;
}
