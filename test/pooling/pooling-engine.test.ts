/**
 * The pooling engine end to end in process (engine/pooling/): text through the model's own
 * tokenizer and truncation to the float reference, many requests packed into few passes, the
 * decoder backends (Qwen3-Embedding's last token, Qwen3-Reranker's yes/no), and every bad
 * input refused with INVALID_ARGUMENT naming the field.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { EngineError } from '../../engine/errors.js';
import { loadEngine, loadServedEngine } from '../../engine/load-engine.js';
import { isPoolingModel, loadPoolingEngine } from '../../engine/pooling/load.js';
import type { PoolingEngine } from '../../engine/pooling/pooling-engine.js';
import type { EngineOptions } from '../../engine/options.js';
import { RerankPrompt } from '../../engine/pooling/rerank-prompt.js';
import { loadTokenizer } from '../../engine/tokenizer/index.js';
import { ensureFixtures, type Fixture } from '../fixtures.js';
import { cosine, poolingReferences } from './reference.js';
import { MIXED_SENTENCES } from './sentences.js';

let fixtures: Fixture[];
const path = (name: string): string => fixtures.find((f) => f.name === name)!.path;
let minilm: PoolingEngine;

before(async () => {
  fixtures = ensureFixtures();
  minilm = await loadPoolingEngine(path('all-minilm-l6-v2'), {
    maxBatchSize: 16,
    maxPrefillTokens: 2048,
    threads: 2,
  });
});
after(async () => {
  await minilm?.close();
});

async function refused(p: Promise<unknown>, field: string, rule: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof EngineError, String(e));
    assert.equal(e.code, 'INVALID_ARGUMENT');
    assert.equal(e.field, field, e.message);
    assert.match(e.message, rule);
    return true;
  });
}

test('which engine: encoders and sentence-transformers folders pool, a decoder generates', () => {
  assert.equal(isPoolingModel(path('all-minilm-l6-v2')), true);
  assert.equal(isPoolingModel(path('all-minilm-l6-v2-q8_0')), true);
  assert.equal(isPoolingModel(path('qwen3-embedding')), true);
  assert.equal(isPoolingModel(path('qwen3-f32')), false);
  assert.equal(isPoolingModel(path('qwen3-f32'), { task: 'score' }), true);
});

test('MiniLM: text through its tokenizer and 256-token truncation matches sentence-transformers, requests packed into shared passes', async () => {
  const texts = MIXED_SENTENCES.filter((_, i) => i % 3 === 0);
  const [ref] = poolingReferences([{ kind: 'embed', model: path('all-minilm-l6-v2'), texts }]);
  const before = minilm.poolingStats().passes;
  // One request per text, all at once: the queue packs them (16 inputs / 2048 tokens a pass).
  const results = await Promise.all(
    texts.map((text) => minilm.pool({ task: 'embed', inputs: [{ text }], truncate: { direction: 'right' } })),
  );
  const passes = minilm.poolingStats().passes - before;
  assert.ok(passes < texts.length / 2, `${texts.length} requests took ${passes} passes`);
  results.forEach((r, i) => {
    assert.equal(r.tokenCounts[0], ref!.ids[i]!.length, `input ${i}: token count`);
    const c = cosine(r.outputs[0]!, ref!.embeddings![i]!);
    assert.ok(c >= 0.999, `input ${i}: cosine ${c}`);
    let n = 0;
    for (const v of r.outputs[0]!) n += v * v;
    assert.ok(Math.abs(Math.sqrt(n) - 1) < 1e-5, 'Normalize module: unit vectors');
  });
  const long = MIXED_SENTENCES.find((t) => t.length > 1500)!;
  await refused(
    minilm.pool({ task: 'embed', inputs: [{ text: long }] }),
    'input[0]',
    /exceed the model's maximum of 256/,
  );
});

test('bad input is refused naming the field', async () => {
  await refused(minilm.pool({ task: 'embed', inputs: [] }), 'input', /must not be empty/);
  await refused(
    minilm.pool({ task: 'embed', inputs: Array.from({ length: 1_000_000 }, () => ({ text: 'x' })) }),
    'input',
    /at most 2048 inputs/,
  );
  await refused(
    minilm.pool({ task: 'embed', inputs: [{ ids: [101, 30522, 102] }] }),
    'input[0][1]',
    /outside the vocabulary/,
  );
  await refused(
    minilm.pool({ task: 'embed', inputs: [{ text: 'a' }], dimensions: 64 }),
    'dimensions',
    /does not support Matryoshka/,
  );
  await refused(
    minilm.pool({ task: 'classify', inputs: [{ text: 'a' }] }),
    'task',
    /serves embed, score, tokens/,
  );
  await refused(
    minilm.pool({
      task: 'embed',
      inputs: [{ text: 'a' }],
      inputField: 'texts',
      truncate: { direction: 'right', maxTokens: 9999 },
    }),
    'truncate_prompt_tokens',
    /1\.\.256/,
  );
  await assert.rejects(
    async () => {
      for await (const _ of minilm.generate({ prompt: { text: 'hi' } } as never)) break;
    },
    (e: unknown) =>
      e instanceof EngineError &&
      e.code === 'INVALID_ARGUMENT' &&
      e.field === 'model' &&
      /pooling model/.test(e.message),
  );
});

test('Matryoshka: the first d values, normalised after the cut; d larger than the model is refused', async () => {
  const m = await loadPoolingEngine(path('bert-cls'), {
    pooling: { matryoshkaDimensions: 'any' },
    threads: 2,
  });
  try {
    const full = await m.pool({ task: 'embed', inputs: [{ text: 'hello world' }], normalize: false });
    const cut = await m.pool({ task: 'embed', inputs: [{ text: 'hello world' }], dimensions: 16 });
    assert.equal(cut.outputs[0]!.length, 16);
    let n = 0;
    for (let i = 0; i < 16; i++) n += full.outputs[0]![i]! ** 2;
    for (let i = 0; i < 16; i++)
      assert.ok(Math.abs(cut.outputs[0]![i]! - full.outputs[0]![i]! / Math.sqrt(n)) < 1e-6);
    await refused(
      m.pool({ task: 'embed', inputs: [{ text: 'a' }], dimensions: 65 }),
      'dimensions',
      /larger than the model's 64/,
    );
  } finally {
    await m.close();
  }
});

test('cross-encoder: pairs with token types through the engine match sentence-transformers; an embedder scores by cosine', async () => {
  const pairs: [string, string][] = [
    ['What is the capital of France?', 'Paris is the capital of France.'],
    ['What is the capital of France?', 'The stock market closed higher.'],
  ];
  const [ref] = poolingReferences([{ kind: 'score', model: path('bert-cross'), pairs }]);
  const m = await loadPoolingEngine(path('bert-cross'), { threads: 2 });
  try {
    const r = await m.pool({ task: 'score', inputs: pairs.map((pair) => ({ pair })) });
    r.outputs.forEach((v, i) =>
      assert.ok(
        Math.abs(v[0]! - ref!.scores![i]![0]!) < 1e-3,
        `pair ${i}: ${v[0]} vs ${ref!.scores![i]![0]}`,
      ),
    );
    const raw = await m.pool({ task: 'score', inputs: pairs.map((pair) => ({ pair })), activation: false });
    raw.outputs.forEach((v, i) =>
      assert.ok(
        Math.abs(v[0]! - ref!.logits![i]![0]!) < 1e-3,
        `pair ${i}: logit ${v[0]} vs ${ref!.logits![i]![0]}`,
      ),
    );
  } finally {
    await m.close();
  }
  const byCosine = await minilm.pool({ task: 'score', inputs: pairs.map((pair) => ({ pair })) });
  const e = await minilm.pool({ task: 'embed', inputs: pairs.flat().map((text) => ({ text })) });
  for (let i = 0; i < pairs.length; i++)
    assert.ok(
      Math.abs(byCosine.outputs[i]![0]! - cosine(e.outputs[2 * i]!, e.outputs[2 * i + 1]!)) < 1e-5,
      `pair ${i}: ${byCosine.outputs[i]![0]}`,
    );
});

/** A decoder's pooling engine: its inputs run on the generation engine's intake and scheduler. */
async function decoderPooling(name: string, options: EngineOptions): Promise<PoolingEngine> {
  const { engine } = await loadServedEngine(path(name), { threads: 2, kvCacheBytes: 16 << 20, ...options });
  assert.equal(engine.constructor.name, 'PoolingEngine');
  return engine as PoolingEngine;
}

