/**
 * The schema rewrites that make a schema's meaning explicit for the grammar (keywords beside
 * anyOf/oneOf merged into the branches; implied types and required properties spelled out),
 * the oneOf disjointness rules, and — on the bare grammar (a one-symbol vocabulary, text
 * accepted character-wise) — the library behaviour they exist for.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadGrammarAddon } from '../../../native/native.js';
import { bareCompiler, grammarAccepts } from '../bare-grammar.js';
import { distributeSiblings, mergeAllOf, mergeBranches } from './branch-merge.js';
import { branchesDisjoint } from './oneof-disjoint.js';
import { checkJsonSchema } from './check.js';
import { foldLengthIntoPattern } from './pattern-length.js';
import { impliedType, makeImplicitExplicit, typesLeftByNot } from './implicit.js';

const refused = (schema: unknown, re: RegExp) =>
  assert.throws(
    () => checkJsonSchema(schema, 'f'),
    (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT' && re.test(e.message),
    JSON.stringify(schema),
  );

test('keywords beside anyOf/oneOf merge into each branch', () => {
  const s = {
    type: 'object',
    description: 'stays',
    properties: { x: { type: 'integer' }, kind: { type: 'string', enum: ['a', 'b', 'c'] } },
    required: ['x'],
    anyOf: [
      { properties: { kind: { enum: ['a'] }, y: { type: 'string' } }, required: ['y'] },
      { $ref: '#/$defs/b' },
      { type: 'string' }, // cannot be an object: dropped
      true,
    ],
    $defs: { b: { properties: { kind: { const: 'b' } } } },
  };
  const m = mergeBranches(s, s);
  assert.ok(m.ok);
  assert.deepEqual(m.moved, ['type', 'properties', 'required']);
  assert.deepEqual(m.branches, [
    {
      type: 'object',
      properties: { x: { type: 'integer' }, kind: { enum: ['a'], type: 'string' }, y: { type: 'string' } },
      required: ['x', 'y'],
    },
    {
      type: 'object',
      properties: { x: { type: 'integer' }, kind: { const: 'b', type: 'string' } },
      required: ['x'],
    },
    { type: 'object', properties: s.properties, required: ['x'] },
  ]);
  const copy = structuredClone(s);
  assert.equal(distributeSiblings(copy), true);
  assert.deepEqual(Object.keys(copy).sort(), ['$defs', 'anyOf', 'description']);
  // Nothing beside the branches: nothing to do.
  assert.equal(distributeSiblings({ anyOf: [{ type: 'string' }] }), false);
});

test('allOf folds into one schema', () => {
  const s = {
    allOf: [{ $ref: '#/$defs/base' }, { properties: { b: { type: 'integer' } }, required: ['b'] }],
    description: 'kept',
    $defs: { base: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] } },
  };
  const m = mergeAllOf(s, s);
  assert.ok(m.ok);
  assert.deepEqual(m.schema, {
    description: 'kept',
    $defs: s.$defs,
    type: 'object',
    properties: { a: { type: 'string' }, b: { type: 'integer' } },
    required: ['a', 'b'],
  });
  refused({ allOf: [{ type: 'string' }, { type: 'integer' }] }, /^f\.allOf: no document satisfies all/);
});

test('merges that would change the meaning are refused, naming the keyword', () => {
  refused(
    { pattern: '^a', anyOf: [{ type: 'string', pattern: 'b$' }] },
    /^f\.anyOf\[0\]\.pattern: conflicts/,
  );
  // Two bounds of the same kind are one: the tighter.
  const m = mergeBranches({ maxLength: 2, anyOf: [{ type: 'string', maxLength: 3 }] }, {});
  assert.ok(m.ok);
  assert.deepEqual(m.branches, [{ type: 'string', maxLength: 2 }]);
  refused(
    {
      properties: { a: {} },
      additionalProperties: false,
      oneOf: [{ properties: { b: {} }, required: ['b'] }],
    },
    /f\.oneOf\[0\]\.properties: conflicts .*judges only its own properties/,
  );
  refused({ type: 'string', anyOf: [{ type: 'integer' }] }, /f\.anyOf: no branch is compatible/);
  // A branch whose own alternatives all fail is dropped like any branch that matches nothing.
  const nested = { type: 'string', anyOf: [{ type: 'string' }, { anyOf: [{ type: 'integer' }] }] };
  const nm = mergeBranches(nested, nested);
  assert.ok(nm.ok);
  assert.deepEqual(nm.branches, [{ type: 'string' }]);
  refused({ anyOf: [{ type: 'string' }], oneOf: [{ type: 'string' }] }, /f\.oneOf: oneOf beside anyOf/);
});

test('oneOf is accepted when its branches are provably exclusive, refused otherwise', () => {
  const ok = (branches: unknown[]) =>
    assert.equal(branchesDisjoint(branches), true, JSON.stringify(branches));
  const no = (branches: unknown[]) =>
    assert.equal(branchesDisjoint(branches), false, JSON.stringify(branches));
  ok([{ type: 'string' }, { type: 'integer' }, { type: 'null' }]); // types
  ok([{ const: 1 }, { const: 2 }, { enum: [3, 'x'] }]); // values
  ok([
    { type: 'object', properties: { kind: { const: 'a' } }, required: ['kind'] },
    { type: 'object', properties: { kind: { const: 'b' }, extra: {} } },
  ]); // discriminator (required on one side is enough)
  ok([
    { type: 'object', properties: { dog: {} }, required: ['dog'] },
    { type: 'object', properties: { cat: {} }, required: ['cat'] },
  ]); // closed: additionalProperties absent reads as false
  ok([
    { properties: { a: {} }, required: ['a'] },
    { properties: { b: {} }, required: ['b'] },
  ]); // implied object
  no([{ type: 'integer' }, { type: 'number' }]); // 1 is both
  no([{ type: 'string' }, { type: 'string', maxLength: 2 }]);
  no([
    { type: 'object', properties: { a: {}, b: {} }, required: ['a'] },
    { type: 'object', properties: { a: {}, b: {} }, required: ['b'] },
  ]); // {"a":1,"b":2} is both
  no([
    { type: 'object', properties: { a: {} }, required: ['a'], additionalProperties: true },
    { type: 'object', properties: { b: {} }, required: ['b'], additionalProperties: true },
  ]);
  no([{ properties: { a: {} } }, { type: 'string' }, {}]); // {} matches everything
  // Through the checker, with the keywords beside oneOf merged first.
  checkJsonSchema(
    {
      type: 'object',
      properties: { shape: { type: 'string', enum: ['square', 'circle'] } },
      required: ['shape'],
      oneOf: [
        { properties: { shape: { const: 'square' }, side: { type: 'number' } } },
        { properties: { shape: { const: 'circle' }, radius: { type: 'number' } } },
      ],
    },
    'f',
  );
});

test('implied types and required properties are spelled out; what cannot be is refused', () => {
  assert.equal(impliedType({ minLength: 2 }), 'string');
  assert.equal(impliedType({ required: ['a'] }), 'object');
  assert.equal(impliedType({ type: 'array', minLength: 2 }), null);
  assert.equal(impliedType({ minLength: 1, minItems: 1 }), 'mixed');
  const s = {
    properties: {
      a: { items: { maximum: 3 } },
      b: { required: ['z'], additionalProperties: { type: 'integer' } },
    },
    required: ['a', 'c'],
    enum: undefined,
  };
  delete s.enum;
  assert.equal(makeImplicitExplicit(s), true);
  assert.deepEqual(s, {
    type: 'object',
    properties: {
      a: { type: 'array', items: { type: 'number', maximum: 3 } },
      b: {
        type: 'object',
        required: ['z'],
        additionalProperties: { type: 'integer' },
        properties: { z: { type: 'integer' } },
      },
      c: {},
    },
    required: ['a', 'c'],
  });
  // Data is not a schema.
  const data = { const: { minLength: 2 } };
  assert.equal(makeImplicitExplicit(data), false);
  refused({ minLength: 1, minItems: 1 }, /^f: has keywords of several JSON types but no 'type'/);
  refused(
    { type: 'object', properties: { a: {} }, required: ['b'], additionalProperties: false },
    /^f\.required: names "b", which is not in 'properties'/,
  );
});

test('keywords that constrain nothing where they stand are accepted', () => {
  checkJsonSchema({ type: 'array', items: { type: 'string' }, additionalItems: false }, 'f');
  checkJsonSchema({ type: 'object', additionalItems: false, dependencies: {} }, 'f');
  // A tuple `items` (draft-07) fails the 2020-12 meta-schema before additionalItems matters.
  refused(
    { type: 'array', items: [{ type: 'string' }], additionalItems: false },
    /^f\.items: is not valid JSON Schema/,
  );
  refused({ type: 'object', dependencies: { a: ['b'] } }, /f\.dependencies/);
});

const xg = loadGrammarAddon();

test('a merged branch passes the same rules as any schema', () => {
  refused(
    { pattern: 'a+', anyOf: [{ type: 'string', maxLength: 3 }] },
    /^f\.anyOf\[0\]\.maxLength: 'maxLength' cannot be combined with 'pattern'/,
  );
});

test('integer multipleOf is enforced without bounds, refused beside them', () => {
  for (const m of [3, 7, 1024]) {
    const grammar = xg.compileJsonSchema(
      bareCompiler(),
      JSON.stringify({ type: 'integer', multipleOf: m }),
      true,
    );
    try {
      const wrong: number[] = [];
      for (let v = -3000; v <= 3000; v++)
        if (grammarAccepts(grammar, String(v)) !== (v % m === 0)) wrong.push(v);
      assert.deepEqual(wrong, [], `multipleOf ${m}`);
    } finally {
      xg.dispose(grammar);
    }
  }
  checkJsonSchema({ type: 'integer', multipleOf: 3 }, 'f');
  refused(
    { type: 'integer', multipleOf: 3, minimum: 0 },
    /^f\.multipleOf: keyword 'multipleOf' is not supported/,
  );
  refused({ type: 'integer', multipleOf: 2048 }, /^f\.multipleOf/);
  refused({ type: 'number', multipleOf: 0.5 }, /^f\.multipleOf/);
  refused({ type: 'integer', format: 'int32', multipleOf: 3 }, /^f\.multipleOf/);
});

test('pattern and lengths fold where the pattern is one repeated character class', () => {
  assert.deepEqual(foldLengthIntoPattern('^[a-z]+$', undefined, 12), { pattern: '^[a-z]{1,12}$' });
  assert.deepEqual(foldLengthIntoPattern('^[A-Z0-9]{10}$', 10, 10), { pattern: '^[A-Z0-9]{10}$' });
  assert.deepEqual(foldLengthIntoPattern('^\\d*$', 2, undefined), { pattern: '^\\d{2,}$' });
  assert.deepEqual(foldLengthIntoPattern('^[\\]a]{2,5}$', 3, 9), { pattern: '^[\\]a]{3,5}$' });
  assert.deepEqual(foldLengthIntoPattern('^[a]{2}$', 3, undefined), { empty: true });
  assert.equal(foldLengthIntoPattern('^[a-z]+[0-9]$', 1, 3), null);
  assert.equal(foldLengthIntoPattern('[a-z]+', 1, 3), null); // unanchored: a search, not the whole string
  refused(
    { type: 'string', pattern: '^a[0-9]+$', maxLength: 3 },
    /^f\.maxLength: 'maxLength' cannot be combined with 'pattern'/,
  );
  refused({ type: 'string', pattern: '^[0-9]{2}$', maxLength: 1 }, /^f\.pattern: no string matches/);
});

test('not with only a type is the types it leaves; other forms are refused', () => {
  assert.deepEqual(typesLeftByNot({ not: { type: 'object' } }), [
    'string',
    'number',
    'boolean',
    'null',
    'array',
  ]);
  assert.deepEqual(typesLeftByNot({ type: ['integer', 'null'], not: { type: 'null' } }), ['integer']);
  assert.deepEqual(typesLeftByNot({ type: 'integer', not: { type: 'number' } }), 'empty');
  assert.equal(typesLeftByNot({ not: { type: 'integer' } }), 'fractions');
  assert.equal(typesLeftByNot({ not: { enum: [1] } }), null);
  refused({ type: 'string', not: { type: 'string' } }, /^f\.not: excludes every type/);
  refused({ not: { type: 'integer' } }, /^f\.not: excluding integers/);
  refused({ not: { type: 'string', minLength: 2 } }, /^f\.not: keyword 'not' is not supported/);
});

test('oneOf branches that are references are compared by their targets', () => {
  checkJsonSchema(
    { oneOf: [{ $ref: '#/$defs/e' }, { enum: ['d', 'e'] }], $defs: { e: { enum: ['a', 'b'] } } },
    'f',
  );
  refused(
    { oneOf: [{ $ref: '#/$defs/e' }, { enum: ['b', 'c'] }], $defs: { e: { enum: ['a', 'b'] } } },
    /^f\.oneOf/,
  );
});
