/**
 * The grammar addon's failure paths: whatever xgrammar rejects (or fails a check on) comes back
 * as a JS error with its reason, and a bad call is a TypeError/RangeError — nothing ends the
 * process. The grammar's behaviour itself is tested in engine/structured/.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadGrammarAddon } from './native.js';

const xg = loadGrammarAddon();
const vocab = ['a', 'b', '{', '}', '"', '</s>'];
const info = xg.createTokenizerInfo(vocab, 'raw', false, vocab.length, [5]);
const compiler = xg.createCompiler(info, 2);

test('bad grammars, schemas and tags are JS errors carrying the reason', () => {
  assert.throws(() => xg.compileEbnf(compiler, 'root ::= ('), /EBNF|parse|expect/i);
  assert.throws(() => xg.compileEbnf(compiler, 'other ::= "a"'), /root/);
  assert.throws(() => xg.compileJsonSchema(compiler, '{"type":', true), /JSON|parse/i);
  assert.throws(() => xg.compileJsonSchema(compiler, '{"type":"integer","minimum":1e300}', true), /Integer/);
  assert.throws(
    () => xg.compileStructuralTag(compiler, '{"type":"structural_tag"}'),
    /structural tag|format/i,
  );
  assert.throws(() => xg.compileStructuralTag(compiler, 'nope'), /JSON/i);
  const regex = JSON.stringify({ type: 'structural_tag', format: { type: 'regex', pattern: '(a)\\1' } });
  assert.throws(() => xg.compileStructuralTag(compiler, regex), /Backreference/);
});

test('a matcher: masks, tokens, the end; misuse is an error, not a crash', () => {
  const g = xg.compileEbnf(compiler, 'root ::= "ab"');
  const m = xg.createMatcher(g, false);
  const mask = new Int32Array(xg.bitmaskSize(vocab.length));
  assert.equal(mask.length, 1);
  xg.fillNextTokenBitmask(m, mask);
  assert.equal(mask[0], 1 << 0); // only 'a'
  assert.equal(xg.findJumpForwardString(m), 'ab');
  assert.throws(() => xg.fillNextTokenBitmask(m, new Int32Array(3)), /shape/);
  assert.equal(xg.acceptToken(m, 1), false); // 'b' not allowed yet: refused, state kept
  assert.equal(xg.acceptToken(m, 0), true);
  assert.equal(xg.acceptToken(m, 1), true);
  xg.fillNextTokenBitmask(m, mask);
  assert.equal(mask[0], 1 << 5); // only the stop token
  assert.equal(xg.isTerminated(m), false);
  assert.equal(xg.acceptToken(m, 5), true);
  assert.equal(xg.isTerminated(m), true);
  assert.equal(xg.acceptToken(m, 99), false); // out of range: refused
  // A failed check inside xgrammar (which would abort a build without exceptions).
  assert.throws(() => xg.fillNextTokenBitmask(m, mask), /terminated/);
  assert.throws(() => xg.fillNextTokenBitmask(m, new Float32Array(1) as unknown as Int32Array), TypeError);
  assert.throws(() => xg.acceptToken(m, 1.5), RangeError);
  xg.dispose(m);
  assert.throws(() => xg.acceptToken(m, 0), /disposed/);
  xg.dispose(g);
  assert.throws(() => xg.createMatcher(g, false), /disposed/);
});

test('wrong handles and arguments are TypeErrors/RangeErrors', () => {
  assert.throws(() => xg.createMatcher(compiler as never, false), TypeError);
  assert.throws(() => xg.compileEbnf({} as never, 'root ::= "a"'), TypeError);
  assert.throws(() => xg.dispose({} as never), TypeError);
  assert.throws(() => xg.createTokenizerInfo(['a', 1 as never], 'raw', false, 2, []), TypeError);
  assert.throws(() => xg.createTokenizerInfo(['a'], 'bpe' as never, false, 1, []), TypeError);
  assert.throws(() => xg.createTokenizerInfo(['a'], 'raw', false, 1, [1]), RangeError);
  assert.throws(() => xg.createCompiler(info, 0), RangeError);
});
