/**
 * A decoder's pooling inputs on its generation engine (engine/pooling/decoder-pooling.ts):
 * the last chunk of each prompt runs as a state pass beside the sampled rows of the same step
 * (engine/runner.ts), a long prompt chunked by the step budget gives the vector it gives
 * whole, generation beside it is unchanged, the engine's status reports the KV blocks its
 * inputs hold, and speculative decoding is refused for a pooling model, naming the option.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EngineCore } from '../../engine/engine-core.js';
import { EngineError } from '../../engine/errors.js';
import { loadEngine } from '../../engine/load-engine.js';
import type { EngineOptions } from '../../engine/options.js';
import { loadPoolingEngine } from '../../engine/pooling/load.js';
import type { PoolingEngine } from '../../engine/pooling/pooling-engine.js';
import type { GenerateRequest } from '../../engine/types.js';
import { ensureFixtures } from '../fixtures.js';
import { cosine } from './reference.js';

const model = ensureFixtures().find((f) => f.name === 'qwen3-embedding')!.path;

async function load(options: EngineOptions): Promise<{ pooling: PoolingEngine; core: EngineCore }> {
  let core: EngineCore | undefined;
  const pooling = await loadPoolingEngine(
    model,
    { threads: 2, kvCacheBytes: 16 << 20, ...options },
    async (p, o) => (core = await loadEngine(p, o)),
  );
  return { pooling, core: core! };
}

const LONG = 'The quick brown fox jumps over the lazy dog while the cat watches from the window. '.repeat(4);
const SHORT = 'a short one';
const GENERATE: GenerateRequest = {
  prompt: { kind: 'text', text: 'Once upon a time' },
  params: { maxNewTokens: 8, temperature: 0, ignoreEos: true },
};

async function generated(core: EngineCore): Promise<number[]> {
  const ids: number[] = [];
  for await (const ev of core.generate(GENERATE)) if (ev.type === 'token') ids.push(...ev.tokenIds);
  return ids;
}

test('state passes beside sampled rows: a chunked prompt gives its whole vector, generation is unchanged, status shows the blocks', async () => {
  const whole = await load({ maxPrefillTokens: 8192 });
  const ref = await whole.pooling.pool({ task: 'embed', inputs: [{ text: LONG }, { text: SHORT }] });
  await whole.pooling.close();
  assert.ok(ref.tokenCounts[0]! > 64, `${ref.tokenCounts[0]} tokens`);

  const { pooling, core } = await load({ maxPrefillTokens: 32, maxBatchSize: 8 });
  try {
    const alone = await generated(core);
    const before = await pooling.status();
    assert.ok(before.totalBlocks > 0 && before.freeBlocks === before.totalBlocks, 'a pool, all of it free');
    let leastFree = before.totalBlocks;
    const watch = setInterval(
      () => void pooling.status().then((s) => (leastFree = Math.min(leastFree, s.freeBlocks))),
      1,
    );
    // The long prompt takes several 32-token steps; the generation's decodes share them.
    const [pooled, beside] = await Promise.all([
      pooling.pool({ task: 'embed', inputs: [{ text: LONG }, { text: SHORT }] }),
      generated(core),
    ]);
    clearInterval(watch);
    assert.deepEqual(beside, alone, 'the generation beside the pooling inputs gives its tokens alone');
    pooled.outputs.forEach((v, i) => {
      const c = cosine(v, ref.outputs[i]!);
      assert.ok(c > 0.99999, `input ${i}: cosine ${c} to its unchunked vector`);
    });
    assert.ok(leastFree < before.totalBlocks, 'status reported the blocks the inputs held');
    const after = await pooling.status();
    assert.equal(after.freeBlocks, after.totalBlocks, 'every block freed');
    assert.equal(after.requestsReceived, 0, 'pooling requests are counted apart from generation');
  } finally {
    await pooling.close();
  }
});

test('speculative decoding with a pooling model is refused naming the option', async () => {
  for (const speculative of [{ method: 'ngram' }, { method: 'draft', draftModel: model }] as const)
    await assert.rejects(loadPoolingEngine(model, { threads: 2, speculative }, loadEngine), (e: unknown) => {
      assert.ok(e instanceof EngineError && e.code === 'INVALID_ARGUMENT', String(e));
      assert.equal(e.field, 'speculative');
      assert.match(e.message, /pooling model; it decodes no tokens/);
      return true;
    });
});
