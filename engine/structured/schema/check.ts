/**
 * Decides whether a client's JSON Schema can be enforced, before anything is compiled. xgrammar
 * silently skips keywords it does not implement (`multipleOf`, `uniqueItems`, `not`, ...), so
 * the engine would emit documents that break the schema while claiming to follow it. This
 * module is the allowlist that prevents that: a schema is valid JSON Schema (ajv's meta-schema
 * check) and uses only keywords that the grammar enforces (or that constrain nothing, such as
 * `description`), or the request fails with a 4xx naming the keyword and where it is.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { refuse, refuseAlways } from './refusal.js';
import {
  INTEGER_FORMAT_RANGES,
  NUMBER_FORMAT_RANGES,
  forbiddenPropertyDroppable,
  byteRewritable,
  integerType,
  numberType,
  stringType,
  wholeNumberTypes,
} from './rewrite.js';
import {
  mergeAllOf,
  mergeBranches,
  mergeCycle,
  mergeCycleError,
  referenceLoop,
  resolveRef,
  type Inlined,
  type Relax,
} from './branch-merge.js';
import { DERIVED_SCALE, checkSchemaSize, type VisitBudget } from './limits.js';
import { branchesDisjoint } from './oneof-disjoint.js';
import { filterEnum } from './enum-siblings.js';
import { foldSchemaLengths } from './pattern-length.js';
import { anchorPlacement } from './pattern-anchors.js';
import { SCHEMA_LISTS, SCHEMA_MAPS, isSchemaObject } from './node.js';
import { KEYWORD_TYPE, impliedType, typesLeftByNot, undecidableRequired } from './implicit.js';

/** Keywords xgrammar turns into grammar rules (documented in docs/api.md). */
const ENFORCED_KEYWORDS: readonly string[] = [
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
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
];

/**
 * Numeric bounds. xgrammar 0.2.8 enforces them exactly on integers (exactness.test.ts
 * checks every bound digit by digit) and soundly on numbers, on a grid of 10^-6: a decimal
 * range writes at most 6 decimals and no exponent, and rounds each bound inwards to that grid
 * (0.1234567 as a bound would be moved). It applies them only where the schema gives `type`,
 * and an empty range becomes an empty number (`{"a": }`, not JSON) — checkRange refuses those.
 */
const RANGE_KEYWORDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'] as const;
/** Decimals of the grammar library's decimal ranges. */
const RANGE_DECIMALS = 6;

/**
 * Standard JSON Schema keywords that constrain but that the grammar does not enforce:
 * refused, naming the keyword. Keywords outside the JSON Schema vocabulary (`x-...`,
 * `example`, draft-04 `id`, ...) constrain nothing — validators ignore them, and so do we.
 */
const REFUSED_KEYWORDS: readonly string[] = [
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
const REFUSED_FORMATS = new Set(['iri', 'iri-reference', 'idn-email', 'idn-hostname', 'regex']);

/** `format` values the grammar enforces; any other would be skipped, so it is refused. */
const ENFORCED_FORMATS: readonly string[] = [
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
  'float',
  'double',
  'byte',
];

/**
 * `multipleOf` where xgrammar 0.2.8 enforces it exactly (shape.test.ts checks every
 * integer in a window): on `type: "integer"`, a whole divisor from 1 to 1024, and no bounds
 * (nor int32/int64, which become bounds) — beside a range it drops the divisor silently.
 */
function multipleOfEnforced(s: Record<string, unknown>): boolean {
  const m = s.multipleOf;
  return (
    s.type === 'integer' &&
    typeof m === 'number' &&
    Number.isInteger(m) &&
    m >= 1 &&
    m <= 1024 &&
    RANGE_KEYWORDS.every((k) => s[k] === undefined) &&
    !(typeof s.format === 'string' && s.format in INTEGER_FORMAT_RANGES)
  );
}

/**
 * A refused keyword that the grammar enforces where it stands (`multipleOf`, above), or that
 * constrains nothing there, so validators and we ignore it:
 * `additionalItems` without a tuple `items` array (it judges only items past the tuple), and
 * an empty `dependencies`/`dependentRequired`/`dependentSchemas` map.
 */
function isNoOp(s: Record<string, unknown>, key: string): boolean {
  if (key === 'additionalItems') return !Array.isArray(s.items);
  if (key === 'multipleOf') return multipleOfEnforced(s);
  if (key === 'dependencies' || key === 'dependentRequired' || key === 'dependentSchemas') {
    const m = s[key];
    return m !== null && typeof m === 'object' && !Array.isArray(m) && Object.keys(m).length === 0;
  }
  return false;
}

/** The string formats xgrammar writes itself (its own regular expression for each). */
const STRING_FORMATS = new Set(
  ENFORCED_FORMATS.filter((f) => !['int32', 'int64', 'float', 'double', 'byte'].includes(f)),
);

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);
const REFUSED = new Set(REFUSED_KEYWORDS);

