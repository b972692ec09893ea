/**
 * The in-process engine on the real default model (SmolLM2-135M-Instruct): batching,
 * prefix cache, seeds, cancellation, limits and preemption, end to end through the native
 * core. (The same properties over gRPC are in test/engine-grpc.test.ts.)
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { EngineError } from '../engine/errors.js';
import { loadEngine } from '../engine/load-engine.js';
import type { FinishEvent, GenerateEvent, GenerateRequest } from '../engine/types.js';

let engine: EngineCore;
const model = ensureDefaultModel();

before(async () => {
  engine = await loadEngine(model, {
    maxBatchSize: 16,
    maxPrefillTokens: 1024,
    kvCacheBytes: 96 << 20,
    maxSeqLen: 1024,
    maxInputTokenLen: 600,
    threads: 2,
  });
});
after(async () => {
  await engine?.close();
});

async function run(e: EngineCore, request: GenerateRequest) {
  const events: GenerateEvent[] = [];
  for await (const ev of e.generate(request)) events.push(ev);
  const finish = events.find((x): x is FinishEvent => x.type === 'finish')!;
  const streamed = events.map((x) => (x.type === 'token' ? x.text : '')).join('');
  return { finish, streamed, events };
}

const greedy = (text: string, maxNewTokens = 12): GenerateRequest => ({
  prompt: { kind: 'text', text },
  params: { temperature: 0, maxNewTokens, ignoreEos: true },
});

const prompts = [
  'The capital of France is',
  'Once upon a time, in a small village,',
  'def fibonacci(n):',
  'The three primary colors are',
  'Water boils at a temperature of',
  'My favourite fruit is',
];

test('many concurrent greedy streams give the same text as one by one', async () => {
  const alone = [];
  for (const p of prompts) alone.push(await run(engine, greedy(p)));
  const together = await Promise.all(prompts.map((p) => run(engine, greedy(p))));
  for (let i = 0; i < prompts.length; i++) {
    assert.deepEqual(together[i].finish.tokenIds, alone[i].finish.tokenIds, prompts[i]);
    assert.equal(together[i].finish.text, alone[i].finish.text);
    assert.equal(together[i].streamed, together[i].finish.text);
  }
  assert.ok(alone[0].finish.text.length > 0);
});

test('a prefix-cached request gives the same tokens as a cold one and reports cached tokens', async () => {
  const system = 'You are a careful assistant. '.repeat(60);
  const request = (q: string): GenerateRequest => ({
    prompt: {
      kind: 'chat',
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: q },
      ],
    },
    params: { temperature: 0, maxNewTokens: 8 },
  });
  const before = await engine.status();
  const cold = await run(engine, request('What is 2 + 2?'));
  const warm = await run(engine, request('What is 2 + 2?'));
  const other = await run(engine, request('Name a colour.'));
  assert.ok(cold.finish.usage.promptTokens > 256);
  assert.equal(cold.finish.usage.cachedPromptTokens, 0);
  // Whole blocks only, and never the last prompt token.
  const full = Math.floor((warm.finish.usage.promptTokens - 1) / 128) * 128;
  assert.equal(warm.finish.usage.cachedPromptTokens, full);
  assert.deepEqual(warm.finish.tokenIds, cold.finish.tokenIds);
  assert.ok(other.finish.usage.cachedPromptTokens >= 256, 'the shared system prompt is reused');
  const st = await engine.status();
  assert.ok(st.prefixCacheHits - before.prefixCacheHits >= full + 256);
});

test('the same seed gives the same sampled text alone and in a busy batch', async () => {
  const seeded: GenerateRequest = {
    prompt: { kind: 'text', text: 'Write a word:' },
    params: { temperature: 0.9, topP: 0.95, seed: 4242, maxNewTokens: 20, ignoreEos: true },
  };
  const alone = await run(engine, seeded);
  const busy = await Promise.all([
    run(engine, { ...greedy(prompts[1]) }),
    run(engine, seeded),
    run(engine, {
      prompt: { kind: 'text', text: 'Write a word:' },
      params: { temperature: 0.9, seed: 7, maxNewTokens: 20 },
    }),
    run(engine, greedy(prompts[2])),
  ]);
  assert.deepEqual(busy[1].finish.tokenIds, alone.finish.tokenIds);
  assert.equal(busy[1].finish.seed, 4242);
  const other = await run(engine, { ...seeded, params: { ...seeded.params, seed: 4243 } });
  assert.notDeepEqual(other.finish.tokenIds, alone.finish.tokenIds);
});

test('cancellation stops the stream and frees its blocks', async () => {
  const st0 = await engine.status();
  let tokens = 0;
  let finish: FinishEvent | undefined;
  for await (const ev of engine.generate({ ...greedy('Count slowly:', 400), requestId: 'cancel-me' })) {
    if (ev.type === 'token' && ++tokens === 3) assert.equal(await engine.cancel('cancel-me'), true);
    if (ev.type === 'finish') finish = ev;
  }
  assert.equal(finish?.reason, 'cancelled');
  assert.ok(tokens < 10);
  await new Promise((r) => setTimeout(r, 200));
  const st = await engine.status();
  assert.equal(st.freeBlocks, st0.freeBlocks);
  assert.equal(st.running, 0);
});

test('over-long prompts and malformed params are INVALID_ARGUMENT naming the limit or field', async () => {
  const long = 'word '.repeat(800);
  await assert.rejects(
    run(engine, greedy(long)),
    (e: unknown) =>
      e instanceof EngineError &&
      e.code === 'INVALID_ARGUMENT' &&
      /more than maxInputTokenLen \(600\)/.test(e.message),
  );
  const t = await run(engine, {
    ...greedy(long, 4),
    params: { temperature: 0, maxNewTokens: 4, truncate: 100 },
  });
  assert.equal(t.finish.usage.promptTokens, 100);
  await assert.rejects(
    run(engine, { prompt: { kind: 'text', text: 'x' }, params: { topK: -3 } }),
    (e: unknown) => e instanceof EngineError && e.field === 'params.top_k',
  );
  await assert.rejects(
    run(engine, { prompt: { kind: 'tokens', ids: [1, 10_000_000] }, params: {} }),
    (e: unknown) => e instanceof EngineError && e.field === 'prompt.ids[1]',
  );
});

test('preemption in a tiny pool gives the same tokens as an unpreempted run', async () => {
  // 8 blocks of 16 tokens; four requests of ~8 + 32 tokens need ~12 blocks together.
  const tiny = await loadEngine(model, {
    cacheBlockSize: 16,
    kvBlocks: 8,
    maxSeqLen: 128,
    maxBatchSize: 8,
    prefixCache: false,
    threads: 2,
  });
  try {
    const reqs = prompts.slice(0, 4).map((p, i): GenerateRequest => ({
      prompt: { kind: 'text', text: p },
      params: { temperature: i % 2 ? 0.8 : 0, seed: 99 + i, maxNewTokens: 32, ignoreEos: true },
    }));
    const results = await Promise.all(reqs.map((r) => run(tiny, r)));
    assert.ok((await tiny.status()).preemptions > 0, 'the pool must be small enough to preempt');
    for (let i = 0; i < reqs.length; i++) {
      const alone = await run(tiny, reqs[i]); // alone it fits: no preemption
      assert.deepEqual(results[i].finish.tokenIds, alone.finish.tokenIds, prompts[i]);
    }
  } finally {
    await tiny.close();
  }
});

test('n copies share the prompt and each finishes with its own seed', async () => {
  const r = await run(engine, {
    prompt: { kind: 'text', text: 'A short poem:' },
    params: { temperature: 1, seed: 5, n: 3, maxNewTokens: 12 },
  });
  const finishes = r.events.filter((e): e is FinishEvent => e.type === 'finish');
  assert.deepEqual(finishes.map((f) => f.index).sort(), [0, 1, 2]);
  assert.deepEqual(finishes.map((f) => f.seed).sort(), [5, 6, 7]);
  const st = await engine.status();
  assert.equal(st.running, 0);
});
