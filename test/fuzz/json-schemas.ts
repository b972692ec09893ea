/**
 * Generated JSON Schemas (fast-check) that use every keyword of drafts 4 to 2020-12, alone and
 * combined, with recursion (`$defs` that refer to themselves, `$ref: "#"`, merges through a
 * reference): for the structured-output property tests (engine/structured/schema/
 * generated.test.ts), the coverage script (bench/jsonschemabench.ts) and the gateway fuzzer
 * (fuzz.ts, `response_format` bodies).
 */
import fc from 'fast-check';

type Schema = Record<string, unknown> | boolean;

const NAMES = ['a', 'b', 'id', 'name', 'kind', 'x-y', 'n1'];
const PATTERNS = ['^[a-z]+$', '^[0-9]{2,4}$', 'ab', '^(x|y)$', '^[A-Z][a-z]*$', '(?=a)\\w+', '^\\d+$'];
const FORMATS = [
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
  'json-pointer',
  'int32',
  'int64',
  'float',
  'double',
  'byte',
  'iri',
  'regex',
  'semver',
];
const DRAFTS = [
  'http://json-schema.org/draft-04/schema#',
  'http://json-schema.org/draft-06/schema#',
  'http://json-schema.org/draft-07/schema#',
  'https://json-schema.org/draft/2019-09/schema',
  'https://json-schema.org/draft/2020-12/schema',
];

const small = fc.integer({ min: 0, max: 4 });
const bound = fc.oneof(fc.integer({ min: -50, max: 50 }), fc.double({ min: -50, max: 50, noNaN: true }));
const scalarValue = fc.oneof(
  fc.constantFrom(null, true, false, 0, 1, -2, 3.5, '', 'a', 'red', 'x-1'),
  fc.string({ maxLength: 4 }),
  fc.integer({ min: -100, max: 100 }),
);

