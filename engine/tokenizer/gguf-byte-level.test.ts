/**
 * The default model's tokenizer (SmolLM2 GGUF: byte-level BPE, pre = smollm) against two
 * references on the same file: Python transformers (`AutoTokenizer.from_pretrained(dir,
 * gguf_file=...)`: ids both ways, decode, chat template) and llama.cpp (node-llama-cpp,
 * vocabulary only: ids).
 */
import assert from 'node:assert/strict';
import { basename, dirname } from 'node:path';
import { test } from 'node:test';
import { ensureDefaultModel } from '../default-model.js';
import type { ChatMessage } from '../types.js';
import type { Tokenizer } from './hf-tokenizer.js';
import {
  loadGgufTokenizer,
  randomIdLists,
  runOracle,
  SAMPLE_STRINGS,
  type OracleAnswer,
} from './test-helpers.js';

const CONVERSATIONS: { messages: ChatMessage[]; add_generation_prompt: boolean }[] = [
  { messages: [{ role: 'user', content: 'What is 2+2?' }], add_generation_prompt: true },
  { messages: [{ role: 'user', content: 'What is 2+2?' }], add_generation_prompt: false },
  {
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Name a colour. 🎨' },
      { role: 'assistant', content: 'Blue.' },
      { role: 'user', content: 'Another, in 中文?' },
    ],
    add_generation_prompt: true,
  },
];

let tokenizer: Tokenizer;
let answer: OracleAnswer;
let strings: string[];
let idLists: number[][];
let modelPath: string;

test.before(async () => {
  modelPath = ensureDefaultModel();
  tokenizer = await loadGgufTokenizer(modelPath, (line) => process.stderr.write(`${line}\n`));
  strings = [...SAMPLE_STRINGS, SAMPLE_STRINGS.join('\n')];
  // Decode parity on our own encodings and on arbitrary ids (partial UTF-8 sequences included).
  idLists = [
    ...strings.map((s) => tokenizer.encode(s)),
    ...randomIdLists(tokenizer.vocabSize, 12, 24),
    [1, 9690, 198, 2, 0, 17], // specials mixed with text
  ];
  answer = runOracle({
    model: dirname(modelPath),
    gguf_file: basename(modelPath),
    strings,
    id_lists: idLists,
    conversations: CONVERSATIONS,
  });
});

test('vocabulary facts match transformers', () => {
  assert.equal(tokenizer.vocabSize, 49152);
  assert.equal(tokenizer.vocabSize, answer.info!.vocab_size);
  assert.equal(tokenizer.bosTokenId, answer.info!.bos_token_id);
  assert.equal(tokenizer.eosTokenIds[0], answer.info!.eos_token_id);
  assert.deepEqual(tokenizer.eosTokenIds, [2, 0]); // <|im_end|>, then <|endoftext|> (as llama.cpp stops on both)
  assert.equal(tokenizer.addBosToken, false);
  assert.ok(tokenizer.isSpecial(2) && tokenizer.isSpecial(1) && !tokenizer.isSpecial(100));
  assert.ok(tokenizer.chatTemplate?.includes('<|im_start|>'));
});

test('encode gives the same ids as transformers, with and without special tokens', () => {
  strings.forEach((s, i) => {
    assert.deepEqual(tokenizer.encode(s), answer.encode[i].with_special, `encode(${JSON.stringify(s)})`);
    assert.deepEqual(
      tokenizer.encode(s, { addSpecialTokens: false }),
      answer.encode[i].without_special,
      `encode(${JSON.stringify(s)}, no specials)`,
    );
  });
});

test('special tokens written in the text are parsed as specials', () => {
  assert.deepEqual(tokenizer.encode('<|im_start|>user'), [1, 4093]);
  assert.deepEqual(tokenizer.encode('<|im_end|>'), [2]);
});

test('decode gives the same text as transformers, keeping and skipping specials', () => {
  idLists.forEach((ids, i) => {
    assert.equal(tokenizer.decode(ids), answer.decode[i].keep, `decode(${JSON.stringify(ids)})`);
    assert.equal(
      tokenizer.decode(ids, { skipSpecialTokens: true }),
      answer.decode[i].skip,
      `decode skip(${JSON.stringify(ids)})`,
    );
  });
  // Round trip on text.
  strings.forEach((s) => assert.equal(tokenizer.decode(tokenizer.encode(s)), s));
});

test('the embedded chat template renders as transformers renders it', () => {
  CONVERSATIONS.forEach((conv, i) => {
    const ours = tokenizer.applyChatTemplate(conv.messages, {
      addGenerationPrompt: conv.add_generation_prompt,
    });
    assert.equal(ours, answer.chat[i]);
  });
});

test('token ids match llama.cpp on the same GGUF (node-llama-cpp, vocabulary only)', async () => {
  const { getLlama } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' as never });
  const model = await llama.loadModel({ modelPath, vocabOnly: true });
  try {
    for (const s of strings) {
      // llama.cpp: parse special-token text (as our encode does); this vocabulary adds no BOS.
      assert.deepEqual(
        tokenizer.encode(s),
        Array.from(model.tokenize(s, true)),
        `llama.cpp tokenize(${JSON.stringify(s)})`,
      );
    }
  } finally {
    await model.dispose();
    await llama.dispose();
  }
});

test('tokenText shows a token as it reads in a sequence', () => {
  const [hello] = tokenizer.encode(' Hello', { addSpecialTokens: false });
  assert.equal(tokenizer.tokenText(hello), ' Hello');
  assert.equal(tokenizer.tokenText(2), '<|im_end|>');
  assert.equal(tokenizer.tokenText(49152), ''); // a padding row past the vocabulary
  assert.throws(() => tokenizer.tokenText(-3), /id: must be a token id/);
});

test('bad input is rejected with a clear error', () => {
  assert.throws(
    () => tokenizer.decode([0, -1]),
    /ids\[1\]: must be a token id \(an integer in \[0, 4294967295\]\), got -1/,
  );
  assert.throws(() => tokenizer.decode([1.5]), /ids\[0\]: must be a token id/);
  assert.throws(() => tokenizer.decode('12' as unknown as number[]), /ids: must be an array/);
  // Ids past the vocabulary (padding rows of the embedding matrix) decode to nothing, as in transformers.
  assert.equal(tokenizer.decode([19556, 49152, 60000]), 'Hello');
  assert.throws(() => tokenizer.encode(42 as unknown as string), /text: must be a string/);
});

test('encoding a ~2,000-token prompt takes a few ms', () => {
  const text = strings.join('\n').repeat(3);
  const ids = tokenizer.encode(text);
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t0 = performance.now();
    tokenizer.encode(text);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  process.stderr.write(`encode ${ids.length} tokens: median ${times[3].toFixed(2)} ms\n`);
  assert.ok(ids.length > 1500);
  // Generous bound for a loaded 2-core machine; typical is well under 10 ms.
  assert.ok(times[3] < 100, `median encode time ${times[3]} ms`);
});