test('Qwen3-Embedding (decoder, last-token pooling) on the generation scheduler: cosine >= 0.999 to sentence-transformers', async () => {
  const texts = MIXED_SENTENCES.filter((_, i) => i % 10 === 0);
  const [ref] = poolingReferences([{ kind: 'embed', model: path('qwen3-embedding'), texts }]);
  const m = await decoderPooling('qwen3-embedding', { maxBatchSize: 8 });
  try {
    const r = await m.pool({ task: 'embed', inputs: texts.map((text) => ({ text })) });
    r.outputs.forEach((v, i) => {
      const c = cosine(v, ref!.embeddings![i]!);
      assert.ok(c >= 0.999, `input ${i}: cosine ${c}`);
    });
    // The scheduler packed several prompts into each step: fewer state passes than inputs.
    const stats = m.poolingStats();
    assert.ok(
      stats.passes >= 2 && stats.passes < texts.length,
      `${stats.passes} passes for ${texts.length} inputs`,
    );
    // A second request alone gives the same vector (no state survives a request).
    const again = await m.pool({ task: 'embed', inputs: [{ text: texts[3]! }] });
    assert.ok(cosine(again.outputs[0]!, r.outputs[3]!) > 0.99999);
    // A request cancelled after its first state pass (of five) ends CANCELLED; the engine goes on serving.
    const abort = new AbortController();
    const many = [...texts, ...texts, ...texts, ...texts].map((text) => ({ text }));
    const passes = m.poolingStats().passes;
    const cancelled = m.pool({ task: 'embed', inputs: many }, abort.signal);
    const watch = setInterval(() => m.poolingStats().passes > passes && abort.abort(), 1);
    await assert.rejects(cancelled, (e: unknown) => e instanceof EngineError && e.code === 'CANCELLED');
    clearInterval(watch);
    const after = await m.pool({ task: 'embed', inputs: [{ text: texts[3]! }] });
    assert.ok(cosine(after.outputs[0]!, r.outputs[3]!) > 0.99999);
    await assert.rejects(
      async () => {
        for await (const _ of m.generate({ prompt: { kind: 'text', text: 'hi' }, params: {} })) break;
      },
      (e: unknown) => e instanceof EngineError && e.field === 'model' && /pooling model/.test(e.message),
    );
  } finally {
    await m.close();
  }
});

