/**
 * Rewrites a JSON Schema that passed `checkJsonSchema` into one that xgrammar enforces
 * exactly, keyword for keyword, before it compiles: the client's constraint is kept, only
 * spelled in keywords the library gets right (xgrammar 0.2.8; each case is an entry of
 * xgrammar-workarounds.ts: int32-format, byte-format, pattern-drops-lengths, and those of
 * branch-merge.ts and implicit.ts).
 *
 * - `format: int32` on an integer type becomes `minimum: -2147483648, maximum: 2147483647`
 *   (xgrammar skips the format; its integer ranges are exact, tested digit by digit in
 *   rewrite.test.ts and exactness.test.ts), intersected with any bounds the
 *   schema gives.
 * - `format: int64` becomes the range of integers JSON parsers hold exactly, ±(2^53 − 1):
 *   narrower than int64, so every document is still a valid int64 — a documented narrowing,
 *   never a skipped check.
 * - `format: float` / `double` on a number type become their finite ranges (±FLT_MAX /
 *   ±DBL_MAX): xgrammar skips the format, and its bare number grammar allows exponents past a
 *   double's range (`1e309`). Its decimal ranges write no exponent and at most 6 decimals, so
 *   this too narrows (every document is a finite double), never skips.
 * - Integer bounds that are not whole numbers (`maximum: 1.5` on an integer), which xgrammar
 *   rejects, become the whole-number bounds they mean (`maximum: 1`).
 * - `format: byte` on a string type becomes ajv-formats' base64 `pattern` (BASE64_PATTERN).
 * - `minLength`/`maxLength` beside a repeated-class `pattern` fold into it (pattern-length.ts).
 * - `enum`/`const` values are filtered by the keywords beside them, which then go
 *   (enum-siblings.ts).
 * - keywords beside `anyOf`/`oneOf` move into each branch (branch-merge.ts), and implied types
 *   and required properties are spelled out (implicit.ts).
 */
import { distributeSiblings } from './branch-merge.js';
import { foldEnumSiblings } from './enum-siblings.js';
import { foldSchemaLengths } from './pattern-length.js';
import { isSchemaObject, subschemas } from './node.js';
import { makeImplicitExplicit } from './implicit.js';

