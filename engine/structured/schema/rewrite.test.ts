/**
 * The int32/int64 rewrite, and the claim it rests on: xgrammar's integer range for exactly
 * these bounds is exact. Checked digit by digit at each bound (every digit position set to
 * 0-9 under the bound's prefix, with 0s, 9s or the bound's own digits after it, plus the
 * neighbours), on the bare grammar (a one-symbol vocabulary, text accepted character-wise).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadGrammarAddon } from '../../../native/native.js';
import { around, bareCompiler, grammarAccepts } from '../bare-grammar.js';
import { BASE64_PATTERN, INTEGER_FORMAT_RANGES, rewriteForGrammar } from './rewrite.js';

const xg = loadGrammarAddon();

test('int32/int64 on integer types become ranges; everything else is left alone', () => {
  const schema = {
    type: 'object',
    properties: {
      a: { type: ['integer', 'null'], format: 'int32', description: 'x' },
      b: { type: 'array', items: { type: 'integer', format: 'int64' } },
      c: { type: 'string', format: 'date' },
      // Data that looks like a schema is not a schema.
      d: { const: { type: 'integer', format: 'int32' } },
    },
    $defs: { e: { anyOf: [{ type: 'integer', format: 'int32' }, { type: 'null' }] } },
  };
  const out = JSON.parse(rewriteForGrammar(JSON.stringify(schema))) as typeof schema & {
    properties: Record<string, Record<string, unknown>>;
  };
  assert.deepEqual(out.properties.a, {
    type: ['integer', 'null'],
    minimum: -2147483648,
    maximum: 2147483647,
    description: 'x',
  });
  assert.deepEqual(out.properties.b!.items, {
    type: 'integer',
    minimum: -Number.MAX_SAFE_INTEGER,
    maximum: Number.MAX_SAFE_INTEGER,
  });
  assert.deepEqual(out.properties.c, { type: 'string', format: 'date' });
  assert.deepEqual(out.properties.d, { const: { type: 'integer', format: 'int32' } });
  assert.deepEqual(out.$defs.e.anyOf[0], { type: 'integer', minimum: -2147483648, maximum: 2147483647 });
  assert.deepEqual(JSON.parse(rewriteForGrammar('{"type":["string","null"],"format":"byte"}')), {
    type: ['string', 'null'],
    pattern: BASE64_PATTERN,
  });
  const plain = '{"type":"string"}';
  assert.equal(rewriteForGrammar(plain), plain);
});

test('int32/float/double ranges meet the schema own bounds; fractional integer bounds become whole', () => {
  const out = (schema: object) =>
    JSON.parse(rewriteForGrammar(JSON.stringify(schema))) as Record<string, unknown>;
  assert.deepEqual(out({ type: 'integer', format: 'int32', minimum: 0 }), {
    type: 'integer',
    minimum: 0,
    maximum: 2147483647,
  });
  assert.deepEqual(out({ type: 'number', format: 'double', maximum: 5 }), {
    type: 'number',
    maximum: 5,
    minimum: -Number.MAX_VALUE,
  });
  assert.deepEqual(out({ type: ['number', 'null'], format: 'float' }), {
    type: ['number', 'null'],
    minimum: -3.4028234663852886e38,
    maximum: 3.4028234663852886e38,
  });
  assert.deepEqual(out({ type: 'integer', minimum: 0.5, exclusiveMaximum: 9.5 }), {
    type: 'integer',
    minimum: 1,
    maximum: 9,
  });
  assert.deepEqual(out({ type: ['integer', 'null'], exclusiveMinimum: -2.5, maximum: -0.5, minimum: -2 }), {
    type: ['integer', 'null'],
    minimum: -2,
    maximum: -1,
  });
  // Whole bounds and number types are left as they are.
  const kept = '{"type":"integer","exclusiveMinimum":3,"maximum":7}';
  assert.equal(rewriteForGrammar(kept), kept);
  const num = '{"type":"number","exclusiveMaximum":0.5}';
  assert.equal(rewriteForGrammar(num), num);
});

for (const [format, [lo, hi]] of Object.entries(INTEGER_FORMAT_RANGES)) {
  test(`the grammar enforces the ${format} range exactly, null included`, () => {
    const schema = rewriteForGrammar(JSON.stringify({ type: ['integer', 'null'], format }));
    const grammar = xg.compileJsonSchema(bareCompiler(), schema, true);
    const accepts = (text: string) => grammarAccepts(grammar, text);
    const wrong: string[] = [];
    for (const v of [...around(BigInt(lo)), ...around(BigInt(hi))]) {
      const want = v >= BigInt(lo) && v <= BigInt(hi);
      if (accepts(v.toString()) !== want) wrong.push(v.toString());
    }
    assert.deepEqual(wrong, []);
    assert.equal(accepts('null'), true);
    assert.equal(accepts('1.5'), false);
    xg.dispose(grammar);
  });
}

test('the grammar enforces byte (base64) as its pattern, null included', () => {
  const schema = rewriteForGrammar(JSON.stringify({ type: ['string', 'null'], format: 'byte' }));
  const grammar = xg.compileJsonSchema(bareCompiler(), schema, true);
  const base64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
  for (const text of [
    '',
    'QQ==',
    'QUI=',
    'QUJD',
    'QUJDRA==',
    'QUJ',
    'Q===',
    'QU=D',
    'ab!c',
    'QUJD\nRA==',
    'QQ',
  ]) {
    assert.equal(grammarAccepts(grammar, JSON.stringify(text)), base64.test(text), JSON.stringify(text));
  }
  assert.equal(grammarAccepts(grammar, 'null'), true);
  xg.dispose(grammar);
});
