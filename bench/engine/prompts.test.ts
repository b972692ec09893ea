import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PASSAGE, tokenWindow } from './prompts.js';

// A stand-in tokenizer (one id per word) is enough to check the windowing arithmetic.
const words = (text: string) =>
  text
    .split(/\s+/)
    .filter(Boolean)
    .map((w) => w.length);

test('tokenWindow cuts exactly count ids at offset', () => {
  const all = words(PASSAGE);
  assert.deepEqual(tokenWindow(words, PASSAGE, 0, 32), all.slice(0, 32));
  assert.deepEqual(tokenWindow(words, PASSAGE, 10, 5), all.slice(10, 15));
});

test('tokenWindow repeats the text when more ids are needed than it holds', () => {
  const all = words(PASSAGE);
  const long = tokenWindow(words, PASSAGE, 0, all.length * 2 + 3);
  assert.equal(long.length, all.length * 2 + 3);
  assert.deepEqual(long.slice(all.length, all.length * 2), all);
});

test('tokenWindow rejects bad counts and empty text', () => {
  assert.throws(() => tokenWindow(words, PASSAGE, 0, 0), /count must be a positive integer/);
  assert.throws(() => tokenWindow(words, PASSAGE, -1, 4), /offset must be a non-negative integer/);
  assert.throws(() => tokenWindow(words, '   ', 0, 4), /tokenizes to nothing/);
});
