/**
 * Decides whether a client's JSON Schema can be enforced, before anything is compiled. xgrammar
 * silently skips keywords it does not implement (`multipleOf`, `uniqueItems`, `not`, ...), so
 * the engine would emit documents that break the schema while claiming to follow it. This
 * module is the allowlist that prevents that: a schema is valid JSON Schema (ajv's meta-schema
 * check) and uses only keywords that the grammar enforces (or that constrain nothing, such as
 * `description`), or the request fails with a 4xx naming the keyword and where it is.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { invalidArgument } from '../errors.js';
import { INTEGER_FORMAT_RANGES, byteRewritable, integerType, stringType } from './schema-rewrite.js';

/** Keywords xgrammar turns into grammar rules (documented in docs/api.md). */
export const ENFORCED_KEYWORDS: readonly string[] = [
  'type',
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'minProperties',
  'maxProperties',
  'items',
  'prefixItems',
  'minItems',
  'maxItems',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'allOf',
  '$ref',
  '$defs',
  'definitions',
  'pattern',
  'format',
  'minLength',
  'maxLength',
];

/**
 * Keywords the grammar library turns into rules that are wrong: xgrammar 0.1.27's numeric
 * ranges accept values outside them (integer `maximum: 120` accepts 123; `exclusiveMinimum:
 * 3` accepts 3). Refused with that reason rather than enforced wrongly.
 */
const WRONGLY_ENFORCED: ReadonlyMap<string, string> = new Map(
  ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'].map((k) => [
    k,
    `keyword '${k}' is not supported: the grammar library's numeric ranges are not exact`,
  ]),
);

/**
 * Standard JSON Schema keywords that constrain but that the grammar does not enforce:
 * refused, naming the keyword. Keywords outside the JSON Schema vocabulary (`x-...`,
 * `example`, draft-04 `id`, ...) constrain nothing — validators ignore them, and so do we.
 */
export const REFUSED_KEYWORDS: readonly string[] = [
  'multipleOf',
  'uniqueItems',
  'not',
  'contains',
  'minContains',
  'maxContains',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'dependencies',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
  'additionalItems',
  '$dynamicRef',
  '$recursiveRef',
  '$anchor',
  '$dynamicAnchor',
];

/**
 * Formats that validators check (JSON Schema's own, and OpenAPI's numeric and base64 ones that
 * ajv-formats knows) but the grammar does not enforce. Other format names are annotations.
 */
const REFUSED_FORMATS = new Set([
  'iri',
  'iri-reference',
  'idn-email',
  'idn-hostname',
  'regex',
  'float',
  'double',
]);

/**
 * xgrammar 0.1.27 merges long alternations of strings wrongly: a 27-value `enum` taken from
 * JSONSchemaBench accepted "jejuno-intestinal stoma", a string that is not in it (the prefix of
 * one value joined to the suffix of another). Up to this many values it held in our tests.
 */
export const MAX_ENUM_STRINGS = 16;

/** Keywords that annotate without constraining: accepted and ignored, as any validator does. */
export const ANNOTATION_KEYWORDS: readonly string[] = [
  'description',
  'title',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$schema',
  '$id',
  '$comment',
  'contentMediaType',
  'contentEncoding',
];

/** `format` values the grammar enforces; any other would be skipped, so it is refused. */
export const ENFORCED_FORMATS: readonly string[] = [
  'date',
  'time',
  'date-time',
  'duration',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uuid',
  'uri',
  'uri-reference',
  'uri-template',
  'json-pointer',
  'relative-json-pointer',
  'int32',
  'int64',
  'byte',
];

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);
const REFUSED = new Set(REFUSED_KEYWORDS);
/** Keywords whose value is a map name → subschema. */
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions'];
/** Keywords whose value is a list of subschemas. */
const SCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];

let metaValidator: Ajv2020 | null = null;

/**
 * Throws INVALID_ARGUMENT (field = `field` plus the JSON path inside the schema) unless
 * `schema` is a JSON Schema object whose every constraint the grammar enforces.
 */
export function checkJsonSchema(schema: unknown, field: string): void {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema))
    throw invalidArgument(field, 'must be a JSON Schema object');
  metaValidator ??= new Ajv2020({ strict: false, validateFormats: false });
  // `$schema` names a draft; the meta-schema check below is 2020-12's, which draft-07
  // schemas (the common case) also pass, so the name itself is not looked up.
  const { $schema: _ignored, ...body } = schema as Record<string, unknown>;
  if (!metaValidator.validateSchema(body)) {
    const e = metaValidator.errors?.[0];
    const where = e?.instancePath ? e.instancePath.replace(/\//g, '.') : '';
    throw invalidArgument(`${field}${where}`, `is not valid JSON Schema: ${e?.message ?? 'rejected'}`);
  }
  walk(schema as Record<string, unknown>, field);
}

