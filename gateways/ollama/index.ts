/**
 * Ollama's API (service listener, its own /api paths): chat and generate, the model routes,
 * and the model-store routes refused; `/api/embed` and `/api/embeddings` for a pooling model
 * (embed.ts).
 */
import Router from '@koa/router';
import { errorBoundary } from '../shared/error-boundary.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { ollamaErrorFormat } from './errors.js';
import { handleEmbed, handleEmbeddings } from './embed.js';
import { handleChat, handleGenerate } from './generate.js';
import { handlePs, handleShow, handleTags, handleVersion, refuseStore } from './models.js';

export function ollamaRouter(gw: GatewayContext): Router {
  const router = new Router();
  const boundary = errorBoundary(ollamaErrorFormat);
  router.post('/api/chat', boundary, (ctx) => handleChat(gw, ctx));
  router.post('/api/generate', boundary, (ctx) => handleGenerate(gw, ctx));
  router.post('/api/embed', boundary, (ctx) => handleEmbed(gw, ctx));
  router.post('/api/embeddings', boundary, (ctx) => handleEmbeddings(gw, ctx));
  router.get('/api/tags', boundary, (ctx) => handleTags(gw, ctx));
  router.post('/api/show', boundary, (ctx) => handleShow(gw, ctx));
  router.get('/api/ps', boundary, (ctx) => handlePs(gw, ctx));
  router.get('/api/version', boundary, (ctx) => handleVersion(gw, ctx));
  router.post('/api/pull', boundary, refuseStore('pulling a model'));
  router.post('/api/push', boundary, refuseStore('pushing a model'));
  router.post('/api/create', boundary, refuseStore('creating a model'));
  router.post('/api/copy', boundary, refuseStore('copying a model'));
  router.delete('/api/delete', boundary, refuseStore('deleting a model'));
  router.post('/api/blobs/:digest', boundary, refuseStore('uploading a blob'));
  router.head('/api/blobs/:digest', boundary, refuseStore('uploading a blob'));
  return router;
}
