/**
 * Where a pattern's anchors stand (pattern-anchors.ts), decided against ECMAScript's own
 * reading: an `exact` pattern's anchors only ever hold at the ends, so every whole-string
 * match the grammar writes is a match of the pattern; `nothing` patterns match no string.
 * And what preparation does with each: exact compiles as written; inexact is refused under
 * grammarOnly and checked on the document otherwise.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { anchorPlacement } from './pattern-anchors.js';
import { compileDocumentCheck } from './post-check.js';
import { prepareSchema } from './prepare.js';

const CASES: [string, ReturnType<typeof anchorPlacement>][] = [
  ['abc', 'exact'],
  ['^[a-z]+$', 'exact'],
  ['^a$|^b$', 'exact'],
  ['^$|(^[a-z]+$)', 'exact'],
  ['(^|,)[a-z]+$', 'exact'],
  ['^(?:a|b)+$', 'exact'],
  ['^[^$]+\\$$', 'exact'],
  ['^\\p{L}{2}$', 'exact'],
  ['(?<y>^\\d{4})-\\d{2}$', 'exact'],
  ['[$^]', 'exact'],
  ['x^a|b', 'inexact'],
  ['a?^b', 'inexact'],
  ['(^a)+', 'inexact'],
  ['^(a|b$)c', 'inexact'],
  ['^([^,]+(,|$)){3,}$', 'inexact'],
  ['/^[0-9]{4}$/', 'nothing'],
  ['/^abc$/i', 'nothing'],
  ['a$b', 'nothing'],
  ['a^', 'nothing'],
];

test('placement of anchors, checked against the pattern as ECMAScript reads it', () => {
  for (const [pattern, want] of CASES) {
    assert.equal(anchorPlacement(pattern), want, pattern);
    const re = new RegExp(pattern, 'u');
    if (want === 'nothing')
      for (const s of ['', 'a', 'ab', '/1234/', 'abc', '/abc/i'])
        assert.ok(!re.test(s), `${pattern} matches ${s}`);
  }
  // the comma-separated case: the grammar (anchors ignored) writes "abc" in three
  // repetitions; the pattern needs a comma or the end after each
  assert.ok(new RegExp('^(?:[^,]+(?:,|)){3,}$', 'u').test('abc'));
  assert.ok(!/^([^,]+(,|$)){3,}$/u.test('abc'));
});

test('an inexact pattern: refused under grammarOnly, left to the document check otherwise', () => {
  const s = {
    type: 'object',
    properties: { tags: { type: 'string', pattern: '^([^,]+(,|$)){3,}$' } },
    required: ['tags'],
  };
  const strict = prepareSchema(s, { field: 'f', grammarOnly: true });
  assert.ok('refused' in strict);
  if ('refused' in strict) {
    assert.equal(strict.field, 'f.properties.tags.pattern');
    assert.match(strict.refused, /'\^' or '\$' where it can match other than at the start or end/);
  }
  const relaxed = prepareSchema(s, 'f');
  assert.ok(!('refused' in relaxed) && relaxed.check !== null, JSON.stringify(relaxed));
  if ('refused' in relaxed || relaxed.check === null) return;
  assert.ok(!relaxed.schema.includes('(,|$)'), 'the pattern is not compiled');
  const check = compileDocumentCheck(relaxed.check.schema);
  assert.notEqual(check('{"tags": "abc"}'), null);
  assert.equal(check('{"tags": "a,b,c"}'), null);
  // the same in patternProperties keys
  const keyed = { type: 'object', patternProperties: { 'x^a': { type: 'integer' } } };
  assert.ok('refused' in prepareSchema(keyed, { field: 'f', grammarOnly: true }));
  assert.ok(!('refused' in prepareSchema(keyed, 'f')));
});

test('exact anchors compile as written in both modes', () => {
  const s = { type: 'string', pattern: '^a$|^b$' };
  for (const grammarOnly of [false, true]) {
    const p = prepareSchema(s, { field: 'f', grammarOnly });
    assert.ok(!('refused' in p) && p.check === null, JSON.stringify(p));
  }
});
