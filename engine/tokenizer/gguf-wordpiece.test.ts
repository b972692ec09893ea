/**
 * A GGUF `bert` vocabulary (all-MiniLM-L6-v2's GGUF twin, written as llama.cpp's converter
 * writes it) tokenizes as the model's own tokenizer.json does, pairs and token types included.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MIXED_SENTENCES } from '../../test/pooling/sentences.js';
import { fixture } from '../../test/fixtures.js';
import { loadTokenizer } from './index.js';

test('GGUF bert vocabulary: the same ids as the HF tokenizer on 100 mixed inputs, pairs with types', async () => {
  const gguf = await loadTokenizer(fixture('all-minilm-l6-v2-q8_0').path);
  const hf = await loadTokenizer(fixture('all-minilm-l6-v2').path);
  for (const text of MIXED_SENTENCES)
    assert.deepEqual(await gguf.encodeAsync(text), await hf.encodeAsync(text), JSON.stringify(text));
  const opts = { addSpecialTokens: true, maxLength: 0, direction: 'right' } as const;
  const a = await gguf.encodePooling('a question', 'an answer', opts);
  assert.deepEqual(a, await hf.encodePooling('a question', 'an answer', opts));
  assert.deepEqual(a.typeIds, [0, 0, 0, 0, 1, 1, 1]);
  assert.equal(
    gguf.decode(await gguf.encodeAsync('Hello, world!'), { skipSpecialTokens: true }),
    'hello, world!',
  );
});
