/**
 * Fields a request sent that the server accepts without acting on them (vLLM's
 * accept-with-warning): named in the response header `X-Prism-Ignored-Fields` and in the
 * request log line (`ignored_fields=…`, at warning level), never dropped unseen. Which families
 * take unknown fields this way, and which refuse them with a 400, is docs/api.md's table
 * "Unknown fields".
 */
import type { Context } from 'koa';

const IGNORED_FIELDS_HEADER = 'X-Prism-Ignored-Fields';

/** Where the request log finds them (ctx.state). */
export const IGNORED_FIELDS_STATE = 'ignoredFields';

/** Names listed in the header; the log line has them all. */
const MAX_HEADER_NAMES = 32;

/** A client's field name as header text: printable ASCII as is, anything else percent-encoded. */
function headerSafe(name: string): string {
  const short = name.length > 128 ? `${name.slice(0, 128)}…` : name;
  return /^[\x20-\x7e]*$/.test(short) ? short : encodeURIComponent(short);
}

/** Records the ignored fields of this request (dotted paths); no-op for none. */
export function noteIgnoredFields(ctx: Context, fields: readonly string[]): void {
  if (fields.length === 0) return;
  const all = [...((ctx.state[IGNORED_FIELDS_STATE] as string[] | undefined) ?? []), ...fields];
  ctx.state[IGNORED_FIELDS_STATE] = all;
  const listed = all.slice(0, MAX_HEADER_NAMES).map(headerSafe);
  if (all.length > MAX_HEADER_NAMES) listed.push(`(${all.length - MAX_HEADER_NAMES} more)`);
  ctx.set(IGNORED_FIELDS_HEADER, listed.join(', '));
}

/** The keys of `body` outside `known` (a set, or a JSON Schema's `properties`), as dotted paths under `at`. */
export function unknownKeys(body: object, known: ReadonlySet<string> | object, at = ''): string[] {
  const has = known instanceof Set ? (k: string) => known.has(k) : (k: string) => Object.hasOwn(known, k);
  return Object.keys(body)
    .filter((k) => !has(k))
    .map((k) => (at ? `${at}.${k}` : k));
}

/** Notes the top-level keys of `body` its schema does not name; for the families that accept them. */
export function noteUnknownFields(ctx: Context, body: unknown, schema: { properties: object }): void {
  if (body !== null && typeof body === 'object' && !Array.isArray(body))
    noteIgnoredFields(ctx, unknownKeys(body, schema.properties));
}
