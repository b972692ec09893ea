import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SyncEncoder } from './sync-encoder.js';

/** A tiny word-level tokenizer: enough to exercise the worker bridge. */
const TINY = JSON.stringify({
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [
    {
      id: 3,
      content: '<eos>',
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    },
  ],
  normalizer: null,
  pre_tokenizer: { type: 'Whitespace' },
  post_processor: {
    type: 'TemplateProcessing',
    single: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '<eos>', type_id: 0 } }],
    pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { '<eos>': { id: '<eos>', ids: [3], tokens: ['<eos>'] } },
  },
  decoder: null,
  model: { type: 'WordLevel', vocab: { '[UNK]': 0, hello: 1, world: 2, '<eos>': 3 }, unk_token: '[UNK]' },
});

test('synchronous encode through the worker, many calls in a row, with and without special tokens', () => {
  const encoder = SyncEncoder.open(TINY);
  try {
    for (let i = 0; i < 200; i++) {
      assert.deepEqual(Array.from(encoder.encode('hello world', true)), [1, 2, 3]);
      assert.deepEqual(Array.from(encoder.encode('world x hello', false)), [2, 0, 1]);
    }
    assert.deepEqual(Array.from(encoder.encode('', false)), []);
  } finally {
    encoder.close();
  }
  assert.throws(() => encoder.encode('hello', true), /tokenizer is closed/);
});

test('a document the library rejects fails every encode with its reason', () => {
  const encoder = SyncEncoder.open('{"model": {"type": "Nope"}}');
  try {
    for (let i = 0; i < 2; i++)
      assert.throws(() => encoder.encode('hello', true), /Nope|unknown variant|data did not match/i);
  } finally {
    encoder.close();
  }
});
