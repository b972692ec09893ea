/**
 * The encoded bytes an image part's URL names: a `data:` URL (base64), a `file://` URL under
 * the allowed local media directory, or an http(s) URL when remote fetching is on; and those
 * of a family's bare base64 field. Every refusal is a 400 naming the part's field; no source
 * gives more than `maxImageBytes`.
 */
import { open, realpath } from 'node:fs/promises';
import { sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { invalid } from '../http-error.js';
import type { MediaConfig } from './media-config.js';

/** The image types a data: URL may declare (what the decoder reads; its own sniffing decides). */
const DATA_URL_TYPES = new Set(['image/png', 'image/jpeg', 'image/jpg', 'image/webp', 'image/gif']);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export async function readImageUrl(url: string, field: string, media: MediaConfig): Promise<Buffer> {
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(url)?.[1]?.toLowerCase();
  switch (scheme) {
    case 'data':
      return dataUrlBytes(url, field, media.maxImageBytes);
    case 'file':
      return localFileBytes(url, field, media);
    case 'http':
    case 'https':
      return fetchedBytes(url, field, media);
    default:
      throw invalid(field, 'must be a data:, file:// or http(s) URL');
  }
}

function dataUrlBytes(url: string, field: string, maxBytes: number): Buffer {
  const comma = url.indexOf(',');
  if (comma < 0) throw invalid(field, "a data: URL needs a ',' before its data");
  const header = url.slice(5, comma).toLowerCase().split(';');
  const type = header[0]!.trim();
  if (!DATA_URL_TYPES.has(type))
    throw invalid(
      field,
      `a data: URL's type must be one of ${[...DATA_URL_TYPES].join(', ')}; got '${type}'`,
    );
  if (!header.slice(1).includes('base64')) throw invalid(field, 'a data: URL must be base64 (;base64,)');
  return base64Bytes(url.slice(comma + 1), field, maxBytes, "a data: URL's data");
}

/**
 * An image's base64 text (white space ignored) as its bytes: a data: URL's data, or a family's
 * own base64 field (Anthropic's `source.data`, Ollama's `images`); `what` names the text in the refusal of bad base64.
 */
export function base64Bytes(base64: string, field: string, maxBytes: number, what?: string): Buffer {
  const text = base64.replace(/\s+/g, '');
  if (Math.floor((text.length * 3) / 4) > maxBytes + 2)
    throw invalid(field, `the image is larger than ${maxBytes} bytes`);
  if (text.length % 4 !== 0 || !BASE64.test(text))
    throw invalid(field, what ? `${what} is not valid base64` : 'is not valid base64');
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length === 0) throw invalid(field, 'the image is empty');
  if (bytes.length > maxBytes) throw invalid(field, `the image is larger than ${maxBytes} bytes`);
  return bytes;
}

async function localFileBytes(url: string, field: string, media: MediaConfig): Promise<Buffer> {
  const root = media.allowedLocalMediaPath;
  if (root === undefined)
    throw invalid(
      field,
      'file:// URLs are refused: the server was started without --allowed-local-media-path',
    );
  let path: string;
  try {
    path = await realpath(fileURLToPath(url));
  } catch {
    throw invalid(field, 'names no readable local file');
  }
  // The real path (links resolved) must lie under the real root.
  if (path !== root && !path.startsWith(root.endsWith(sep) ? root : root + sep))
    throw invalid(field, 'names a file outside --allowed-local-media-path');
  const handle = await open(path, 'r').catch(() => {
    throw invalid(field, 'names no readable local file');
  });
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw invalid(field, 'names no regular file');
    if (stat.size > media.maxImageBytes)
      throw invalid(field, `the image is larger than ${media.maxImageBytes} bytes`);
    if (stat.size === 0) throw invalid(field, 'the image is empty');
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

async function fetchedBytes(url: string, field: string, media: MediaConfig): Promise<Buffer> {
  if (!media.fetchRemote)
    throw invalid(field, 'http(s) URLs are refused: the server fetches images only with --image-fetch');
  const signal = AbortSignal.timeout(media.fetchTimeoutMs);
  const limit = `the image is larger than ${media.maxImageBytes} bytes`;
  try {
    const res = await fetch(url, { signal, redirect: 'follow' });
    if (!res.ok || !res.body) throw invalid(field, `fetching the image answered HTTP ${res.status}`);
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (declared > media.maxImageBytes) throw invalid(field, limit);
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of res.body) {
      total += chunk.byteLength;
      if (total > media.maxImageBytes) {
        await res.body.cancel().catch(() => {});
        throw invalid(field, limit);
      }
      chunks.push(Buffer.from(chunk));
    }
    if (total === 0) throw invalid(field, 'the image is empty');
    return Buffer.concat(chunks);
  } catch (e) {
    if ((e as { name?: string }).name === 'HttpError') throw e;
    if (signal.aborted)
      throw invalid(field, `fetching the image took longer than ${media.fetchTimeoutMs} ms`);
    throw invalid(field, `the image could not be fetched (${(e as Error).message})`);
  }
}
