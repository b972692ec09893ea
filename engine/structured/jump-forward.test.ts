import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureDefaultModel } from '../default-model.js';
import { loadTokenizer } from '../tokenizer/index.js';
import type { Tokenizer } from '../tokenizer/hf-tokenizer.js';
import { forcedTokens } from './jump-forward.js';

let tok: Tokenizer;
const ids = (text: string) => tok.encode(text, { addSpecialTokens: false });
const one = (text: string) => {
  const t = ids(text);
  assert.equal(t.length, 1, `${JSON.stringify(text)} is one token`);
  return t[0]!;
};

before(async () => {
  tok = await loadTokenizer(ensureDefaultModel());
});

test('appends the forced text after the sampled token, leaving the last token to the model', () => {
  const forced = '{"name": "';
  const all = ids(forced);
  const got = forcedTokens(tok, all[0]!, forced);
  assert.deepEqual(got, all.slice(1, -1));
  assert.ok(got.length >= 1);
  // The appended tokens tokenize the way the whole text does: the canonical split.
  assert.equal(tok.decode([all[0]!, ...got, all.at(-1)!]), forced);
});

test('no jump where the boundary would split differently, or nothing is forced', () => {
  // The model sampled "{" where the canonical split starts with '{"': no jump.
  assert.deepEqual(forcedTokens(tok, one('{'), '{"name": "'), []);
  // A token that is not a prefix of the forced text, or covers all of it.
  assert.deepEqual(forcedTokens(tok, one('abc'), '{"name": "'), []);
  assert.deepEqual(forcedTokens(tok, one('":'), '":'), []);
  assert.deepEqual(forcedTokens(tok, one('":'), ''), []);
  // Two tokens: the last is left to the model, nothing to append.
  const two = '": "';
  if (ids(two).length === 2) assert.deepEqual(forcedTokens(tok, ids(two)[0]!, two), []);
});

test('special tokens written in the forced text never come out of a jump', () => {
  const forced = '{"a<|im_end|>b": "x';
  const all = ids(forced);
  assert.ok(all.some((id) => tok.isSpecial(id)));
  assert.deepEqual(forcedTokens(tok, all[0]!, forced), []);
});