export const INTEGER_FORMAT_RANGES: Readonly<Record<string, readonly [number, number]>> = {
  int32: [-2147483648, 2147483647],
  int64: [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

export const NUMBER_FORMAT_RANGES: Readonly<Record<string, readonly [number, number]>> = {
  float: [-3.4028234663852886e38, 3.4028234663852886e38],
  double: [-Number.MAX_VALUE, Number.MAX_VALUE],
};

/**
 * `format: byte` (OpenAPI's base64) on a string type becomes this `pattern` (ajv-formats' own
 * base64 expression; xgrammar enforces `pattern`, also inside a `["string", "null"]` union).
 * Only without `pattern`, `minLength` and `maxLength`, which xgrammar would drop beside a
 * pattern (check.ts refuses those combinations).
 */
export const BASE64_PATTERN = '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$';

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
  const intRange = typeof s.format === 'string' ? INTEGER_FORMAT_RANGES[s.format] : undefined;
  const numRange = typeof s.format === 'string' ? NUMBER_FORMAT_RANGES[s.format] : undefined;
  const range =
    intRange && integerType(s.type) ? intRange : numRange && numberType(s.type) ? numRange : undefined;
  if (range) {
    delete s.format;
    s.minimum = typeof s.minimum === 'number' ? Math.max(s.minimum, range[0]) : range[0];
    s.maximum = typeof s.maximum === 'number' ? Math.min(s.maximum, range[1]) : range[1];
    changed = true;
  }
  if (wholeNumberTypes(s.type)) changed = wholeBounds(s) || changed;
  if (s.format === 'byte' && stringType(s.type) && byteRewritable(s)) {
    delete s.format;
    s.pattern = BASE64_PATTERN;
    changed = true;
  }
  changed = foldEnumSiblings(s) || changed;
  // xgrammar 0.2.8 refuses `true` and `false` in prefixItems: `true` is `{}`, and a `false` at
  // position i means the array has fewer than i + 1 items.
  if (Array.isArray(s.prefixItems)) {
    const stop = s.prefixItems.indexOf(false);
    if (stop >= 0) {
      s.maxItems = typeof s.maxItems === 'number' ? Math.min(s.maxItems, stop) : stop;
      s.prefixItems = s.prefixItems.slice(0, stop);
    }
    s.prefixItems = (s.prefixItems as unknown[]).map((x) => (x === true ? {} : x));
    changed = true;
  }
  // Prism writes no array item past prefixItems and no property past properties unless the
  // schema allows them; where minItems/minProperties needs more, the schema's own default
  // (any) holds, or xgrammar 0.2.8 refuses to compile a grammar with no document.
  if (
    Array.isArray(s.prefixItems) &&
    s.items === undefined &&
    typeof s.minItems === 'number' &&
    s.minItems > s.prefixItems.length
  ) {
    s.items = {};
    changed = true;
  }
  if (
    typeof s.minProperties === 'number' &&
    s.additionalProperties === undefined &&
    s.patternProperties === undefined &&
    s.minProperties > Object.keys(isSchemaObject(s.properties) ? s.properties : {}).length
  ) {
    s.additionalProperties = {};
    changed = true;
  }
  // Positions past maxItems never hold an item: xgrammar 0.2.8 refuses prefixItems longer
  // than maxItems, so they go (the same array language).
  if (Array.isArray(s.prefixItems) && typeof s.maxItems === 'number' && s.prefixItems.length > s.maxItems) {
    const kept = s.prefixItems.slice(0, Math.max(0, Math.floor(s.maxItems)));
    if (kept.length > 0) s.prefixItems = kept;
    else delete s.prefixItems;
    changed = true;
  }
  // A property whose schema is `false` must not appear; xgrammar 0.2.8 refuses to compile it.
  // Where no other keyword would let the name in (check.ts refuses the rest), it goes.
  if (isSchemaObject(s.properties))
    for (const [name, sub] of Object.entries(s.properties))
      if (sub === false && forbiddenPropertyDroppable(s, name)) {
        delete s.properties[name];
        changed = true;
      }
  const folded = foldSchemaLengths(s);
  if (folded && 'pattern' in folded) {
    s.pattern = folded.pattern;
    delete s.minLength;
    delete s.maxLength;
    changed = true;
  }
  for (const sub of subschemas(s)) changed = rewrite(sub) || changed;
  return changed;
}

/**
 * On a type that holds only whole numbers, bounds that are not whole become the whole-number
 * bounds they mean: x ≥ 0.5 is x ≥ 1, x > 0.5 is x ≥ 1, x ≤ 1.5 is x ≤ 1, x < 1.5 is x ≤ 1.
 */
function wholeBounds(s: Record<string, unknown>): boolean {
  let changed = false;
  const lower = (v: number) => {
    s.minimum = typeof s.minimum === 'number' ? Math.max(s.minimum, v) : v;
    changed = true;
  };
  const upper = (v: number) => {
    s.maximum = typeof s.maximum === 'number' ? Math.min(s.maximum, v) : v;
    changed = true;
  };
  const fractional = (v: unknown): v is number =>
    typeof v === 'number' && Number.isFinite(v) && !Number.isInteger(v);
  if (fractional(s.minimum)) lower(Math.ceil(s.minimum));
  if (fractional(s.maximum)) upper(Math.floor(s.maximum));
  if (fractional(s.exclusiveMinimum)) {
    const v = Math.ceil(s.exclusiveMinimum);
    delete s.exclusiveMinimum;
    lower(v);
  }
  if (fractional(s.exclusiveMaximum)) {
    const v = Math.floor(s.exclusiveMaximum);
    delete s.exclusiveMaximum;
    upper(v);
  }
  return changed;
}

/** A type (or union) whose numbers are whole: it has `integer` and not `number`. */
export function wholeNumberTypes(type: unknown): boolean {
  const types = Array.isArray(type) ? type : [type];
  return types.includes('integer') && !types.includes('number');
}

/** `number`, or a union of `number` with `integer` or `null`. */
export function numberType(type: unknown): boolean {
  const types = Array.isArray(type) ? type : [type];
  return types.includes('number') && types.every((t) => t === 'number' || t === 'integer' || t === 'null');
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

/**
 * Whether the property `name`, whose schema is `false`, may simply be left out of `s`'s
 * properties: not required (no object could satisfy it), and nothing else would then admit
 * it — additionalProperties is false or absent (Prism writes no unlisted property), and no
 * patternProperties.
 */
export function forbiddenPropertyDroppable(s: Record<string, unknown>, name: string): boolean {
  const required = Array.isArray(s.required) ? s.required.map(String) : [];
  return (
    !required.includes(name) &&
    (s.additionalProperties === false || s.additionalProperties === undefined) &&
    s.patternProperties === undefined
  );
}
