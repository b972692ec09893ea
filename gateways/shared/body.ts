/**
 * Reads a request body as JSON under the configured size limit (ServerConfig.maxRequestLength).
 * The limit is enforced while reading (raw-body), so an oversized body is never buffered whole.
 */
import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { HttpError } from './http-error.js';
import { checkJsonShape, limitsOf } from './limits.js';

export async function readJsonBody(ctx: Context, limitBytes: number): Promise<unknown> {
  let text: string;
  try {
    text = await getRawBody(ctx.req, {
      limit: limitBytes,
      length: ctx.get('content-length') || undefined,
      encoding: 'utf-8',
    });
  } catch (err) {
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') {
      throw new HttpError(
        'too_large',
        `request body: must be at most ${limitBytes} bytes (ServerConfig.maxRequestLength)`,
      );
    }
    if (type === 'request.aborted')
      throw new HttpError('validation', 'request body: the client aborted the upload');
    throw new HttpError('validation', `request body: could not be read (${(err as Error).message})`);
  }
  if (text.trim() === '')
    throw new HttpError('bad_json', 'request body: must be a JSON value, got an empty body');
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    throw new HttpError('bad_json', `request body: is not valid JSON (${(err as Error).message})`);
  }
  checkJsonShape(value, limitsOf(ctx.state as Record<string, unknown>));
  return value;
}
