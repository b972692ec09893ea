/**
 * A request body read before the Koa app ran (gateways/model-dispatch.ts reads it to find the
 * model a request is for): held on the request, so shared/body.ts takes it instead of the
 * stream, which is consumed by then. The read's error travels the same way, to be answered
 * in the family's shape (413 for a body over the limit).
 */
import type { IncomingMessage } from 'node:http';

const PRE_READ = Symbol('prism.preReadBody');

export interface PreReadBody {
  readonly bytes?: Buffer;
  readonly error?: unknown;
}

export function setPreReadBody(req: IncomingMessage, body: PreReadBody): void {
  (req as unknown as Record<symbol, PreReadBody>)[PRE_READ] = body;
}

export function preReadBody(req: IncomingMessage): PreReadBody | undefined {
  return (req as unknown as Record<symbol, PreReadBody | undefined>)[PRE_READ];
}
