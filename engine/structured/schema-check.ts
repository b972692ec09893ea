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
import { mergeBranches } from './branch-merge.js';
import { branchesDisjoint } from './oneof-disjoint.js';
import { impliedType, undecidableRequired } from './schema-implicit.js';

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

/**
 * A refused keyword that constrains nothing where it stands, so validators and we ignore it:
 * `additionalItems` without a tuple `items` array (it judges only items past the tuple), and
 * an empty `dependencies`/`dependentRequired`/`dependentSchemas` map.
 */
function isNoOp(s: Record<string, unknown>, key: string): boolean {
  if (key === 'additionalItems') return !Array.isArray(s.items);
  if (key === 'dependencies' || key === 'dependentRequired' || key === 'dependentSchemas') {
    const m = s[key];
    return m !== null && typeof m === 'object' && !Array.isArray(m) && Object.keys(m).length === 0;
  }
  return false;
}

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
  walk(schema as Record<string, unknown>, field, schema);
}

function walk(node: unknown, path: string, root: unknown): void {
  if (typeof node === 'boolean') return;
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return;
  const s = node as Record<string, unknown>;
  for (const key of Object.keys(s)) {
    const wrong = WRONGLY_ENFORCED.get(key);
    if (wrong) throw invalidArgument(`${path}.${key}`, wrong);
    if (REFUSED.has(key) && !isNoOp(s, key))
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
  if (impliedType(s) === 'mixed')
    throw invalidArgument(path, "has keywords of several JSON types but no 'type': name the type");
  const undecided = undecidableRequired(s);
  if (undecided !== undefined)
    throw invalidArgument(
      `${path}.required`,
      `names ${JSON.stringify(undecided)}, which is not in 'properties' while additionalProperties is false or patternProperties is given`,
    );
  if (Array.isArray(s.oneOf) && Array.isArray(s.anyOf))
    throw invalidArgument(`${path}.oneOf`, 'oneOf beside anyOf is not supported');
  if (Array.isArray(s.oneOf) || Array.isArray(s.anyOf)) {
    const merged = mergeBranches(s, root);
    if (!merged.ok) throw invalidArgument(`${path}.${merged.keyword}`, merged.reason);
    // A merged branch is what the grammar compiles: its combinations (a pattern from the
    // parent beside a branch's maxLength) must pass the same rules.
    if (merged.moved.length > 0) {
      const alt = Array.isArray(s.oneOf) ? 'oneOf' : 'anyOf';
      merged.branches.forEach((b, i) => walk(b, `${path}.${alt}[${i}]`, root));
    }
    if (Array.isArray(s.oneOf) && !branchesDisjoint(merged.branches))
      throw invalidArgument(
        `${path}.oneOf`,
        'is enforced as anyOf by the grammar, so a document could match several branches: use anyOf, or make the branches exclusive (different types or const/enum values, a required property with different const values, or additionalProperties false)',
      );
  }
  if (Array.isArray(s.allOf) && s.allOf.length > 1)
    throw invalidArgument(`${path}.allOf`, 'allOf with more than one schema is not supported');
  if (typeof s.$ref === 'string' && !s.$ref.startsWith('#'))
    throw invalidArgument(`${path}.$ref`, 'only references inside the schema (#/...) are supported');
  for (const k of SCHEMA_MAPS) {
    const m = s[k];
    if (m && typeof m === 'object')
      for (const [name, sub] of Object.entries(m)) walk(sub, `${path}.${k}.${name}`, root);
  }
  for (const k of SCHEMA_LISTS) {
    const l = s[k];
    if (Array.isArray(l)) l.forEach((sub, i) => walk(sub, `${path}.${k}[${i}]`, root));
  }
  if (Array.isArray(s.items)) s.items.forEach((sub, i) => walk(sub, `${path}.items[${i}]`, root));
  else walk(s.items, `${path}.items`, root);
  walk(s.additionalProperties, `${path}.additionalProperties`, root);
}
