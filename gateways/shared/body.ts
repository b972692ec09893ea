/**
 * Reads a request body as JSON under the configured size limit (ServerConfig.maxRequestLength).
 * The limit is enforced while reading (raw-body), so an oversized body is never buffered whole.
 * `readRawBody` and `parseJsonText` are the two halves, for bodies that carry JSON and bytes
 * (KServe's binary tensors, kserve/binary.ts).
 */
import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { HttpError } from './http-error.js';
import { checkJsonShape, limitsOf } from './limits.js';
import { preReadBody } from './pre-read.js';

export async function readRawBody(ctx: Context, limitBytes: number): Promise<Buffer> {
  try {
    const pre = preReadBody(ctx.req);
    if (pre?.error) throw pre.error;
    if (pre?.bytes) {
      if (pre.bytes.length > limitBytes)
        throw Object.assign(new Error('request entity too large'), { type: 'entity.too.large' });
      return pre.bytes;
    }
    return await getRawBody(ctx.req, {
      limit: limitBytes,
      length: ctx.get('content-length') || undefined,
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
}

/** JSON text → value, within the configured JSON shape limits; `what` names it in errors. */
export function parseJsonText(ctx: Context, text: string, what = 'request body'): unknown {
  if (text.trim() === '') throw new HttpError('bad_json', `${what}: must be a JSON value, got an empty body`);
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    throw new HttpError('bad_json', `${what}: is not valid JSON (${(err as Error).message})`);
  }
  checkJsonShape(value, limitsOf(ctx.state as Record<string, unknown>));
  return value;
}

/** UTF-8 text of a body, without a leading byte-order mark (as a decoding reader drops it). */
export function utf8Text(bytes: Buffer): string {
  const text = bytes.toString('utf-8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

export async function readJsonBody(ctx: Context, limitBytes: number): Promise<unknown> {
  return parseJsonText(ctx, utf8Text(await readRawBody(ctx, limitBytes)));
}
