/**
 * `enum` and `const` beside other keywords. xgrammar 0.2.8 compiles a schema with `enum` or
 * `const` from its values alone and drops every keyword beside them (xgrammar-workarounds.ts:
 * enum-ignores-siblings): `{"type": "boolean", "enum": ["a", true]}` takes `"a"`,
 * `{"const": 5, "minimum": 10}` takes `5`. JSON Schema reads such a node as a conjunction, so
 * the values are filtered by the rest of the node (ajv decides each value) and the rest goes:
 * the grammar then enforces exactly the values that are valid. A rest that refers elsewhere
 * (`$ref`) cannot be decided here.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { isSchemaObject, type Schema } from './node.js';

/** Keywords that constrain nothing, and the keywords that hold the values. */
const INERT = new Set([
  'title',
  'description',
  'default',
  'examples',
  'example',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$comment',
  '$schema',
  '$id',
  'id',
  '$defs',
  'definitions',
  'enum',
  'const',
]);

let ajv: Ajv2020 | null = null;

export type EnumFilter =
  /** No enum/const with constraining keywords beside it. */
  | null
  /** The values that satisfy the rest of the node, and the keywords they make redundant. */
  | { readonly values: readonly unknown[]; readonly beside: readonly string[] }
  /** The rest refers elsewhere: not decided here. */
  | { readonly undecided: true; readonly beside: readonly string[] };

/** The values of `s`'s `enum`/`const` that satisfy the keywords beside them. */
export function filterEnum(s: Schema): EnumFilter {
  const values = 'const' in s ? [s.const] : Array.isArray(s.enum) ? s.enum : null;
  if (values === null) return null;
  const beside = Object.keys(s).filter((k) => !INERT.has(k) && !k.startsWith('x-'));
  if (beside.length === 0) return null;
  const rest = Object.fromEntries(beside.map((k) => [k, s[k]]));
  // The common case, `type` beside the values, without compiling a validator.
  if (beside.length === 1 && beside[0] === 'type') {
    const types = (Array.isArray(s.type) ? s.type : [s.type]).map(String);
    return { values: values.filter((v) => types.some((t) => hasType(v, t))), beside };
  }
  if (JSON.stringify(rest).includes('"$ref"')) return { undecided: true, beside };
  if (!ajv) {
    ajv = new Ajv2020({ strict: false, logger: false, validateSchema: false });
    addFormats.default(ajv);
  }
  let validate;
  try {
    validate = ajv.compile(rest);
  } catch {
    return { undecided: true, beside };
  } finally {
    ajv.removeSchema();
  }
  return { values: values.filter((v) => validate(v)), beside };
}

/**
 * Rewrites `s` in place so the grammar enforces it exactly: the values filtered, the keywords
 * beside them gone (an `enum` of the one value left stays an `enum`). True when it changed.
 * Undecided nodes are left as they are (check.ts refuses or relaxes them first).
 */
export function foldEnumSiblings(s: unknown): boolean {
  if (!isSchemaObject(s)) return false;
  const f = filterEnum(s);
  if (f === null || 'undecided' in f) return false;
  for (const k of f.beside) delete s[k];
  if ('const' in s) {
    if (f.values.length === 0) {
      delete s.const;
      s.enum = [];
    }
  } else s.enum = f.values;
  return true;
}

/** Whether `v` is of JSON Schema type `t` (integers are numbers too). */
function hasType(v: unknown, t: string): boolean {
  switch (t) {
    case 'null':
      return v === null;
    case 'boolean':
      return typeof v === 'boolean';
    case 'string':
      return typeof v === 'string';
    case 'number':
      return typeof v === 'number';
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v);
    case 'array':
      return Array.isArray(v);
    case 'object':
      return isSchemaObject(v);
    default:
      return false;
  }
}
