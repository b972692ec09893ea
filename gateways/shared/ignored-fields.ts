/**
 * Fields a request sent that the server accepts without acting on them (vLLM's
 * accept-with-warning): named in the response header `X-Prism-Ignored-Fields` and in the
 * request log line (`ignored_fields=…`, at warning level), never dropped unseen. Which families
 * take unknown fields this way, and which refuse them with a 400, is docs/api.md's table
 * "Unknown fields".
 */
import type { Context } from 'koa';

export const IGNORED_FIELDS_HEADER = 'X-Prism-Ignored-Fields';

/** Where the request log finds them (ctx.state). */
export const IGNORED_FIELDS_STATE = 'ignoredFields';

/** Records the ignored fields of this request (dotted paths); no-op for none. */
export function noteIgnoredFields(ctx: Context, fields: readonly string[]): void {
  if (fields.length === 0) return;
  const all = [...((ctx.state[IGNORED_FIELDS_STATE] as string[] | undefined) ?? []), ...fields];
  ctx.state[IGNORED_FIELDS_STATE] = all;
  ctx.set(IGNORED_FIELDS_HEADER, all.join(', '));
}

/** The keys of `body` outside `known`, as dotted paths under `at`. */
export function unknownKeys(body: object, known: ReadonlySet<string>, at = ''): string[] {
  return Object.keys(body)
    .filter((k) => !known.has(k))
    .map((k) => (at ? `${at}.${k}` : k));
}