/** Some of `entries` (each kept or not), as an object. */
function someOf(entries: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Record<string, unknown>> {
  return fc.record(entries, { requiredKeys: [] });
}

function leaf(): fc.Arbitrary<Schema> {
  const str = fc
    .tuple(
      someOf({
        minLength: small,
        maxLength: fc.integer({ min: 0, max: 12 }),
        pattern: fc.constantFrom(...PATTERNS),
        format: fc.constantFrom(...FORMATS),
      }),
      fc.boolean(),
    )
    .map(([k, typed]) => (typed ? { type: 'string', ...k } : k));
  const num = fc
    .tuple(
      fc.constantFrom('integer', 'number', ['integer', 'null'], ['number', 'string'], undefined),
      someOf({
        minimum: bound,
        maximum: bound,
        exclusiveMinimum: bound,
        exclusiveMaximum: bound,
        multipleOf: fc.constantFrom(1, 2, 3, 0.5, 0.01, 7),
        format: fc.constantFrom('int32', 'int64', 'float', 'double'),
      }),
    )
    .map(([type, k]) => (type === undefined ? k : { type, ...k }));
  // Draft-04's boolean exclusive bounds.
  const draft4 = fc
    .record({ maximum: fc.integer({ min: 0, max: 9 }), exclusiveMaximum: fc.boolean() })
    .map((k) => ({ type: 'integer', ...k }));
  return fc.oneof(
    str,
    num,
    draft4,
    fc.constantFrom<Schema>({ type: 'boolean' }, { type: 'null' }, {}, true, false),
    fc.array(scalarValue, { minLength: 1, maxLength: 5 }).map((e) => ({ enum: e })),
    scalarValue.map((v) => ({ const: v })),
  );
}

/**
 * A schema of up to `depth` levels: objects, arrays and combinators over `leaf`s, with the
 * keywords of every draft; `ref` (when given) is a reference to a recursive definition.
 */
function schemaOf(depth: number, ref?: string): fc.Arbitrary<Schema> {
  if (depth <= 0) return ref ? fc.oneof(leaf(), fc.constant({ $ref: ref })) : leaf();
  const sub = schemaOf(depth - 1, ref);
  const names = fc.uniqueArray(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 4 });
  const object = fc
    .tuple(
      names,
      fc.array(sub, { minLength: 4, maxLength: 4 }),
      someOf({
        additionalProperties: fc.oneof(fc.boolean(), sub),
        patternProperties: fc.constantFrom(...PATTERNS).chain((p) => sub.map((s) => ({ [p]: s }))),
        minProperties: small,
        maxProperties: fc.integer({ min: 0, max: 6 }),
        propertyNames: fc.constantFrom({ pattern: '^[a-z]+$' }, { maxLength: 3 }),
        unevaluatedProperties: fc.boolean(),
      }),
      fc.boolean(),
      fc.constantFrom('none', 'dependencies', 'dependentRequired', 'dependentSchemas'),
      fc.boolean(),
    )
    .map(([ns, subs, extra, typed, deps, req]) => {
      const properties = Object.fromEntries(ns.map((n, i) => [n, subs[i]!]));
      const out: Record<string, unknown> = { ...(typed ? { type: 'object' } : {}), properties, ...extra };
      if (req) out.required = ns.slice(0, Math.max(1, ns.length - 1));
      if (deps === 'dependencies') out.dependencies = { [ns[0]!]: ns.slice(1, 2), z: { required: ['a'] } };
      if (deps === 'dependentRequired') out.dependentRequired = { [ns[0]!]: ns.slice(1) };
      if (deps === 'dependentSchemas') out.dependentSchemas = { [ns[0]!]: { minProperties: 2 } };
      return out;
    });
  const array = fc
    .tuple(
      fc.constantFrom('items', 'prefixItems', 'tuple-items'),
      sub,
      fc.array(sub, { minLength: 1, maxLength: 3 }),
      someOf({
        minItems: small,
        maxItems: fc.integer({ min: 0, max: 6 }),
        uniqueItems: fc.boolean(),
        contains: sub,
        minContains: small,
        maxContains: small,
        unevaluatedItems: fc.boolean(),
      }),
      fc.oneof(fc.boolean(), sub),
    )
    .map(([form, item, tuple, extra, additional]) => {
      const out: Record<string, unknown> = { type: 'array', ...extra };
      if (form === 'items') out.items = item;
      else if (form === 'prefixItems') Object.assign(out, { prefixItems: tuple, items: additional });
      else Object.assign(out, { items: tuple, additionalItems: additional }); // drafts 4-2019
      return out;
    });
  const list = fc.array(sub, { minLength: 1, maxLength: 3 });
  const combinator = fc.oneof(
    fc.tuple(fc.constantFrom('anyOf', 'oneOf', 'allOf'), list, leaf()).map(([k, l, beside]) => ({
      [k]: l,
      ...(typeof beside === 'object' ? beside : {}),
    })),
    sub.map((s) => ({ not: s })),
    fc.tuple(sub, sub, sub).map(([i, t, e]) => ({ if: i, then: t, else: e })),
  );
  return fc.oneof({ weight: 3, arbitrary: leaf() }, object, array, combinator);
}

/** A recursive definition used through `$ref` (plainly, or through a merge). */
const recursive: fc.Arbitrary<Schema> = fc
  .tuple(schemaOf(2, '#/$defs/node'), fc.constantFrom('plain', 'allOf', 'beside-anyOf', 'root'))
  .map(([node, how]) => {
    const r = '#/$defs/node';
    const child =
      how === 'allOf'
        ? { allOf: [{ $ref: r }] }
        : how === 'beside-anyOf'
          ? { minProperties: 1, anyOf: [{ type: 'string' }, { $ref: r }] }
          : how === 'root'
            ? { $ref: '#' }
            : { $ref: r };
    const def = {
      type: 'object',
      properties: { value: node, children: { type: 'array', items: child, maxItems: 2 } },
      required: ['value'],
    };
    return { $defs: { node: def }, $ref: r };
  });

/** Every draft's keywords, alone and combined, with and without recursion and a `$schema`. */
export const jsonSchemas: fc.Arbitrary<Schema> = fc
  .tuple(fc.oneof({ weight: 4, arbitrary: schemaOf(3) }, recursive), fc.option(fc.constantFrom(...DRAFTS)))
  .map(([s, draft]) => (draft && typeof s === 'object' ? { $schema: draft, ...s } : s));
