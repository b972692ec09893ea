/**
 * The real Gemma 3 270M Q4_K_M GGUF (test/gemma3-real.ts): what Prism reads from it, its
 * tokenizer against llama.cpp's on the same file, greedy continuations of the README's
 * prompt and a chat question against llama.cpp's (node-llama-cpp's prebuilt CPU build) on the same token ids, and
 * one request through every API family.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LlamaCppEngine } from '../bench/engine/llamacpp.js';
import { PrismEngine } from '../bench/engine/prism.js';
import { CHAT_QUESTIONS } from '../bench/engine/prompts.js';
import * as native from '../native/native.js';
import { loadTokenizer, type Tokenizer } from '../engine/tokenizer/index.js';
import { ensureGemma3Model } from './gemma3-real.js';
import { freePortConfig, postJson, startHarness, type Harness } from './gateways-harness.js';

let path: string;
let llama: LlamaCppEngine;
let tokenizer: Tokenizer;

before(async () => {
  path = ensureGemma3Model();
  llama = await LlamaCppEngine.load({
    modelPath: path,
    threads: 2,
    maxSeqs: 1,
    maxContext: 256,
    aggregateContext: 256,
    aggregateBatch: 256,
  });
  tokenizer = await loadTokenizer(path);
});

after(async () => {
  await llama?.dispose();
});

test('Gemma 3 270M: architecture, sliding layers and tensor types as the file has them', async () => {
  const model = await native.loadModel(path);
  try {
    const info = native.modelInfo(model);
    assert.equal(info.architecture, 'gemma3');
    assert.equal(info.numLayers, 18);
    assert.equal(info.headDim, 256);
    assert.equal(info.numKvHeads, 1);
    // Five local layers of 512 tokens, then a global one.
    assert.deepEqual(
      info.layerWindows,
      Array.from({ length: 18 }, (_, l) => ((l + 1) % 6 === 0 ? 0 : 512)),
    );
    assert.deepEqual(Object.keys(info.tensorTypes).sort(), ['F32', 'Q4_K', 'Q5_0', 'Q6_K', 'Q8_0']);
  } finally {
    native.disposeModel(model);
  }
});

const TEXTS = [
  'The capital of France is',
  ' leading space and  double   spaces',
  'naïve café 東京 🤖',
  'def f(x):\n    return x*2\n',
  '<start_of_turn>user\nHi<end_of_turn>\n',
];

test('Gemma 3 270M: the tokenizer matches llama.cpp on the same file', () => {
  for (const text of TEXTS) {
    assert.deepEqual(tokenizer.encode(text, { addSpecialTokens: false }), llama.tokenize(text, true), text);
  }
  assert.ok(tokenizer.eosTokenIds.includes(106), '<end_of_turn> ends generation');
});

/**
 * The README's completion prompt and the benchmark's first chat question in Gemma's own
 * format (docs/models.md has all three questions' continuations from a longer run).
 */
function prompts(): { label: string; ids: number[] }[] {
  const question = CHAT_QUESTIONS[0];
  const chat = tokenizer.applyChatTemplate([{ role: 'user', content: question }], {
    addGenerationPrompt: true,
  });
  return [
    { label: 'The capital of France is', ids: tokenizer.encode('The capital of France is') },
    { label: question, ids: tokenizer.encode(chat, { addSpecialTokens: false }) },
  ];
}

test('Gemma 3 270M: greedy continuations agree with llama.cpp on the same ids', async () => {
  const prism = await PrismEngine.load(native, {
    modelPath: path,
    threads: 2,
    maxSeqs: 1,
    blockSize: 16,
    maxContext: 256,
    aggregateContext: 256,
    maxBatchTokens: 256,
  });
  try {
    const stop = new Set(tokenizer.eosTokenIds);
    for (const { label, ids } of prompts()) {
      const a = await llama.greedy(ids, 12, stop);
      const b = await prism.greedy(ids, 12, stop);
      let common = 0;
      while (common < a.length && a[common] === b[common]) common++;
      console.log(
        `gemma3 ${JSON.stringify(label)}: ${common}/${a.length} tokens in common\n` +
          `  llama.cpp: ${JSON.stringify(llama.detokenize(a))}\n  prism:     ${JSON.stringify(llama.detokenize(b))}`,
      );
      // Q4_K_M weights with different activation rounding (llama.cpp: q8 per 32; Prism: int16
      // below hidden 1024) may part at a near-tie late in a continuation; the start must agree.
      assert.ok(common >= Math.min(8, a.length), `${label}: the continuations part after ${common} tokens`);
    }
  } finally {
    await prism.dispose();
  }
});

test('Gemma 3 270M: served through every API family', async () => {
  let h: Harness | undefined;
  try {
    h = await startHarness(freePortConfig(), { modelPath: path, modelName: 'gemma3' });
    const chat = await postJson(`${h.url}/v1/chat/completions`, {
      model: 'gemma3',
      messages: [{ role: 'user', content: 'What is the capital of France?' }],
      max_tokens: 12,
      temperature: 0,
    });
    assert.equal(chat.status, 200, chat.text);
    // The 270M file is the pretrained (not instruction-tuned) model: it answers a chat turn
    // poorly, as it does in llama.cpp; what is checked here is that every family serves it.
    assert.ok(chat.json.choices[0].message.content.length > 0, chat.text);
    const completion = await postJson(`${h.url}/v1/completions`, {
      model: 'gemma3',
      prompt: 'The capital of France is',
      max_tokens: 6,
      temperature: 0,
    });
    assert.equal(completion.status, 200, completion.text);
    assert.ok(completion.json.choices[0].text.length > 0);
    const tgi = await postJson(`${h.url}/generate`, {
      inputs: 'The capital of France is',
      parameters: { max_new_tokens: 6 },
    });
    assert.equal(tgi.status, 200, tgi.text);
    assert.equal(tgi.json.generated_text, completion.json.choices[0].text);
    const vllm = await postJson(`${h.url}/generate`, {
      prompt: 'The capital of France is',
      max_tokens: 6,
      temperature: 0,
    });
    assert.equal(vllm.status, 200, vllm.text);
    const kserve = await postJson(`${h.url}/v2/models/gemma3/generate`, {
      text_input: 'The capital of France is',
      parameters: { max_new_tokens: 6 }, // greedy: KServe samples only when asked to
    });
    assert.equal(kserve.status, 200, kserve.text);
    assert.equal(kserve.json.text_output.endsWith(completion.json.choices[0].text), true, kserve.text);
    const infer = await postJson(`${h.url}/infer`, {
      inputs: 'The capital of France is',
      parameters: { max_new_tokens: 6 },
    });
    assert.equal(infer.status, 200, infer.text);
    assert.ok(infer.text.includes(completion.json.choices[0].text), infer.text);
  } finally {
    await h?.close();
  }
});