test("Qwen3-Reranker (decoder, yes/no logits): P(yes) within 1e-3 of transformers' on the same prompt", async () => {
  const pairs: [string, string][] = [
    ['what is a panda?', 'The giant panda is a bear species endemic to China.'],
    ['what is a panda?', 'Paris is the capital of France.'],
    ['capital of France', 'Paris is the capital of France.'],
  ];
  const tokenizer = await loadTokenizer(path('qwen3-f32'));
  const prompt = await RerankPrompt.create(tokenizer);
  const ids = await Promise.all(
    pairs.map(async ([q, d]) => [
      ...(await prompt.encode('x', q, d, { maxLength: 4096, truncate: false, output: 'scores' })).ids,
    ]),
  );
  const [ref] = poolingReferences([
    { kind: 'yesno', model: path('qwen3-f32'), ids, tokens: prompt.classTokens as [number, number] },
  ]);
  const m = await decoderPooling('qwen3-f32', { pooling: { task: 'score' } });
  try {
    const r = await m.pool({ task: 'score', inputs: pairs.map((pair) => ({ pair })) });
    r.outputs.forEach((v, i) =>
      assert.ok(
        Math.abs(v[0]! - ref!.scores![i]![0]!) < 1e-3,
        `pair ${i}: ${v[0]} vs ${ref!.scores![i]![0]}`,
      ),
    );
  } finally {
    await m.close();
  }
});

test('a generation model refuses a pooling request naming the model', async () => {
  const core = await loadEngine(path('qwen3-f32'), { kvCacheBytes: 16 << 20, threads: 2 });
  try {
    await refused(core.pool({ task: 'embed', inputs: [{ text: 'a' }] }), 'model', /text-generation model/);
  } finally {
    await core.close();
  }
});