let metaValidator: Ajv2020 | null = null;

/**
 * Throws INVALID_ARGUMENT (field = `field` plus the JSON path inside the schema) unless
 * `schema` is a JSON Schema object whose every constraint the grammar enforces.
 */
export function checkJsonSchema(
  schema: unknown,
  field: string,
  relax: Relax = null,
  /** The schema is one Prism derived from the client's by merging (prepare.ts): wider limits. */
  derived = false,
): void {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema))
    throw refuse(field, 'must be a JSON Schema object');
  // First, iteratively: everything after this recurses over the schema's nesting.
  const budget = checkSchemaSize(schema, field, derived ? DERIVED_SCALE : 1);
  checkMetaSchema(schema, field);
  try {
    walk(schema as Record<string, unknown>, field, { root: schema, budget, relax, field }, []);
  } catch (e) {
    // The limits above keep the walk's recursion bounded; should a schema still exhaust the
    // stack, it is the client's schema that is too complex, never a server error.
    if (e instanceof RangeError) throw refuse(field, 'is too complex to check (nested too deeply)');
    throw e;
  }
}

/** Throws INVALID_ARGUMENT (no relaxation helps) unless `schema` is valid JSON Schema. */
export function checkMetaSchema(schema: object, field: string): void {
  metaValidator ??= new Ajv2020({ strict: false, validateFormats: false });
  // `$schema` names a draft; the meta-schema check below is 2020-12's, which draft-07
  // schemas (the common case) also pass, so the name itself is not looked up.
  const { $schema: _ignored, ...body } = schema as Record<string, unknown>;
  if (!metaValidator.validateSchema(body)) {
    const e = metaValidator.errors?.[0];
    const where = e?.instancePath ? e.instancePath.replace(/\//g, '.') : '';
    throw refuseAlways(`${field}${where}`, `is not valid JSON Schema: ${e?.message ?? 'rejected'}`);
  }
}

interface Walk {
  readonly root: unknown;
  readonly budget: VisitBudget;
  /**
   * Null: the first problem refuses the schema. Otherwise (the relaxed preparation,
   * prepare.ts) a problem that dropping keywords resolves drops them from the node — the
   * schema then accepts more, never less — and is recorded here; the rest still refuse.
   */
  readonly relax: Relax;
  /** The client's field, the prefix of every path (stripped from what `relax` records). */
  readonly field: string;
}

/**
 * Checks `node` at `path`. `expanding`: the definitions that merges on the way here have
 * inlined (branch-merge.ts); a merge that inlines one of them again is a cycle, refused.
 */
function walk(node: unknown, path: string, ctx: Walk, expanding: readonly Inlined[]): void {
  if (typeof node === 'boolean') return;
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return;
  ctx.budget.visit(path);
  const root = ctx.root;
  // allOf is enforced as the one schema its members merge into (branch-merge.ts): that schema
  // is what the grammar compiles, so it is what is checked.
  if (Array.isArray((node as Record<string, unknown>).allOf)) {
    const merged = mergeAllOf(node as Record<string, unknown>, root);
    if (!merged.ok) throw refuse(`${path}.${merged.keyword}`, merged.reason);
    const cycle = mergeCycle(merged.inlined, expanding);
    if (cycle !== undefined) throw mergeCycleError(`${path}.allOf`, cycle);
    walk(merged.schema, path, ctx, [...expanding, ...merged.inlined]);
    return;
  }
  const s = node as Record<string, unknown>;
  /**
   * A problem at `at`: refuses, or (relaxed) resolves it by `fix` (by default dropping the
   * `drop` keywords from `s`) and records it. An empty `drop` without `fix` always refuses.
   */
  const problem = (at: string, reason: string, drop: readonly string[], fix?: () => void): void => {
    if (!ctx.relax || (drop.length === 0 && !fix)) throw refuse(at, reason);
    if (fix) fix();
    else for (const k of drop) delete s[k];
    ctx.relax.push({ path: at.slice(ctx.field.length), reason });
  };
  for (const key of Object.keys(s)) {
    if (!(key in s)) continue; // dropped by a relaxation above
    if (key === 'multipleOf' && !multipleOfEnforced(s)) {
      problem(
        `${path}.multipleOf`,
        `keyword 'multipleOf' is not supported here: the grammar enforces it only on type "integer", with a whole divisor from 1 to 1024 and no bounds (minimum/maximum, int32/int64)`,
        ['multipleOf'],
      );
      continue;
    }
    if (key === 'not') {
      const left = typesLeftByNot(s);
      if (left === 'empty') {
        problem(`${path}.not`, 'excludes every type the schema allows', ['not']);
        continue;
      }
      if (left === 'fractions') {
        problem(
          `${path}.not`,
          'excluding integers from numbers is not supported (the grammar has no type for numbers that are not whole)',
          ['not'],
        );
        continue;
      }
      if (left !== null) continue;
    }
    if (REFUSED.has(key) && !isNoOp(s, key))
      problem(
        `${path}.${key}`,
        `keyword '${key}' is not supported: the grammar cannot enforce it (supported: ${ENFORCED_KEYWORDS.join(', ')})`,
        [key],
      );
  }
  const types = Array.isArray(s.type) ? s.type : s.type === undefined ? [] : [s.type];
  for (const t of types)
    if (typeof t !== 'string' || !TYPES.has(t))
      throw refuse(`${path}.type`, `unknown type ${JSON.stringify(t)}`);
  // int32/int64 are enforced as ranges (rewrite.ts), on integer types only.
  if (typeof s.format === 'string' && s.format in INTEGER_FORMAT_RANGES && !integerType(s.type))
    problem(
      `${path}.format`,
      `format ${JSON.stringify(s.format)} is supported on type "integer" (or ["integer", "null"]) only`,
      ['format'],
    );
  // float/double are enforced as their finite ranges (rewrite.ts), on number types only.
  if (typeof s.format === 'string' && s.format in NUMBER_FORMAT_RANGES && !numberType(s.type))
    problem(
      `${path}.format`,
      `format ${JSON.stringify(s.format)} is supported on type "number" (or ["number", "null"]) only`,
      ['format'],
    );
  checkRange(s, path, problem);
  // xgrammar 0.2.8 refuses to compile a minimum count above its maximum; no value of that type
  // satisfies it (relaxed: the counts go, the document is checked).
  for (const [lo, hi, what] of COUNTS)
    if (typeof s[lo] === 'number' && typeof s[hi] === 'number' && (s[lo] as number) > (s[hi] as number))
      problem(`${path}.${lo}`, `is greater than '${hi}': no ${what} satisfies both`, [lo, hi]);
  if (
    Array.isArray(s.prefixItems) &&
    s.items === false &&
    typeof s.minItems === 'number' &&
    s.minItems > s.prefixItems.length
  )
    problem(
      `${path}.minItems`,
      'is greater than the number of prefixItems while items is false: no array satisfies both',
      ['minItems'],
    );
  if (
    s.additionalProperties === false &&
    s.patternProperties === undefined &&
    typeof s.minProperties === 'number' &&
    s.minProperties > Object.keys(isSchemaObject(s.properties) ? s.properties : {}).length
  )
    problem(
      `${path}.minProperties`,
      'is greater than the number of properties while additionalProperties is false: no object satisfies both',
      ['minProperties'],
    );
  if (isSchemaObject(s.properties))
    for (const [name, sub] of Object.entries(s.properties))
      if (sub === false && !forbiddenPropertyDroppable(s, name))
        problem(
          `${path}.properties.${name}`,
          'is false (the property must not appear) beside required, additionalProperties or patternProperties that would admit it: the grammar cannot express that',
          [],
          () => {
            delete (s.properties as Record<string, unknown>)[name];
            if (Array.isArray(s.required)) s.required = s.required.filter((r) => r !== name);
          },
        );
  if (typeof s.maxProperties === 'number' && Array.isArray(s.required) && s.required.length > s.maxProperties)
    problem(
      `${path}.maxProperties`,
      "is less than the number of 'required' properties: no object satisfies both",
      ['maxProperties'],
    );
  // byte (base64) is enforced as a pattern (rewrite.ts), on string types only.
  if (s.format === 'byte' && !(stringType(s.type) && byteRewritable(s)))
    problem(
      `${path}.format`,
      'format "byte" is supported on type "string" (or ["string", "null"]) without pattern, minLength or maxLength',
      ['format'],
    );
  if (typeof s.format === 'string' && REFUSED_FORMATS.has(s.format))
    problem(
      `${path}.format`,
      `format ${JSON.stringify(s.format)} is not supported (supported: ${ENFORCED_FORMATS.join(', ')})`,
      ['format'],
    );
  if (typeof s.pattern === 'string' && hasLookaround(s.pattern))
    problem(`${path}.pattern`, LOOKAROUND, ['pattern']);
  // xgrammar 0.2.8 ignores anchors and matches the whole string (pattern-inner-anchor): exact
  // only where every ^ and $ can stand only at the ends (pattern-anchors.ts).
  if (typeof s.pattern === 'string' && anchorPlacement(s.pattern) !== 'exact')
    problem(`${path}.pattern`, INNER_ANCHOR, ['pattern']);
  if (s.patternProperties && typeof s.patternProperties === 'object')
    for (const key of Object.keys(s.patternProperties))
      if (hasLookaround(key) || anchorPlacement(key) !== 'exact') {
        problem(`${path}.patternProperties`, hasLookaround(key) ? LOOKAROUND : INNER_ANCHOR, [
          'patternProperties',
        ]);
        break;
      }
  // xgrammar 0.2.8 drops the length limits beside a format it writes itself
  // (format-drops-lengths); formats it does not know are annotations and leave them alone.
  if (typeof s.format === 'string' && STRING_FORMATS.has(s.format))
    for (const k of ['minLength', 'maxLength'])
      if (s[k] !== undefined)
        problem(`${path}.${k}`, `'${k}' cannot be combined with format ${JSON.stringify(s.format)}`, [k]);
  // xgrammar 0.2.8 drops the length limits and the format beside a pattern
  // (pattern-drops-lengths); lengths fold into a pattern that is one repeated character class
  // (pattern-length.ts).
  const folded = foldSchemaLengths(s);
  if (folded && 'empty' in folded)
    problem(`${path}.pattern`, 'no string matches the pattern within minLength/maxLength', [
      'minLength',
      'maxLength',
    ]);
  if (s.pattern !== undefined)
    for (const k of folded && !('empty' in folded) ? ['format'] : ['minLength', 'maxLength', 'format'])
      if (s[k] !== undefined) problem(`${path}.${k}`, `'${k}' cannot be combined with 'pattern'`, [k]);
  if (impliedType(s) === 'mixed')
    problem(
      path,
      "has keywords of several JSON types but no 'type': name the type",
      Object.keys(s).filter((k) => KEYWORD_TYPE[k] !== undefined),
    );
  const undecided = undecidableRequired(s);
  if (undecided !== undefined) {
    const reason = `names ${JSON.stringify(undecided)}, which is not in 'properties' while additionalProperties is false or patternProperties is given`;
    // With additionalProperties false no object has it: refused in both modes. Beside
    // patternProperties (relaxed) the names are listed with any value, checked after.
    if (s.additionalProperties === false) throw refuse(`${path}.required`, reason);
    problem(`${path}.required`, reason, [], () => {
      const props = (isSchemaObject(s.properties) ? s.properties : {}) as Record<string, unknown>;
      for (const name of (s.required as unknown[]).map(String)) if (!(name in props)) props[name] = {};
      s.properties = props;
    });
  }
  // xgrammar 0.2.8 drops every keyword beside enum/const (enum-ignores-siblings): the values
  // are filtered by them instead (enum-siblings.ts), which needs them decidable.
  const values = filterEnum(s);
  if (values && 'undecided' in values)
    problem(
      path,
      'enum/const beside keywords that refer elsewhere ($ref) is not supported: the grammar enforces only the values',
      values.beside,
    );
  else if (values && values.values.length === 0)
    problem(path, 'no value of enum/const satisfies the keywords beside it', values.beside);
  if (Array.isArray(s.oneOf) && Array.isArray(s.anyOf))
    problem(`${path}.oneOf`, 'oneOf beside anyOf is not supported', ['oneOf']);
  let walkedBranches = false;
  if (Array.isArray(s.oneOf) || Array.isArray(s.anyOf)) {
    const merged = mergeBranches(s, root);
    if (!merged.ok) throw refuse(`${path}.${merged.keyword}`, merged.reason);
    // A merged branch is what the grammar compiles: its combinations (a pattern from the
    // parent beside a branch's maxLength) must pass the same rules.
    if (merged.moved.length > 0) {
      const alt = Array.isArray(s.oneOf) ? 'oneOf' : 'anyOf';
      merged.branches.forEach((b, i) => {
        const cycle = mergeCycle(merged.inlined[i]!, expanding);
        if (cycle !== undefined) throw mergeCycleError(`${path}.${alt}[${i}]`, cycle);
        walk(b, `${path}.${alt}[${i}]`, ctx, [...expanding, ...merged.inlined[i]!]);
      });
      walkedBranches = true;
    }
    if (Array.isArray(s.oneOf) && !branchesDisjoint(merged.branches.map((b) => resolveRef(b, root) ?? b)))
      problem(
        `${path}.oneOf`,
        'is enforced as anyOf by the grammar, so a document could match several branches: use anyOf, or make the branches exclusive (different types or const/enum values, a required property with different const values, or additionalProperties false)',
        [],
        () => {
          // Relaxed: compiled as the anyOf it is for the grammar; "only one" is checked after.
          s.anyOf = s.oneOf;
          delete s.oneOf;
        },
      );
  }
  // xgrammar 0.2.8 resolves '#' and JSON pointers ('#/...'); any other reference (another
  // document, or an anchor such as '#node') it compiles as "any JSON value" (anchor-ref).
  if (typeof s.$ref === 'string' && s.$ref !== '#' && !s.$ref.startsWith('#/'))
    problem(`${path}.$ref`, 'only references inside the schema (# or #/...) are supported', ['$ref']);
  const loop = referenceLoop(s, root);
  if (loop !== undefined)
    throw refuse(
      path,
      `is a cycle of references (through ${JSON.stringify(loop)}) that never reaches a schema: no document matches it`,
    );
  for (const k of SCHEMA_MAPS) {
    const m = s[k];
    if (m && typeof m === 'object')
      for (const [name, sub] of Object.entries(m)) walk(sub, `${path}.${k}.${name}`, ctx, expanding);
  }
  for (const k of SCHEMA_LISTS) {
    const l = s[k];
    // Merged branches were checked above: they, not the branches as written, are compiled
    // (a branch that only conflicts with what is beside it has been dropped).
    if (walkedBranches && (k === 'anyOf' || k === 'oneOf')) continue;
    if (Array.isArray(l)) l.forEach((sub, i) => walk(sub, `${path}.${k}[${i}]`, ctx, expanding));
  }
  if (Array.isArray(s.items)) s.items.forEach((sub, i) => walk(sub, `${path}.items[${i}]`, ctx, expanding));
  else walk(s.items, `${path}.items`, ctx, expanding);
  walk(s.additionalProperties, `${path}.additionalProperties`, ctx, expanding);
}

/** Counts with a minimum and a maximum keyword, and what they count. */
const COUNTS = [
  ['minLength', 'maxLength', 'string'],
  ['minItems', 'maxItems', 'array'],
  ['minProperties', 'maxProperties', 'object'],
] as const;

const LOOKAROUND =
  'lookahead and lookbehind ((?=, (?!, (?<=, (?<!) are not supported: the grammar library ignores lookaheads in a pattern';

const INNER_ANCHOR =
  "'^' or '$' where it can match other than at the start or end of the string is not supported: the grammar library ignores anchors and matches the whole string (a JSON Schema pattern has no /.../ delimiters)";

/**
 * Whether a regular expression has a lookaround group. xgrammar 0.2.8 drops a lookahead in a
 * schema's `pattern` with only a warning (`(?=a)b` then takes "b"); lookbehinds fail to
 * compile. Escapes and character classes (where `(` is literal) are skipped.
 */
export function hasLookaround(pattern: string): boolean {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') i++;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '(' && /^\?(?:[=!]|<[=!])/.test(pattern.slice(i + 1, i + 4))) return true;
  }
  return false;
}

type Problem = (at: string, reason: string, drop: readonly string[]) => void;

/** Refuses numeric bounds the grammar would not enforce as written (see RANGE_KEYWORDS). */
function checkRange(node: Record<string, unknown>, path: string, problem: Problem): void {
  let s = node;
  const given = RANGE_KEYWORDS.filter((k) => s[k] !== undefined);
  if (given.length === 0) return;
  const first = `${path}.${given[0]}`;
  // Bounds alone imply a number (implicit.ts writes the type before compiling).
  if (s.type === undefined && impliedType(s) === 'number') s = { ...s, type: 'number' };
  // Relaxed, any problem drops every bound (the range is then checked on the document).
  if (s.type === undefined)
    return problem(
      first,
      `keyword '${given[0]}' is enforced only beside "type": the grammar applies numeric bounds to typed numbers (add "type": "number" or "integer")`,
      given,
    );
  const types = Array.isArray(s.type) ? s.type : [s.type];
  if (!types.includes('number') && !types.includes('integer')) return; // no number can be written
  const bound = (k: (typeof RANGE_KEYWORDS)[number]) =>
    typeof s[k] === 'number' ? (s[k] as number) : undefined;
  if (wholeNumberTypes(s.type)) {
    for (const k of given)
      if (Math.abs(bound(k)!) >= 2 ** 63)
        return problem(`${path}.${k}`, 'integer bounds must lie within the 64-bit integers', given);
    // The whole numbers in range (fractional bounds round inwards, as rewrite.ts does).
    const format = typeof s.format === 'string' ? INTEGER_FORMAT_RANGES[s.format] : undefined;
    const lo = Math.max(
      Math.ceil(bound('minimum') ?? -Infinity),
      Math.floor(bound('exclusiveMinimum') ?? -Infinity) + 1,
      format?.[0] ?? -Infinity,
    );
    const hi = Math.min(
      Math.floor(bound('maximum') ?? Infinity),
      Math.ceil(bound('exclusiveMaximum') ?? Infinity) - 1,
      format?.[1] ?? Infinity,
    );
    if (lo > hi) problem(first, 'the range is empty: no integer satisfies these bounds', given);
    return;
  }
  for (const k of given) {
    const v = bound(k)!;
    if (Number(v.toFixed(RANGE_DECIMALS)) !== v)
      return problem(
        `${path}.${k}`,
        `number bounds with more than ${RANGE_DECIMALS} decimal places are not supported (the grammar writes numbers in a range with at most ${RANGE_DECIMALS} decimals)`,
        given,
      );
  }
  // The tighter bound on each side; both are on the 10^-6 grid, so the range holds a grid
  // value unless it is inverted, a single excluded point, or one grid step between exclusions.
  const side = (
    incl: number | undefined,
    excl: number | undefined,
    pick: (a: number, b: number) => boolean,
  ) =>
    incl === undefined
      ? excl === undefined
        ? undefined
        : { v: excl, open: true }
      : excl === undefined || pick(incl, excl)
        ? { v: incl, open: false }
        : { v: excl, open: true };
  const lo = side(bound('minimum'), bound('exclusiveMinimum'), (i, e) => i > e);
  const hi = side(bound('maximum'), bound('exclusiveMaximum'), (i, e) => i < e);
  if (
    lo &&
    hi &&
    (lo.v > hi.v ||
      (lo.v === hi.v && (lo.open || hi.open)) ||
      (lo.open && hi.open && hi.v - lo.v < 1.5 * 10 ** -RANGE_DECIMALS))
  )
    problem(
      first,
      `the range is empty: no number with at most ${RANGE_DECIMALS} decimals satisfies these bounds`,
      given,
    );
}