function walk(node: unknown, path: string): void {
  if (typeof node === 'boolean') return;
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return;
  const s = node as Record<string, unknown>;
  for (const key of Object.keys(s)) {
    const wrong = WRONGLY_ENFORCED.get(key);
    if (wrong) throw invalidArgument(`${path}.${key}`, wrong);
    if (REFUSED.has(key))
      throw invalidArgument(
        `${path}.${key}`,
        `keyword '${key}' is not supported: the grammar cannot enforce it (supported: ${ENFORCED_KEYWORDS.join(', ')})`,
      );
  }
  const types = Array.isArray(s.type) ? s.type : s.type === undefined ? [] : [s.type];
  for (const t of types)
    if (typeof t !== 'string' || !TYPES.has(t))
      throw invalidArgument(`${path}.type`, `unknown type ${JSON.stringify(t)}`);
  // int32/int64 are enforced as ranges (schema-rewrite.ts), on integer types only.
  if (typeof s.format === 'string' && s.format in INTEGER_FORMAT_RANGES && !integerType(s.type))
    throw invalidArgument(
      `${path}.format`,
      `format ${JSON.stringify(s.format)} is supported on type "integer" (or ["integer", "null"]) only`,
    );
  // byte (base64) is enforced as a pattern (schema-rewrite.ts), on string types only.
  if (s.format === 'byte' && !(stringType(s.type) && byteRewritable(s)))
    throw invalidArgument(
      `${path}.format`,
      'format "byte" is supported on type "string" (or ["string", "null"]) without pattern, minLength or maxLength',
    );
  if (typeof s.format === 'string' && REFUSED_FORMATS.has(s.format))
    throw invalidArgument(
      `${path}.format`,
      `format ${JSON.stringify(s.format)} is not supported (supported: ${ENFORCED_FORMATS.join(', ')})`,
    );
  // xgrammar drops the length limits and the format when a pattern is given.
  if (s.pattern !== undefined)
    for (const k of ['minLength', 'maxLength', 'format'])
      if (s[k] !== undefined)
        throw invalidArgument(`${path}.${k}`, `'${k}' cannot be combined with 'pattern'`);
  if (Array.isArray(s.enum) && s.enum.filter((v) => typeof v === 'string').length > MAX_ENUM_STRINGS)
    throw invalidArgument(
      `${path}.enum`,
      `more than ${MAX_ENUM_STRINGS} string values are not supported (the grammar library merges long string alternations wrongly)`,
    );
  if (Array.isArray(s.oneOf) && !branchesDisjoint(s.oneOf))
    throw invalidArgument(
      `${path}.oneOf`,
      'is enforced as anyOf by the grammar, so a document could match several branches: use anyOf, or give each branch a different type',
    );
  if (Array.isArray(s.allOf) && s.allOf.length > 1)
    throw invalidArgument(`${path}.allOf`, 'allOf with more than one schema is not supported');
  if (typeof s.$ref === 'string' && !s.$ref.startsWith('#'))
    throw invalidArgument(`${path}.$ref`, 'only references inside the schema (#/...) are supported');
  for (const k of SCHEMA_MAPS) {
    const m = s[k];
    if (m && typeof m === 'object')
      for (const [name, sub] of Object.entries(m)) walk(sub, `${path}.${k}.${name}`);
  }
  for (const k of SCHEMA_LISTS) {
    const l = s[k];
    if (Array.isArray(l)) l.forEach((sub, i) => walk(sub, `${path}.${k}[${i}]`));
  }
  if (Array.isArray(s.items)) s.items.forEach((sub, i) => walk(sub, `${path}.items[${i}]`));
  else walk(s.items, `${path}.items`);
  walk(s.additionalProperties, `${path}.additionalProperties`);
}

/** The JSON types a branch can take (integer counted as number), or null when not evident. */
function branchTypes(b: unknown): Set<string> | null {
  if (b === null || typeof b !== 'object' || Array.isArray(b)) return null;
  const s = b as Record<string, unknown>;
  const jsonType = (v: unknown) =>
    v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object' ? 'object' : typeof v;
  let types: unknown[] | null = null;
  if (typeof s.type === 'string') types = [s.type];
  else if (Array.isArray(s.type)) types = s.type;
  else if ('const' in s) types = [jsonType(s.const)];
  else if (Array.isArray(s.enum)) types = s.enum.map(jsonType);
  if (!types) return null;
  return new Set(types.map((t) => (t === 'integer' ? 'number' : String(t))));
}

/**
 * xgrammar compiles oneOf as anyOf. That is exact only when no document can match two
 * branches; branches of pairwise different JSON types guarantee it.
 */
function branchesDisjoint(branches: readonly unknown[]): boolean {
  const seen = new Set<string>();
  for (const b of branches) {
    const types = branchTypes(b);
    if (!types) return false;
    for (const t of types) {
      if (seen.has(t)) return false;
      seen.add(t);
    }
  }
  return true;
}
