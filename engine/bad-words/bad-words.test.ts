import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CharTokenizer } from '../testing/char-tokenizer.js';
import type { EngineTokenizer } from '../prompt.js';
import { badWordTokens, bannedTokens, hasMultiTokenWord } from './bad-words.js';

test("bad words are tokenized alone and with a leading space when that is another word of the same length (vLLM's rule)", async () => {
  // One token per character: " ab" is longer than "ab", so only the bare form is kept.
  const chars = new CharTokenizer();
  assert.deepEqual(await badWordTokens(chars, ['ab', '  c']), [[65, 66], [67]]);
  // A word-level vocabulary where a leading space makes another token of the same length.
  const words: Pick<EngineTokenizer, 'encodeAsync'> = {
    encodeAsync: (text: string) =>
      Promise.resolve(
        text.split(/(?= )/).map((w) => ({ hello: 1, ' hello': 2, world: 3, ' world': 4 })[w] ?? 0),
      ),
  };
  assert.deepEqual(await badWordTokens(words as EngineTokenizer, ['hello', 'hello world']), [
    [1],
    [2],
    [1, 4],
    [2, 4],
  ]);
});

test('a one-token word is always banned; a longer one bans its last token after the rest of it', () => {
  const words = [[5], [1, 2, 3]];
  const prompt = [1, 2]; // the prompt does not count: vLLM matches the output only
  assert.deepEqual(bannedTokens(words, [...prompt], prompt.length), [5]);
  assert.deepEqual(bannedTokens(words, [...prompt, 9, 1, 2], prompt.length), [5, 3]);
  assert.deepEqual(bannedTokens(words, [...prompt, 1, 2, 4], prompt.length), [5]);
  assert.deepEqual(bannedTokens(words, [...prompt, 1], prompt.length), [5]);
  assert.equal(hasMultiTokenWord(words), true);
  assert.equal(hasMultiTokenWord([[5]]), false);
  assert.equal(hasMultiTokenWord(undefined), false);
});
