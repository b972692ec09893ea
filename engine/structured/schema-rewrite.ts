/**
 * Rewrites a JSON Schema that passed `checkJsonSchema` into one that xgrammar enforces
 * exactly, keyword for keyword, before it compiles: the client's constraint is kept, only
 * spelled in keywords the library gets right.
 *
 * - `format: int32` on an integer type becomes `minimum: -2147483648, maximum: 2147483647`
 *   (xgrammar 0.1.27 skips the format; its range for exactly these bounds is exact, tested
 *   digit by digit in schema-rewrite.test.ts, unlike some others such as `maximum: 120`).
 * - `format: int64` becomes the range of integers JSON parsers hold exactly, ±(2^53 − 1):
 *   narrower than int64 (whose bounds the library gets wrong), so every document is still a
 *   valid int64 — a documented narrowing, never a skipped check.
 * - `format: byte` on a string type becomes ajv-formats' base64 `pattern` (BASE64_PATTERN).
 * - keywords beside `anyOf`/`oneOf` move into each branch (branch-merge.ts), and implied types
 *   and required properties are spelled out (schema-implicit.ts).
 */
import { distributeSiblings } from './branch-merge.js';
import { makeImplicitExplicit } from './schema-implicit.js';

export const INTEGER_FORMAT_RANGES: Readonly<Record<string, readonly [number, number]>> = {
  int32: [-2147483648, 2147483647],
  int64: [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

/**
 * `format: byte` (OpenAPI's base64) on a string type becomes this `pattern` (ajv-formats' own
 * base64 expression; xgrammar enforces `pattern`, also inside a `["string", "null"]` union).
 * Only without `pattern`, `minLength` and `maxLength`, which xgrammar would drop beside a
 * pattern (schema-check refuses those combinations).
 */
export const BASE64_PATTERN = '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$';

/** Keywords whose value is a map name → subschema, or a list of subschemas (as in schema-check). */
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions'];
const SCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];

/** The schema text xgrammar compiles (the input itself when nothing needs rewriting). */
export function rewriteForGrammar(schemaText: string): string {
  const schema = JSON.parse(schemaText) as unknown;
  // Keywords beside anyOf/oneOf move into the branches first, so that what they imply is
  // made explicit in each branch.
  const distributed = distributeSiblings(schema);
  const explicit = makeImplicitExplicit(schema);
  return rewrite(schema) || distributed || explicit ? JSON.stringify(schema) : schemaText;
}

/** Rewrites `node` in place; true when anything changed. */
function rewrite(node: unknown): boolean {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return false;
  const s = node as Record<string, unknown>;
  let changed = false;
  const range = typeof s.format === 'string' ? INTEGER_FORMAT_RANGES[s.format] : undefined;
  if (range && integerType(s.type)) {
    delete s.format;
    [s.minimum, s.maximum] = range;
    changed = true;
  }
  if (s.format === 'byte' && stringType(s.type) && byteRewritable(s)) {
    delete s.format;
    s.pattern = BASE64_PATTERN;
    changed = true;
  }
  for (const k of SCHEMA_MAPS) {
    const m = s[k];
    if (m && typeof m === 'object') for (const sub of Object.values(m)) changed = rewrite(sub) || changed;
  }
  for (const k of SCHEMA_LISTS) {
    const l = s[k];
    if (Array.isArray(l)) for (const sub of l) changed = rewrite(sub) || changed;
  }
  if (Array.isArray(s.items)) for (const sub of s.items) changed = rewrite(sub) || changed;
  else changed = rewrite(s.items) || changed;
  changed = rewrite(s.additionalProperties) || changed;
  return changed;
}

/** `string`, or a union of `string` with `null`. */
export function stringType(type: unknown): boolean {
  const types = Array.isArray(type) ? type : [type];
  return types.includes('string') && types.every((t) => t === 'string' || t === 'null');
}

/** A `byte` format that can become a pattern: nothing beside it that a pattern would drop. */
export function byteRewritable(s: Record<string, unknown>): boolean {
  return s.pattern === undefined && s.minLength === undefined && s.maxLength === undefined;
}

/** `integer`, or a union of `integer` with `null` (Kubernetes' optional integers). */
export function integerType(type: unknown): boolean {
  const types = Array.isArray(type) ? type : [type];
  return types.includes('integer') && types.every((t) => t === 'integer' || t === 'null');
}
