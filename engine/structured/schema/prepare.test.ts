/**
 * prepareSchema, the one entry point: exact schemas compile as they are; what the grammar
 * cannot enforce is refused under `grammarOnly` (OpenAI strict) and otherwise relaxed, with the
 * finished document checked (post-check.ts); older drafts are read in 2020-12.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadGrammarAddon } from '../../../native/native.js';
import { bareCompiler, grammarAccepts } from '../bare-grammar.js';
import { normalizeDraft } from './drafts.js';
import { compileDocumentCheck } from './post-check.js';
import { prepareSchema, type PreparedSchema } from './prepare.js';

const xg = loadGrammarAddon();

function accepted(p: PreparedSchema): Extract<PreparedSchema, { schema: string }> {
  assert.ok(!('refused' in p), JSON.stringify(p));
  return p as Extract<PreparedSchema, { schema: string }>;
}

test('an exact schema has no check; grammarOnly takes it too', () => {
  const s = { type: 'object', properties: { a: { type: 'integer', minimum: 1 } }, required: ['a'] };
  assert.equal(accepted(prepareSchema(s, 'f')).check, null);
  assert.equal(accepted(prepareSchema(s, { field: 'f', grammarOnly: true })).check, null);
});

test('keywords no grammar enforces: refused under grammarOnly, checked on the document otherwise', () => {
  const s = {
    type: 'object',
    properties: {
      tags: { type: 'array', items: { type: 'string' }, uniqueItems: true },
      price: { type: 'number', multipleOf: 0.01 },
      kind: { type: 'string' },
    },
    required: ['tags', 'price', 'kind'],
    if: { properties: { kind: { const: 'a' } } },
    then: { properties: { price: { maximum: 10 } } },
  };
  const strict = prepareSchema(s, { field: 'f', grammarOnly: true });
  assert.ok('refused' in strict);
  assert.match(
    `${strict.field}: ${strict.refused}`,
    /^f\.properties\.tags\.uniqueItems: keyword 'uniqueItems'|^f\.if/,
  );
  const p = accepted(prepareSchema(s, 'f'));
  assert.ok(p.check);
  const paths = p.check.loosened.map((l) => l.path);
  for (const want of ['.properties.tags.uniqueItems', '.properties.price.multipleOf', '.if', '.then'])
    assert.ok(paths.includes(want), `${want} in ${paths.join(' ')}`);
  const g = xg.compileJsonSchema(bareCompiler(), p.schema, true);
  const check = compileDocumentCheck(p.check.schema);
  const doc = '{"tags": ["x", "x"], "price": 1.5, "kind": "b"}';
  assert.equal(grammarAccepts(g, doc), true); // the grammar lets it through ...
  assert.match(check(doc) ?? '', /duplicate items|must NOT have duplicate/); // ... the check does not
  assert.equal(check('{"tags": ["x", "y"], "price": 1.5, "kind": "b"}'), null);
  assert.match(check('{"tags": [], "price": 11, "kind": "a"}') ?? '', /must be <= 10/);
  assert.match(check('{"tags": [], "price": 1.005, "kind": "b"}') ?? '', /multiple of/);
  assert.match(check('not json') ?? '', /^not JSON/);
  xg.dispose(g);
});

test('a merge that would expand a recursion keeps the reference under the default, checked after', () => {
  const node = {
    definitions: {
      node: {
        type: 'object',
        additionalProperties: {
          minProperties: 1,
          anyOf: [{ type: 'string' }, { $ref: '#/definitions/node' }],
        },
      },
    },
    $ref: '#/definitions/node',
  };
  const strict = prepareSchema(node, { field: 'f', grammarOnly: true });
  assert.ok('refused' in strict && /refers back/.test(strict.refused));
  const p = accepted(prepareSchema(node, 'f'));
  assert.ok(p.check);
  const g = xg.compileJsonSchema(bareCompiler(), p.schema, true);
  assert.equal(grammarAccepts(g, '{"a": {"b": "x"}}'), true);
  const check = compileDocumentCheck(p.check.schema);
  assert.equal(check('{"a": {"b": "x"}}'), null);
  assert.match(check('{"a": {}}') ?? '', /fewer than 1|minProperties|must NOT have fewer/);
  xg.dispose(g);
});

test('older drafts are read in 2020-12 with the same meaning', () => {
  assert.deepEqual(normalizeDraft({ type: 'integer', maximum: 5, exclusiveMaximum: true }), {
    type: 'integer',
    exclusiveMaximum: 5,
  });
  assert.deepEqual(normalizeDraft({ type: 'integer', minimum: 5, exclusiveMinimum: false }), {
    type: 'integer',
    minimum: 5,
  });
  assert.deepEqual(
    normalizeDraft({
      type: 'array',
      items: [{ type: 'string' }, { type: 'integer' }],
      additionalItems: false,
    }),
    { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false },
  );
  assert.deepEqual(normalizeDraft({ dependencies: { a: ['b'], c: { required: ['d'] } } }), {
    dependentRequired: { a: ['b'] },
    dependentSchemas: { c: { required: ['d'] } },
  });
  const d7 = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    definitions: { x: { type: 'string' } },
    properties: { a: { $ref: '#/definitions/x', maxLength: 1 } },
  };
  assert.deepEqual((normalizeDraft(d7) as { properties: unknown }).properties, {
    a: { $ref: '#/definitions/x' },
  });
  assert.deepEqual(normalizeDraft(true), {});
  // A tuple schema of draft 7 is now accepted, exactly.
  const p = accepted(
    prepareSchema({ type: 'array', items: [{ type: 'string' }], additionalItems: false }, 'f'),
  );
  assert.equal(p.check, null);
  const g = xg.compileJsonSchema(bareCompiler(), p.schema, true);
  assert.equal(grammarAccepts(g, '["a"]'), true);
  assert.equal(grammarAccepts(g, '["a", "b"]'), false);
  xg.dispose(g);
});

test('enum and const are filtered by the keywords beside them', () => {
  const p = accepted(prepareSchema({ type: 'string', enum: ['a', 'bb', 3], minLength: 2 }, 'f'));
  assert.equal(p.check, null);
  assert.deepEqual(JSON.parse(p.schema), { enum: ['bb'] });
  const none = prepareSchema({ type: 'integer', const: 5, minimum: 10 }, { field: 'f', grammarOnly: true });
  assert.ok('refused' in none && /no value of enum\/const/.test(none.refused));
});

test('what relaxing cannot help is refused in both modes', () => {
  for (const grammarOnly of [false, true]) {
    const bad = prepareSchema({ type: 'objekt' }, { field: 'f', grammarOnly });
    assert.ok('refused' in bad && /not valid JSON Schema/.test(bad.refused));
    const loop = prepareSchema({ $ref: '#' }, { field: 'f', grammarOnly });
    assert.ok('refused' in loop && /cycle of references/.test(loop.refused));
    const closed = prepareSchema(
      { type: 'object', properties: { a: {} }, required: ['b'], additionalProperties: false },
      { field: 'f', grammarOnly },
    );
    assert.ok('refused' in closed && closed.field === 'f.required');
  }
});

test('draft 4: a $ref target outside the keywords (`#/sentences`) is read in 2020-12 too, so its `id` does not stop the document check', () => {
  const schema = {
    $schema: 'http://json-schema.org/draft-04/schema#',
    type: 'object',
    id: 'https://example.com/message.json',
    sentences: { type: 'array', items: { type: 'string' }, id: 'segments' },
    required: ['sentences'],
    properties: { sentences: { $ref: '#/sentences' } },
  };
  const read = normalizeDraft(schema) as { sentences: Record<string, unknown> };
  assert.equal(read.sentences.id, undefined);
  const check = compileDocumentCheck(JSON.stringify(read));
  assert.equal(check('{"sentences": ["a", "b"]}'), null);
  assert.notEqual(check('{"sentences": [1]}'), null);
});
