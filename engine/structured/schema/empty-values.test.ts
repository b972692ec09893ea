/**
 * Subschemas no value satisfies (empty-values.ts): refused in every mode where a document
 * must hold such a value, naming the path and the rule ("no document matches"); an optional
 * property that no value satisfies becomes one that must not appear (relaxed), and the
 * document check is not left to fail on every attempt.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileDocumentCheck } from './post-check.js';
import { prepareSchema } from './prepare.js';

/** Refused the same way with and without grammarOnly. */
function refusedBoth(schema: object, field: RegExp | string, reason: RegExp): void {
  for (const grammarOnly of [false, true]) {
    const p = prepareSchema(schema, { field: 'f', grammarOnly });
    assert.ok('refused' in p, `${JSON.stringify(schema)} (grammarOnly ${grammarOnly}) was accepted`);
    if (!('refused' in p)) return;
    if (typeof field === 'string') assert.equal(p.field, field);
    else assert.match(p.field, field);
    assert.match(p.refused, reason);
    assert.match(p.refused, /no document matches the schema$/);
  }
}

const obj = (prop: object) => ({ type: 'object', properties: { a: prop }, required: ['a'] });

test('empty numeric ranges are refused up front in both modes, naming the bound', () => {
  refusedBoth(
    { type: 'integer', minimum: 5, maximum: 3 },
    'f.minimum',
    /no integer satisfies minimum 5, maximum 3/,
  );
  refusedBoth(
    obj({ type: 'integer', exclusiveMinimum: 3, exclusiveMaximum: 4 }),
    'f.properties.a.exclusiveMinimum',
    /range is empty/,
  );
  refusedBoth(obj({ type: 'integer', minimum: 0.2, maximum: 0.8 }), 'f.properties.a.minimum', /no integer/);
  refusedBoth(
    obj({ type: 'integer', format: 'int32', minimum: 2 ** 31 }),
    'f.properties.a.minimum',
    /format int32/,
  );
  refusedBoth(
    obj({ type: 'number', exclusiveMinimum: 1, maximum: 1 }),
    'f.properties.a.exclusiveMinimum',
    /no number/,
  );
  refusedBoth(
    obj({ type: 'number', minimum: 2, exclusiveMaximum: 2 }),
    'f.properties.a.minimum',
    /no number/,
  );
  // bounds alone imply a number (implicit.ts)
  refusedBoth(obj({ minimum: 5, maximum: 3 }), 'f.properties.a.minimum', /no number/);
});

test('inverted counts, required beyond maxProperties, a required false, empty enums', () => {
  refusedBoth(
    obj({ type: 'string', minLength: 5, maxLength: 3 }),
    'f.properties.a.minLength',
    /greater than 'maxLength' \(5 > 3\)/,
  );
  refusedBoth(obj({ type: 'array', minItems: 2, maxItems: 1 }), 'f.properties.a.minItems', /no array/);
  refusedBoth({ type: 'object', minProperties: 3, maxProperties: 2 }, 'f.minProperties', /no object/);
  refusedBoth(
    { type: 'object', properties: { a: {}, b: {} }, required: ['a', 'b'], maxProperties: 1 },
    'f.maxProperties',
    /number of 'required'/,
  );
  refusedBoth({ type: 'object', properties: { a: false }, required: ['a'] }, 'f.properties.a', /is false/);
  refusedBoth(obj({ enum: [] }), 'f.properties.a.enum', /empty list/);
  refusedBoth(obj({ type: 'boolean', enum: ['yes', 'no'] }), 'f.properties.a', /no value of enum\/const/);
  refusedBoth(
    obj({ type: 'string', pattern: '^[a-z]+$', maxLength: 0 }),
    'f.properties.a.pattern',
    /within minLength/,
  );
  refusedBoth(
    { type: 'array', prefixItems: [{ type: 'integer' }], items: false, minItems: 2 },
    'f.minItems',
    /number of prefixItems/,
  );
});

test('found through $ref, allOf, needed items and prefixItems, with the path where it is written', () => {
  refusedBoth(
    {
      type: 'object',
      properties: { a: { $ref: '#/$defs/age' } },
      required: ['a'],
      $defs: { age: { type: 'integer', minimum: 200, maximum: 100 } },
    },
    'f.$defs.age.minimum',
    /no integer/,
  );
  refusedBoth(
    { allOf: [{ type: 'string', minLength: 9, maxLength: 1 }] },
    'f.allOf[0].minLength',
    /no string/,
  );
  refusedBoth(
    { type: 'array', minItems: 1, items: { type: 'integer', minimum: 1, maximum: 0 } },
    'f.items.minimum',
    /no integer/,
  );
  refusedBoth(
    {
      type: 'array',
      minItems: 2,
      prefixItems: [{ type: 'string' }, { type: 'integer', minimum: 3, maximum: 2 }],
    },
    'f.prefixItems[1].minimum',
    /no integer/,
  );
});

test('a pattern that matches no string (a JavaScript literal with its slashes) is refused with the hint', () => {
  refusedBoth(
    obj({ type: 'string', pattern: '/^[0-9]{4}$/' }),
    'f.properties.a.pattern',
    /no \/\.\.\.\/ delimiters/,
  );
  refusedBoth(obj({ type: 'string', pattern: 'a$b' }), 'f.properties.a.pattern', /matches no string/);
});

test('what a document can do without is not refused for it', () => {
  // other types remain: only null matches, checked on the document (relaxed) as before
  const nullable = prepareSchema(obj({ type: ['integer', 'null'], minimum: 5, maximum: 3 }), 'f');
  assert.ok(!('refused' in nullable) && nullable.check !== null, JSON.stringify(nullable));
  // one branch of anyOf; items of an array that may be empty; an unused definition
  for (const s of [
    obj({ anyOf: [{ type: 'integer', minimum: 5, maximum: 3 }, { type: 'string' }] }),
    obj({ type: 'array', items: { type: 'integer', minimum: 5, maximum: 3 } }),
    { ...obj({ type: 'string' }), $defs: { unused: { type: 'integer', minimum: 5, maximum: 3 } } },
    // `not` of an empty schema is "anything"
    obj({ type: 'integer', not: { type: 'integer', minimum: 5, maximum: 3 } }),
  ])
    assert.ok(!('refused' in prepareSchema(s, 'f')), JSON.stringify(s));
  // numbers on the 10^-6 grid: empty for the grammar, not for real numbers (checked)
  const fine = prepareSchema(obj({ type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 0.000001 }), 'f');
  assert.ok(!('refused' in fine), JSON.stringify(fine));
});

test('an optional property no value satisfies must not appear: the grammar never writes it', () => {
  const s = {
    type: 'object',
    properties: { a: { type: 'string' }, b: { type: 'boolean', enum: ['yes'] } },
    required: ['a'],
  };
  const p = prepareSchema(s, 'f');
  assert.ok(!('refused' in p), JSON.stringify(p));
  if ('refused' in p) return;
  const grammar = JSON.parse(p.schema) as { properties: Record<string, unknown> };
  assert.ok(!('b' in grammar.properties) || grammar.properties.b === false, p.schema);
  // the check is still the client's schema: a document with b fails it
  assert.notEqual(p.check, null);
  const check = compileDocumentCheck(p.check!.schema);
  assert.equal(check('{"a": "x"}'), null);
  assert.notEqual(check('{"a": "x", "b": "yes"}'), null);
});
