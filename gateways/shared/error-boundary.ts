/**
 * Koa middleware that answers any error thrown by a family's handlers in that family's shape.
 * Streams that already sent their headers report errors inside the stream themselves.
 */
import type { Middleware } from 'koa';
import { HttpError, toHttpError } from './http-error.js';

interface ErrorReply {
  readonly status: number;
  readonly body: unknown;
}

export type ErrorFormatter = (err: HttpError) => ErrorReply;

export function errorBoundary(format: ErrorFormatter): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const httpErr = toHttpError(err);
      if (ctx.respond === false || ctx.res.headersSent) {
        // Mid-stream failure: the handler could not report it; close the connection.
        if (!ctx.res.writableEnded) ctx.res.end();
        return;
      }
      const reply = format(httpErr);
      ctx.status = reply.status;
      ctx.body = reply.body;
    }
  };
}
