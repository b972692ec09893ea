/**
 * The document check compiles for the schemas found in the wild that ajv refuses as written
 * (post-check.ts, drafts.ts): a draft-4 `id`, a pattern only the non-Unicode syntax reads, a
 * `$id` below the root that moves the base of `#/...` references. Before, each made the
 * request a 400 ("does not compile") although the grammar compiled.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileDocumentCheck } from './post-check.js';
import { prepareSchema } from './prepare.js';

/** The check prepareSchema asks for, compiled. */
function checkOf(schema: object) {
  const p = prepareSchema(schema, 'f');
  assert.ok(!('refused' in p) && p.check !== null, JSON.stringify(p));
  return compileDocumentCheck((p as { check: { schema: string } }).check.schema);
}

const tags = { type: 'array', items: { type: 'string' }, uniqueItems: true };

test("a draft-4 schema's id does not keep its check from compiling", () => {
  const check = checkOf({
    $schema: 'http://json-schema.org/draft-04/schema#',
    id: 'http://example.com/thing#',
    type: 'object',
    properties: { tags, size: { type: 'integer', minimum: 1, exclusiveMinimum: true } },
    required: ['tags'],
  });
  assert.equal(check('{"tags": ["a", "b"], "size": 2}'), null);
  assert.match(check('{"tags": ["a", "a"]}') ?? '', /duplicate/);
  assert.notEqual(check('{"tags": [], "size": 1}'), null);
});

test('a pattern only the non-Unicode syntax reads is checked as that syntax reads it', () => {
  const check = checkOf({
    type: 'object',
    properties: { name: { type: 'string', pattern: '^[a-z\\_]{2,}$' }, tags },
    required: ['name', 'tags'],
  });
  assert.equal(check('{"name": "a_b", "tags": []}'), null);
  assert.notEqual(check('{"name": "A", "tags": []}'), null);
});

test('a $id below the root: #/... references are read against the root, as the grammar reads them', () => {
  const check = checkOf({
    type: 'object',
    definitions: { cvar: { type: 'string', minLength: 2 } },
    properties: {
      vars: {
        $id: '/properties/vars',
        type: 'array',
        items: { $ref: '#/definitions/cvar' },
        uniqueItems: true,
      },
    },
    required: ['vars'],
  });
  assert.equal(check('{"vars": ["ab", "cd"]}'), null);
  assert.notEqual(check('{"vars": ["a"]}'), null);
  assert.notEqual(check('{"vars": ["ab", "ab"]}'), null);
});
