/**
 * Koa middleware that answers any error thrown by a family's handlers in that family's shape.
 * Streams that already sent their headers report errors inside the stream themselves.
 */
import type { Middleware } from 'koa';
import { HttpError, toHttpError } from './http-error.js';

export interface ErrorReply {
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

/** MindIE's `error_type` strings, by HTTP status (mindie-compat.md §3). */
export function mindieErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'Bad Request';
    case 401:
      return 'Unauthorized';
    case 404:
      return 'NotFoundError';
    case 413:
    case 422:
      return 'Input Validation Error';
    case 424:
      return 'Generation Error';
    case 429:
      return 'Model is overloaded';
    case 501:
      return 'Not Implemented';
    case 503:
      return 'Service Unavailable';
    default:
      return 'Incomplete Generation';
  }
}

/** The MindIE / native / KServe error shape: `{"error": "...", "error_type": "..."}`. */
export const mindieErrorFormat: ErrorFormatter = (err) => {
  const status = err.kind === 'validation' || err.kind === 'bad_json' ? 422 : statusOf(err);
  return { status, body: { error: err.message, error_type: mindieErrorType(status) } };
};

export function statusOf(err: HttpError): number {
  return (
    {
      validation: 422,
      bad_json: 422,
      too_large: 413,
      unauthorized: 401,
      not_found: 404,
      overloaded: 429,
      unavailable: 503,
      generation: 424,
      not_supported: 501,
      internal: 500,
    } as const
  )[err.kind];
}
