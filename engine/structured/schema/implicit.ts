/**
 * What a schema implies but does not spell out, made explicit before the grammar compiles it.
 *
 * xgrammar 0.2.8 reads type-specific keywords only under a `type`, and `required` only for
 * names listed in `properties` — and silently drops the rest (xgrammar-workarounds.ts:
 * untyped-keywords, untyped-bounds, required-unlisted; and it ignores `not`, not-type):
 * - `{"minLength": 2}` accepts `"x"`, `{"required": ["a"]}` accepts `{}`;
 * - `{"type": "object", "required": ["a"]}` accepts `{}` and never writes `a`.
 * Both are rewritten here:
 * - a schema without `type`, `const`, `enum`, `$ref` or a combinator whose keywords all belong
 *   to one JSON type gets that `type`. That narrows the schema: it drops documents of other
 *   types, which the keywords accept vacuously, so every output still validates;
 * - each `required` name missing from `properties` is added to them with the schema a
 *   validator applies to it: `additionalProperties` when that is a schema, otherwise `{}`
 *   (any value) — unchanged meaning.
 * - `not: {"type": T}` becomes the `type` list it leaves (`not: {"type": "object"}` on an
 *   untyped schema: every type but object).
 * check.ts refuses what cannot be made explicit (keywords of several types without a
 * `type`; a required name that `additionalProperties: false` or `patternProperties` decides).
 */
import { isSchemaObject, subschemas, type Schema } from './node.js';

/** Type-specific keywords, by the JSON type they apply to. */
export const KEYWORD_TYPE: Readonly<Record<string, string>> = {
  properties: 'object',
  required: 'object',
  additionalProperties: 'object',
  patternProperties: 'object',
  minProperties: 'object',
  maxProperties: 'object',
  items: 'array',
  prefixItems: 'array',
  minItems: 'array',
  maxItems: 'array',
  minLength: 'string',
  maxLength: 'string',
  pattern: 'string',
  minimum: 'number',
  maximum: 'number',
  exclusiveMinimum: 'number',
  exclusiveMaximum: 'number',
};

/** Keywords that fix the values by themselves: a schema with one of them is left alone. */
const SELF_TYPED = ['type', 'const', 'enum', '$ref', 'anyOf', 'oneOf', 'allOf'];

/**
 * The one JSON type `s`'s keywords imply when it names none: 'object', 'array', 'string',
 * 'number'; null when it names a type (or fixes its values), or has no type-specific keyword;
 * 'mixed' when its keywords belong to several types.
 */
export function impliedType(s: Schema): string | null {
  if (SELF_TYPED.some((k) => k in s)) return null;
  const found = new Set(Object.keys(s).flatMap((k) => (KEYWORD_TYPE[k] ? [KEYWORD_TYPE[k]] : [])));
  if (found.size === 0) return null;
  return found.size === 1 ? [...found][0]! : 'mixed';
}

/** A `required` name whose value schema cannot be made explicit, or undefined. */
export function undecidableRequired(s: Schema): string | undefined {
  if (!Array.isArray(s.required) || !mayBeObject(s)) return undefined;
  const props = isSchemaObject(s.properties) ? s.properties : {};
  if (s.additionalProperties !== false && s.patternProperties === undefined) return undefined;
  return s.required.map(String).find((name) => !(name in props));
}

/** Whether `s` allows objects at all (`required` and the like judge only objects). */
function mayBeObject(s: Schema): boolean {
  if (s.type === undefined) return true;
  return (Array.isArray(s.type) ? s.type : [s.type]).includes('object');
}

/** The JSON types, `integer` within `number`. */
const ALL_TYPES = ['string', 'number', 'boolean', 'null', 'object', 'array'];
const NOT_ANNOTATIONS = new Set(['title', 'description', '$comment']);

/**
 * `not: {"type": T}` as the types it leaves: `s.type` (or every type) less T, as a list. null
 * when `not` has another form; 'empty' when no type is left; 'fractions' when T takes
 * `integer` from `number` (the numbers that are not whole have no type to name).
 */
export function typesLeftByNot(s: Schema): string[] | null | 'empty' | 'fractions' {
  const n = s.not;
  if (!isSchemaObject(n) || n.type === undefined) return null;
  if (Object.keys(n).some((k) => k !== 'type' && !NOT_ANNOTATIONS.has(k))) return null;
  const out = (Array.isArray(n.type) ? n.type : [n.type]).map(String);
  if (out.includes('integer') && !out.includes('number')) return 'fractions';
  const base = s.type === undefined ? ALL_TYPES : (Array.isArray(s.type) ? s.type : [s.type]).map(String);
  const left = base.filter((t) => !out.includes(t) && !(t === 'integer' && out.includes('number')));
  return left.length === 0 ? 'empty' : left;
}

/** Makes `node`'s implied types and required properties explicit, in place, everywhere. */
export function makeImplicitExplicit(node: unknown): boolean {
  if (!isSchemaObject(node)) return false;
  let changed = false;
  const left = typesLeftByNot(node);
  if (Array.isArray(left)) {
    node.type = left.length === 1 ? left[0] : left;
    delete node.not;
    changed = true;
  }
  const t = impliedType(node);
  if (t && t !== 'mixed') {
    node.type = t;
    changed = true;
  }
  if (
    Array.isArray(node.required) &&
    mayBeObject(node) &&
    node.additionalProperties !== false &&
    node.patternProperties === undefined
  ) {
    const props = isSchemaObject(node.properties) ? node.properties : {};
    const missing = node.required.map(String).filter((name) => !(name in props));
    if (missing.length > 0) {
      const value = isSchemaObject(node.additionalProperties) ? node.additionalProperties : {};
      for (const name of missing) props[name] = structuredClone(value);
      node.properties = props;
      changed = true;
    }
  }
  for (const sub of subschemas(node)) changed = makeImplicitExplicit(sub) || changed;
  return changed;
}
