/** The OpenAI-compatible family: chat, completions, responses, model listing (service listener). */
import Router from '@koa/router';
import { errorBoundary } from '../shared/error-boundary.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { handleChat } from './chat.js';
import { handleCompletions } from './completions.js';
import { handleEmbeddings } from './embeddings.js';
import { openaiErrorFormat } from './errors.js';
import { handleGetModel, handleListModels } from './models.js';
import { handleResponses } from './responses.js';

export function openaiRouter(gw: GatewayContext): Router {
  const router = new Router();
  const boundary = errorBoundary(openaiErrorFormat);
  router.post('/v1/chat/completions', boundary, (ctx) => handleChat(gw, ctx));
  router.post('/v1/completions', boundary, (ctx) => handleCompletions(gw, ctx));
  router.post('/v1/responses', boundary, (ctx) => handleResponses(gw, ctx));
  router.post('/v1/embeddings', boundary, (ctx) => handleEmbeddings(gw, ctx));
  router.get('/v1/models', boundary, (ctx) => handleListModels(gw, ctx));
  router.get('/v1/models/:model', boundary, (ctx) => handleGetModel(gw, ctx, ctx.params.model));
  return router;
}
