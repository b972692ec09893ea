/** The JSON Schema allowlist and the constraint's canonical text (no model needed). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalText, choiceGrammar } from '../constraint.js';
import { checkJsonSchema, hasLookaround } from './check.js';
import { checkConstraint } from '../validate.js';

const refused = (schema: unknown, re: RegExp) =>
  assert.throws(
    () => checkJsonSchema(schema, 'f'),
    (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT' && re.test(e.message),
    JSON.stringify(schema),
  );

test('enforced keywords and non-vocabulary annotations are accepted', () => {
  checkJsonSchema(
    {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      description: 'x',
      'x-kubernetes-kind': 'Pod',
      properties: {
        a: { type: ['string', 'null'], maxLength: 3 },
        b: { $ref: '#/$defs/b' },
        c: { type: 'array', items: { enum: [1, 'x'] }, minItems: 1 },
        d: { oneOf: [{ type: 'string' }, { type: 'integer' }] },
        e: { type: 'string', format: 'date-time' },
        g: { type: ['integer', 'null'], format: 'int32' },
        h: { type: 'integer', format: 'int64' },
        i: { type: ['string', 'null'], format: 'byte' },
        j: { type: 'integer', minimum: 0, exclusiveMaximum: 120 },
        k: { type: ['number', 'null'], minimum: -90.5, maximum: 90.000001 },
        l: { type: 'number', format: 'double', exclusiveMinimum: 0 },
        m: { type: ['integer', 'string'], maximum: 1.5 },
        n: { type: 'string', minimum: 1e-9, format: 'non-blank', maxLength: 9 }, // bounds apply to numbers only: none can be written
        o: { enum: Array.from({ length: 200 }, (_, i) => `v${i}`) },
      },
      required: ['a'],
      additionalProperties: false,
      $defs: { b: { const: 3 } },
    },
    'f',
  );
});

test('keywords the grammar does not enforce (or enforces wrongly) are refused by name and path', () => {
  refused({ type: 'number', multipleOf: 2 }, /^f\.multipleOf: keyword 'multipleOf' is not supported/);
  refused({ type: 'array', uniqueItems: true }, /f\.uniqueItems/);
  refused({ properties: { a: { not: { type: 'string', maxLength: 2 } } } }, /^f\.properties\.a\.not:/);
  refused({ enum: [1, 5], maximum: 3 }, /^f\.maximum: keyword 'maximum' is enforced only beside "type"/);
  refused(
    { anyOf: [{ const: 2, exclusiveMinimum: 0 }] },
    /^f\.anyOf\[0\]\.exclusiveMinimum: .*beside "type"/,
  );
  refused(
    { type: 'number', minimum: 0.1234567 },
    /^f\.minimum: number bounds with more than 6 decimal places/,
  );
  refused({ type: 'number', minimum: 2, maximum: 1 }, /^f\.minimum: the range is empty/);
  refused(
    { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 0.000001 },
    /^f\.exclusiveMinimum: the range is empty/,
  );
  refused({ type: ['number', 'null'], minimum: 1, exclusiveMaximum: 1 }, /the range is empty/);
  refused(
    { type: 'integer', exclusiveMinimum: 3, exclusiveMaximum: 4 },
    /^f\.exclusiveMinimum: the range is empty/,
  );
  refused({ type: 'integer', minimum: 0.5, maximum: 0.9 }, /the range is empty: no integer/);
  refused({ type: 'integer', format: 'int32', minimum: 2147483648 }, /the range is empty/);
  refused(
    { type: 'integer', maximum: 1e20 },
    /^f\.maximum: integer bounds must lie within the 64-bit integers/,
  );
  refused(
    { type: 'string', pattern: 'a+', maxLength: 3 },
    /f\.maxLength: 'maxLength' cannot be combined with 'pattern'/,
  );
  refused(
    { allOf: [{ type: 'string', pattern: '^a' }, { pattern: 'b$' }] },
    /^f\.allOf\[1\]\.pattern: conflicts/,
  );
  refused(
    { oneOf: [{ type: 'string' }, { type: 'string', maxLength: 2 }] },
    /f\.oneOf: is enforced as anyOf/,
  );
  refused({ oneOf: [{ type: 'integer' }, { type: 'number' }] }, /f\.oneOf/);
  refused({ type: 'string', format: 'iri' }, /f\.format: format "iri" is not supported/);
  refused({ type: 'string', format: 'int32' }, /f\.format: format "int32" is supported on type "integer"/);
  refused({ type: ['integer', 'string'], format: 'int64' }, /f\.format: format "int64"/);
  refused({ format: 'int32' }, /f\.format: format "int32"/);
  refused({ type: 'integer', format: 'double' }, /f\.format: format "double" is supported on type "number"/);
  refused({ format: 'float' }, /f\.format: format "float"/);
  refused(
    { type: 'string', format: 'byte', maxLength: 8 },
    /f\.format: format "byte" is supported on type "string"/,
  );
  refused({ type: 'integer', format: 'byte' }, /f\.format: format "byte"/);
  refused({ $ref: 'http://example.com/s.json' }, /f\.\$ref: only references inside the schema/);
  refused(
    { properties: { a: { $ref: '#node' } } },
    /f\.properties\.a\.\$ref: only references inside the schema/,
  );
});

test('not JSON Schema, unknown types and non-objects are refused', () => {
  refused({ type: 'strin' }, /^f\.type: unknown type|not valid JSON Schema/);
  refused({ type: 'object', required: 'a' }, /^f\.required: is not valid JSON Schema/);
  refused([1], /^f: must be a JSON Schema object/);
  refused('x', /^f: must be a JSON Schema object/);
});

test('canonical text ignores key order; choices become an escaped grammar', () => {
  const a = canonicalText({ kind: 'json_schema', schema: '{"type":"object","required":["a"]}' });
  const b = canonicalText({ kind: 'json_schema', schema: '{ "required": ["a"], "type": "object" }' });
  assert.equal(a, b);
  assert.notEqual(a, canonicalText({ kind: 'regex', pattern: 'a' }));
  assert.equal(choiceGrammar(['a"b', 'c\\d', 'x\ny']), 'root ::= "a\\"b" | "c\\\\d" | "x\\x0ay"');
});

test('checkConstraint validates shapes', () => {
  assert.deepEqual(checkConstraint({ kind: 'json_object' }), { kind: 'json_object' });
  assert.throws(() => checkConstraint({ kind: 'choice', choices: ['a', ''] }), /constraint\.choices\[1\]/);
  assert.throws(() => checkConstraint({ kind: 'regex', pattern: '' }), /constraint\.pattern/);
  assert.throws(() => checkConstraint({ kind: 'grammar' }), /constraint\.ebnf/);
  assert.throws(() => checkConstraint(null), /constraint: must be an object/);
});

test('lookarounds are found outside escapes and character classes only', () => {
  for (const p of ['(?=a)b', 'x(?!y)', '(?<=a)b', '(?<!a)b', '[a](?=b)'])
    assert.equal(hasLookaround(p), true, p);
  for (const p of ['\\(?=a', '[(?=]a', '(?:a)', '(?<name>a)', 'a?=b', '[\\]](?:x)'])
    assert.equal(hasLookaround(p), false, p);
});
