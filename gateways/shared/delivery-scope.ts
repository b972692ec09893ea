/**
 * Each HTTP request's delivery scope (engine/failover/delivery.ts): an engine front may send a
 * request again to another engine only while none of its answer has gone out, and "gone out"
 * is read from the response itself — its headers were written (a stream's 200, or a unary
 * answer's whole reply). A request that was sent again says so in `x-prism-retries` (how many
 * times), which is set before the headers go out since a retry happens only before that.
 */
import type Koa from 'koa';
import { withDelivery } from '../../engine/api.js';

const RETRIES_HEADER = 'x-prism-retries';

export function deliveryScopeMiddleware(): Koa.Middleware {
  return (ctx, next) =>
    withDelivery(
      {
        started: () => ctx.res.headersSent,
        retried: (attempt) => {
          if (!ctx.res.headersSent) ctx.res.setHeader(RETRIES_HEADER, String(attempt - 1));
        },
      },
      next,
    );
}
