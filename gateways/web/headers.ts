/**
 * Response headers of the web UI. The content-security policy allows only this origin's own
 * scripts, styles and API calls: no inline script, no eval, no third-party host, no framing.
 */
import type { Context } from 'koa';
import type { StaticFile } from './bundle.js';

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Hashed asset names change with their content: a year, immutable. Pages are revalidated (ETag). */
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

/** Writes a static file with its caching and security headers, or 304 when the client's copy is current. */
export function sendStatic(ctx: Context, file: StaticFile, immutable: boolean): void {
  ctx.set('Cache-Control', immutable ? IMMUTABLE : REVALIDATE);
  ctx.set('ETag', file.etag);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  if (file.type.startsWith('text/html')) {
    ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    ctx.set('X-Frame-Options', 'DENY');
  }
  ctx.vary('Accept');
  const match = ctx.get('If-None-Match');
  if (match && match.split(',').some((t) => t.trim().replace(/^W\//, '') === file.etag)) {
    ctx.status = 304;
    return;
  }
  ctx.type = file.type;
  ctx.body = file.body; // Koa leaves the body out of a HEAD reply
}
