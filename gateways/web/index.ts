/**
 * The web UI: the playground at `GET /` on the service listener (only when the client asks for
 * HTML, so that `GET /` from an API client and TGI's `POST /` keep their meaning), the dashboard
 * at `GET /dashboard` on the management listener, and the hashed assets under `/web/assets/` on
 * both. The pages call the public APIs of their listener only (OpenAI routes; /metrics-json,
 * /v1/status) — there is no private channel.
 */
import Router from '@koa/router';
import type Koa from 'koa';
import type { Context } from 'koa';
import { webBundle } from './bundle.js';
import { sendStatic } from './headers.js';

/** True when the Accept header names text/html itself (a browser), not only through a wildcard (curl's `*\/*`). */
export function wantsHtml(accept: string): boolean {
  return accept.split(',').some((range) => {
    const [type, ...params] = range.trim().split(';');
    if (type.trim().toLowerCase() !== 'text/html') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

function notBuilt(ctx: Context): void {
  ctx.status = 404;
  ctx.body = {
    error: 'the web UI is not built in this checkout: run `npm run build:web` (npm ci does it)',
    error_type: 'NotFoundError',
  };
}

function page(name: 'playground' | 'dashboard') {
  return (ctx: Context): void => {
    const file = webBundle()?.pages.get(name);
    if (!file) return notBuilt(ctx);
    sendStatic(ctx, file, false);
  };
}

function assetRoute(router: Router): void {
  router.get('/web/assets/:file', (ctx) => {
    const bundle = webBundle();
    if (!bundle) return notBuilt(ctx);
    const file = bundle.assets.get(ctx.params.file);
    if (!file) {
      ctx.status = 404;
      ctx.body = { error: `no web asset named ${ctx.params.file}`, error_type: 'NotFoundError' };
      return;
    }
    sendStatic(ctx, file, true);
  });
}

/**
 * Service listener: the playground. A middleware ahead of the routers rather than a route, so
 * that `GET /` without HTML in Accept falls through untouched to what the routers answer
 * today (405, Allow: POST — the path is TGI's `POST /`).
 */
export function playgroundMiddleware(): Koa.Middleware {
  const playground = page('playground');
  return async (ctx, next) => {
    if (ctx.path === '/' && (ctx.method === 'GET' || ctx.method === 'HEAD') && wantsHtml(ctx.get('Accept')))
      return playground(ctx);
    await next();
  };
}

/** Service listener: the playground's assets. */
export function playgroundAssetsRouter(): Router {
  const router = new Router();
  assetRoute(router);
  return router;
}

/** Management listener: the dashboard. */
export function dashboardRouter(): Router {
  const router = new Router();
  router.get('/dashboard', page('dashboard'));
  assetRoute(router);
  return router;
}
