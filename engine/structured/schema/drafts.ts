/**
 * A schema written for an older draft, respelled in draft 2020-12 with the same meaning, so
 * the checks, the grammar and the document check (post-check.ts) all read one dialect:
 *
 * - draft 4's boolean `exclusiveMinimum`/`exclusiveMaximum` (modifiers of `minimum`/`maximum`)
 *   become the numeric bounds of drafts 6+;
 * - drafts 4-2019's tuple `items: [A, B]` with `additionalItems: C` becomes
 *   `prefixItems: [A, B]` with `items: C` (an `additionalItems` beside no tuple judges nothing
 *   and goes);
 * - `dependencies` becomes `dependentRequired` (its lists of names) and `dependentSchemas`
 *   (its schemas), as 2019-09 split it;
 * - under drafts 4-7 (named by `$schema`), keywords beside a `$ref` are ignored, as those drafts
 *   say: they go;
 * - a root `true` is `{}`;
 * - draft 4's `id` (a base URI) goes: every reference Prism follows is inside the document
 *   (`#`, `#/...`), 2020-12 gives `id` no meaning, and ajv refuses to compile a schema that has
 *   one ("use $id"), which would leave the document check (post-check.ts) without a validator.
 *
 * Everything else is left as written. The input is not modified.
 */
import { isSchemaObject, type Schema } from './node.js';

/** Keywords whose value is a map of name → subschema. */
const MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
/** Keywords whose value is one subschema. */
const ONE = [
  'additionalProperties',
  'propertyNames',
  'contains',
  'not',
  'if',
  'then',
  'else',
  'unevaluatedItems',
  'unevaluatedProperties',
  'additionalItems',
  'items',
];
/** Keywords whose value is a list of subschemas. */
const LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items'];

const OLD_REF_DRAFTS = /json-schema\.org\/draft-0[4-7]\/schema/;

export function normalizeDraft(schema: unknown): unknown {
  if (schema === true) return {};
  const copy = structuredClone(schema);
  const $schema = isSchemaObject(copy) && typeof copy.$schema === 'string' ? copy.$schema : '';
  const oldRefs = OLD_REF_DRAFTS.test($schema);
  normalize(copy, oldRefs);
  // A `$ref` may point anywhere in the document (`#/sentences`, under a keyword no draft
  // defines), where the walk above does not go: normalize each such target too.
  for (const target of refTargets(copy)) normalize(target, oldRefs);
  return copy;
}

/** The objects the document's local `$ref`s (`#/a/b`) point at, each once. */
function refTargets(root: unknown): Set<unknown> {
  const targets = new Set<unknown>();
  const seen = new Set<unknown>();
  const visit = (v: unknown): void => {
    if (v === null || typeof v !== 'object' || seen.has(v)) return;
    seen.add(v);
    if (Array.isArray(v)) return v.forEach(visit);
    const ref = (v as Record<string, unknown>).$ref;
    if (typeof ref === 'string' && ref.startsWith('#/')) {
      let at: unknown = root;
      for (const raw of ref.slice(2).split('/')) {
        const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
        at = at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined;
      }
      if (isSchemaObject(at)) targets.add(at);
    }
    for (const x of Object.values(v)) visit(x);
  };
  visit(root);
  return targets;
}

function normalize(s: unknown, refIgnoresSiblings: boolean): void {
  if (!isSchemaObject(s)) return;
  if (typeof s.id === 'string') delete s.id;
  for (const side of ['Minimum', 'Maximum'] as const) {
    const ex = `exclusive${side}`;
    const bound = side.toLowerCase();
    if (typeof s[ex] !== 'boolean') continue;
    if (s[ex] === true && typeof s[bound] === 'number') {
      s[ex] = s[bound];
      delete s[bound];
    } else delete s[ex];
  }
  if (Array.isArray(s.items)) {
    s.prefixItems = s.items;
    if (s.additionalItems !== undefined) s.items = s.additionalItems;
    else delete s.items;
    delete s.additionalItems;
  } else if (s.additionalItems !== undefined) delete s.additionalItems;
  if (isSchemaObject(s.dependencies)) {
    const required: Schema = {};
    const schemas: Schema = {};
    for (const [name, v] of Object.entries(s.dependencies)) {
      if (Array.isArray(v)) required[name] = v;
      else schemas[name] = v;
    }
    delete s.dependencies;
    if (Object.keys(required).length > 0)
      s.dependentRequired = {
        ...(isSchemaObject(s.dependentRequired) ? s.dependentRequired : {}),
        ...required,
      };
    if (Object.keys(schemas).length > 0)
      s.dependentSchemas = { ...(isSchemaObject(s.dependentSchemas) ? s.dependentSchemas : {}), ...schemas };
  }
  if (refIgnoresSiblings && typeof s.$ref === 'string')
    for (const k of Object.keys(s)) if (k !== '$ref' && k !== 'definitions' && k !== '$defs') delete s[k];
  for (const k of MAPS)
    if (isSchemaObject(s[k])) for (const v of Object.values(s[k])) normalize(v, refIgnoresSiblings);
  for (const k of ONE) if (isSchemaObject(s[k])) normalize(s[k], refIgnoresSiblings);
  for (const k of LISTS) if (Array.isArray(s[k])) for (const v of s[k]) normalize(v, refIgnoresSiblings);
}
