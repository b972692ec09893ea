/**
 * Recursive schemas and oversized ones (issue 21): a client's schema never overflows the stack
 * nor makes the checks and rewrites run without bound. A recursive definition reached through
 * a plain `$ref` (or an `allOf` of one reference) stays a reference, which the grammar compiles
 * as a recursive rule; a merge that would copy a definition into itself is refused with a 4xx
 * naming the path; nesting and size have limits with a 4xx naming where they were crossed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadGrammarAddon } from '../../../native/native.js';
import { bareCompiler, grammarAccepts } from '../bare-grammar.js';
import { checkJsonSchema } from './check.js';
import { MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES } from './limits.js';
import { rewriteForGrammar } from './rewrite.js';

const xg = loadGrammarAddon();

const refused = (schema: unknown, re: RegExp) =>
  assert.throws(
    () => checkJsonSchema(schema, 'f'),
    (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT' && re.test(e.message),
  );

/** Checked, rewritten and compiled as the grammar thread would. */
function compiled(schema: object) {
  checkJsonSchema(schema, 'f');
  return xg.compileJsonSchema(bareCompiler(), rewriteForGrammar(JSON.stringify(schema)), true);
}

/** Issue 21's first pattern: a keyword beside anyOf whose branch refers back to the definition. */
const NODE_THROUGH_ANYOF = {
  definitions: {
    node: {
      type: 'object',
      additionalProperties: { minProperties: 1, anyOf: [{ type: 'string' }, { $ref: '#/definitions/node' }] },
    },
  },
  $ref: '#/definitions/node',
};

/** Issue 21's second pattern: `items: {allOf: [{$ref: menuItem}]}` inside menuItem. */
const MENU = {
  type: 'object',
  properties: { menu: { type: 'array', items: { $ref: '#/definitions/menuItem' } } },
  required: ['menu'],
  definitions: {
    menuItem: {
      type: 'object',
      properties: {
        label: { type: 'string' },
        items: { type: 'array', items: { allOf: [{ $ref: '#/definitions/menuItem' }] } },
      },
      required: ['label'],
    },
  },
};

test('a keyword beside anyOf whose branch refers back to its definition is refused with the path', () => {
  refused(
    NODE_THROUGH_ANYOF,
    /^f\.definitions\.node\.additionalProperties\.anyOf\[1\]\.additionalProperties\.anyOf\[1\]: refers back to "#\/definitions\/node" through a merge/,
  );
  // The rewrite alone (what the grammar thread runs) ends too, with the same refusal.
  assert.throws(
    () => rewriteForGrammar(JSON.stringify(NODE_THROUGH_ANYOF)),
    (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT' && /refers back/.test(e.message),
  );
});

test('allOf of one reference inside its own definition stays a recursive reference', () => {
  const g = compiled(MENU);
  assert.equal(grammarAccepts(g, '{"menu": []}'), true);
  assert.equal(
    grammarAccepts(g, '{"menu": [{"label": "a", "items": [{"label": "b", "items": [{"label": "c"}]}]}]}'),
    true,
  );
  assert.equal(grammarAccepts(g, '{"menu": [{"label": "a", "items": [{"items": []}]}]}'), false);
  assert.equal(grammarAccepts(g, '{"menu": [{"label": "a", "items": [{"label": 1}]}]}'), false);
  xg.dispose(g);
});

test('allOf merging a reference into its own definition is refused with the path', () => {
  // Here the allOf has a keyword beside it, so it must be merged: the copy would contain itself.
  refused(
    {
      definitions: {
        item: {
          type: 'object',
          properties: {
            children: { type: 'array', items: { allOf: [{ $ref: '#/definitions/item' }], minProperties: 1 } },
          },
        },
      },
      $ref: '#/definitions/item',
    },
    /^f\.definitions\.item\.properties\.children\.items\.properties\.children\.items\.allOf: refers back to "#\/definitions\/item"/,
  );
  // The same through a second definition, and through a reference spelled another way
  // (definitions are compared as the objects they are, not by the reference's text).
  refused(
    {
      $defs: {
        a: { type: 'object', properties: { b: { allOf: [{ $ref: '#/$defs/b' }], required: ['x'] } } },
        b: {
          type: 'object',
          properties: { x: { type: 'string' }, a: { allOf: [{ $ref: '#/$defs/%61' }], minProperties: 0 } },
        },
      },
      allOf: [{ $ref: '#/$defs/a' }, { type: 'object' }],
    },
    /refers back to/,
  );
  // A nested alternative whose branch comes back (the inner emptiness check is bounded too).
  refused(
    {
      definitions: {
        n: { type: 'object', anyOf: [{ required: ['a'] }, { $ref: '#/definitions/n' }] },
      },
      minProperties: 1,
      anyOf: [{ $ref: '#/definitions/n' }],
    },
    /refers back to "#\/definitions\/n"/,
  );
});

test('plain recursive references compile as recursive rules', () => {
  const tree = {
    $defs: {
      node: {
        type: 'object',
        properties: {
          value: { type: 'integer' },
          children: { type: 'array', items: { $ref: '#/$defs/node' } },
        },
        required: ['value'],
      },
    },
    $ref: '#/$defs/node',
  };
  const g = compiled(tree);
  assert.equal(
    grammarAccepts(g, '{"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}'),
    true,
  );
  assert.equal(grammarAccepts(g, '{"value": 1, "children": [{"children": []}]}'), false);
  xg.dispose(g);
  // The root referring to itself.
  const list = {
    type: 'object',
    properties: { head: { type: 'string' }, tail: { $ref: '#' } },
    required: ['head'],
  };
  const h = compiled(list);
  assert.equal(grammarAccepts(h, '{"head": "a", "tail": {"head": "b"}}'), true);
  assert.equal(grammarAccepts(h, '{"head": "a", "tail": {}}'), false);
  xg.dispose(h);
});

test('nesting beyond the limit is refused with the path, iteratively (no stack overflow)', () => {
  let deep: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < 100_000; i++) deep = { type: 'array', items: deep };
  refused(deep, new RegExp(`^f(\\.items){${MAX_SCHEMA_DEPTH}}: is nested too deeply`));
  let arrays: unknown = [];
  for (let i = 0; i < 100_000; i++) arrays = [arrays];
  refused({ enum: arrays }, /^f\.enum(\[0\])+: is nested too deeply/);
  // At the limit: accepted.
  let ok: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < MAX_SCHEMA_DEPTH - 1; i++) ok = { type: 'array', items: ok };
  checkJsonSchema(ok, 'f');
});

test('a schema larger than the limit is refused', () => {
  const properties = Object.fromEntries(
    Array.from({ length: MAX_SCHEMA_NODES }, (_, i) => [`p${i}`, { type: 'string' }]),
  );
  refused({ type: 'object', properties }, /^f: is too large/);
});

test('merges that copy definitions without a cycle are bounded by the visit budget', () => {
  // Each level's allOf inlines the next level twice: 2^40 copies if nothing stopped it.
  const defs: Record<string, unknown> = { d40: { type: 'object', properties: { x: { type: 'string' } } } };
  for (let i = 39; i >= 0; i--)
    defs[`d${i}`] = {
      type: 'object',
      properties: {
        l: { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { minProperties: 0 }] },
        r: { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { minProperties: 0 }] },
      },
    };
  refused({ $defs: defs, $ref: '#/$defs/d0' }, /^f: is too complex: checking it visits more than/);
});
