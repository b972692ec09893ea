/**
 * API keys per listener. A request names its key as OpenAI clients send it
 * (`Authorization: Bearer <key>`) or as `x-api-key: <key>`; it is compared against every
 * configured key in constant time (SHA-256 digests through `timingSafeEqual`, and no early exit
 * on a match), so neither the key's length nor its prefix leaks through response times.
 * A refused request gets 401 with `WWW-Authenticate: Bearer`, in the error shape of the family
 * its path belongs to, before any body is read or any engine work is done.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Middleware } from 'koa';
import type { ErrorFormatter } from './error-boundary.js';
import { HttpError } from './http-error.js';

/** A key list or key file that cannot be used; the CLI reports it as a usage error (exit 2). */
export class ApiKeyConfigError extends Error {
  override readonly name = 'ApiKeyConfigError';
}

const digest = (key: string): Buffer => createHash('sha256').update(key, 'utf-8').digest();

/** The keys one listener accepts; empty = no authentication on that listener. */
export class ApiKeySet {
  private readonly digests: readonly Buffer[];
  constructor(keys: readonly string[]) {
    this.digests = [...new Set(keys)].map(digest);
  }
  get enabled(): boolean {
    return this.digests.length > 0;
  }
  matches(presented: string): boolean {
    const d = digest(presented);
    let ok = false;
    // Every key is compared, whatever the outcome of the earlier ones.
    for (const k of this.digests) ok = timingSafeEqual(d, k) || ok;
    return ok;
  }
}

/** The key a request presents: `Authorization: Bearer <key>` first, else `x-api-key`. */
export function presentedKey(headers: Record<string, string | string[] | undefined>): string | undefined {
  const auth = headers.authorization;
  if (typeof auth === 'string') {
    const m = /^\s*Bearer\s+(\S+)\s*$/i.exec(auth);
    if (m) return m[1];
  }
  const x = headers['x-api-key'];
  if (typeof x === 'string' && x.trim() !== '') return x.trim();
  return undefined;
}

/**
 * Reads a key file: one key per line; blank lines and lines starting with `#` are skipped.
 * Every failure names the file (and never echoes a key).
 */
export function readApiKeyFile(path: string, what: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf-8');
  } catch (err) {
    throw new ApiKeyConfigError(
      `${what}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  const keys = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  if (keys.length === 0) throw new ApiKeyConfigError(`${what}: ${path} holds no key (one key per line)`);
  for (const [i, k] of keys.entries()) checkKeyShape(k, `${what}: ${path} line ${i + 1}`);
  return keys;
}

/** A key must be sendable as a Bearer token: visible ASCII without spaces, 1–4096 characters. */
export function checkKeyShape(key: string, what: string): void {
  if (!/^[\x21-\x7e]{1,4096}$/.test(key)) {
    throw new ApiKeyConfigError(`${what}: an API key must be 1-4096 visible ASCII characters without spaces`);
  }
}

export interface AuthOptions {
  readonly keys: ApiKeySet;
  /** Routes answered without a key (health and metrics, when configured open). */
  readonly isOpen: (method: string, path: string) => boolean;
  /** The error shape of the family a path belongs to. */
  readonly formatFor: (path: string) => ErrorFormatter;
}

export function apiKeyAuth(options: AuthOptions): Middleware {
  return async (ctx, next) => {
    if (!options.keys.enabled || options.isOpen(ctx.method, ctx.path)) return next();
    const key = presentedKey(ctx.headers);
    if (key !== undefined && options.keys.matches(key)) return next();
    const err = new HttpError(
      'unauthorized',
      key === undefined
        ? 'missing API key: send `Authorization: Bearer <key>` or `x-api-key: <key>`'
        : 'invalid API key',
    );
    const reply = options.formatFor(ctx.path)(err);
    ctx.status = reply.status;
    ctx.body = reply.body;
    ctx.set('WWW-Authenticate', 'Bearer');
  };
}
