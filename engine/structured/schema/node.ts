/**
 * A JSON Schema node as the checks and rewrites of this folder see it, and where its
 * subschemas are — one list, so that the check (check.ts) and every rewrite
 * (rewrite.ts, branch-merge.ts, implicit.ts) visit the same places.
 */
export type Schema = Record<string, unknown>;

export const isSchemaObject = (v: unknown): v is Schema =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** Keywords whose value is a map name → subschema. */
export const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions'];
/** Keywords whose value is a list of subschemas. */
export const SCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];

/**
 * The subschemas of `s` that the grammar compiles: those of the maps and lists above, `items`
 * (a schema, or a list of them) and `additionalProperties`. Data (`const`, `enum`, examples)
 * is never among them; keywords that hold schemas but are refused (`not`, `contains`, ...)
 * never reach a rewrite.
 */
export function subschemas(s: Schema): unknown[] {
  const out: unknown[] = [];
  for (const k of SCHEMA_MAPS) if (isSchemaObject(s[k])) out.push(...Object.values(s[k]));
  for (const k of SCHEMA_LISTS) if (Array.isArray(s[k])) out.push(...s[k]);
  if (Array.isArray(s.items)) out.push(...s.items);
  else if (s.items !== undefined) out.push(s.items);
  if (s.additionalProperties !== undefined) out.push(s.additionalProperties);
  return out;
}
