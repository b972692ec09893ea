/**
 * Incremental detokenization on the default model's byte-level vocabulary: feeding ids one by
 * one and concatenating the chunks gives decode(all); no chunk holds U+FFFD unless the full
 * decode does (an emoji's bytes split across tokens are held back); skipSpecialTokens; cost
 * per push. (The SentencePiece leading-space case is in gguf-sentencepiece.test.ts.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ensureDefaultModel } from '../default-model.js';
import { Detokenizer } from './detokenizer.js';
import type { Tokenizer } from './hf-tokenizer.js';
import { loadGgufTokenizer, randomIdLists, SAMPLE_STRINGS } from './test-helpers.js';

let tokenizer: Tokenizer;

test.before(async () => {
  tokenizer = await loadGgufTokenizer(ensureDefaultModel(), (line) => process.stderr.write(`${line}\n`));
});

function stream(ids: readonly number[], skipSpecialTokens: boolean): { chunks: string[]; text: string } {
  const detok = tokenizer.createDetokenizer({ skipSpecialTokens });
  const chunks = ids.map((id) => detok.push(id));
  chunks.push(detok.flush());
  assert.equal(detok.text, chunks.join(''));
  return { chunks, text: detok.text };
}

const EMOJI_CJK = [
  ...SAMPLE_STRINGS,
  '😀😃😄😁😆😅🤣😂🙂🙃😉😊😇🥰😍🤩😘',
  '👩🏽‍🚀 and 🧑🏿‍🤝‍🧑🏻 and 🏳️‍🌈 flags 🇯🇵🇧🇷',
  '漢字かなカナ한글 — 東京は晴れ。北京下雨了。서울은 흐림.',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙 𐍈 𓀀 (astral plane)',
  '<|im_start|>assistant\n答案是 42 🎉<|im_end|>',
];

test('streaming equals decode(all), and no chunk holds a broken character', () => {
  let heldBack = 0;
  for (const s of EMOJI_CJK) {
    const ids = tokenizer.encode(s);
    for (const skip of [false, true]) {
      const { chunks, text } = stream(ids, skip);
      const full = tokenizer.decode(ids, { skipSpecialTokens: skip });
      assert.equal(text, full, `stream of ${JSON.stringify(s)} (skip=${skip})`);
      for (const c of chunks)
        assert.ok(!c.includes('\uFFFD'), `chunk ${JSON.stringify(c)} of ${JSON.stringify(s)}`);
      heldBack += chunks.filter((c) => c === '').length;
    }
  }
  // The emoji and CJK strings span several byte tokens per character: some pushes must wait.
  assert.ok(heldBack > 0);
});

test('a 4-byte character split over byte tokens is emitted once complete', () => {
  const ids = tokenizer.encode('🤖', { addSpecialTokens: false });
  assert.ok(ids.length > 1, `🤖 is ${ids.length} tokens`);
  const detok = tokenizer.createDetokenizer();
  const out = ids.map((id) => detok.push(id));
  assert.deepEqual(
    out.slice(0, -1).filter((c) => c !== ''),
    [],
  );
  assert.equal(out[out.length - 1], '🤖');
  assert.equal(detok.flush(), '');
});

test('arbitrary ids: the stream still equals decode(all); U+FFFD only where the full decode has it', () => {
  for (const ids of randomIdLists(tokenizer.vocabSize, 40, 32, 5)) {
    const { chunks, text } = stream(ids, false);
    const full = tokenizer.decode(ids);
    assert.equal(text, full);
    if (!full.includes('\uFFFD')) for (const c of chunks) assert.ok(!c.includes('\uFFFD'));
  }
});

test('skipSpecialTokens drops special tokens from the stream', () => {
  const ids = tokenizer.encode('<|im_start|>assistant\nHi<|im_end|>');
  assert.equal(stream(ids, true).text, 'assistant\nHi');
  assert.equal(stream(ids, false).text, '<|im_start|>assistant\nHi<|im_end|>');
});

test('ids outside the vocabulary decode to nothing in a stream (a model may sample padding rows)', () => {
  const hi = tokenizer.encode('Hi', { addSpecialTokens: false });
  const { text } = stream([...hi, 49152 + 10, ...hi], false);
  assert.equal(text, 'HiHi');
});

test('flush emits a character left unfinished at the end (as U+FFFD)', () => {
  const ids = tokenizer.encode('🤖', { addSpecialTokens: false });
  const detok = tokenizer.createDetokenizer();
  for (const id of ids.slice(0, -1)) assert.equal(detok.push(id), '');
  const tail = detok.flush();
  assert.equal(tail, tokenizer.decode(ids.slice(0, -1)));
  assert.ok(tail.includes('\uFFFD'));
});

test('push() costs O(1) amortised: ids decoded per push stay bounded over 8,000 tokens', () => {
  const ids = tokenizer.encode(EMOJI_CJK.join('\n').repeat(12), { addSpecialTokens: false }).slice(0, 8000);
  assert.equal(ids.length, 8000);
  // Count the work (ids decoded) instead of timing it: deterministic on a busy machine.
  let decoded = 0;
  const detok = new Detokenizer((window) => {
    decoded += window.length;
    return tokenizer.decode(window);
  });
  const t0 = performance.now();
  for (const id of ids) detok.push(id);
  detok.flush();
  const ms = performance.now() - t0;
  assert.equal(detok.text, tokenizer.decode(ids));
  process.stderr.write(
    `detokenizer: ${(decoded / ids.length).toFixed(2)} ids decoded per push, ${((ms / ids.length) * 1000).toFixed(1)} µs/token\n`,
  );
  // Two short windows per push: a handful of ids each (more only while a character is incomplete).
  assert.ok(decoded / ids.length < 8, `${decoded} ids decoded for ${ids.length} pushes`);
});

test('Detokenizer with a SentencePiece-like decoder that strips the first leading space', () => {
  // A minimal decoder with SentencePiece's rule: ▁ is a space, the sequence's first space is dropped.
  const pieces = ['▁Hello', '▁world', '!', '▁again'];
  const decode = (ids: readonly number[]) =>
    ids
      .map((i) => pieces[i])
      .join('')
      .replace(/▁/g, ' ')
      .replace(/^ /, '');
  const detok = new Detokenizer(decode);
  const chunks = [0, 1, 2, 3].map((id) => detok.push(id));
  assert.deepEqual(chunks, ['Hello', ' world', '!', ' again']);
  assert.equal(detok.text, decode([0, 1, 2, 3]));
});
