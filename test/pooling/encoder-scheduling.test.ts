/**
 * An encoder's inputs on the generation engine's intake and scheduler (engine/pooling/
 * encoder-backend.ts): short inputs packed into one encoder pass within the step budget, a
 * long one run alone and whole, a queued request cancelled before it runs, priority order
 * under the priority policy, the queue's back-pressure, and `priority` refused naming it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { EngineError } from '../../engine/errors.js';
import type { EngineOptions } from '../../engine/options.js';
import { loadPoolingEngine } from '../../engine/pooling/load.js';
import type { PoolingEngine } from '../../engine/pooling/pooling-engine.js';
import { ensureFixtures, type Fixture } from '../fixtures.js';
import { cosine } from './reference.js';

let fixtures: Fixture[];
const minilm = (options: EngineOptions): Promise<PoolingEngine> =>
  loadPoolingEngine(fixtures.find((f) => f.name === 'all-minilm-l6-v2')!.path, { threads: 2, ...options });
const ids = (n: number, from = 1000): number[] => [
  101,
  ...Array.from({ length: n - 2 }, (_, i) => from + i),
  102,
];
const embed = (
  m: PoolingEngine,
  inputs: number[][],
  extra: { priority?: number } = {},
  signal?: AbortSignal,
) => m.pool({ task: 'embed', inputs: inputs.map((x) => ({ ids: x })), ...extra }, signal);

let engine: PoolingEngine;
before(async () => {
  fixtures = ensureFixtures();
  engine = await minilm({ maxBatchSize: 16, maxPrefillTokens: 256 });
});
after(async () => {
  await engine?.close();
});

test('N short inputs run in one encoder pass within the step budget; a long one runs alone and whole', async () => {
  const short = Array.from({ length: 12 }, (_, i) => ids(16, 2000 + 10 * i));
  let passes = engine.poolingStats().passes;
  const packed = await embed(engine, short);
  assert.equal(engine.poolingStats().passes - passes, 1, '12 inputs of 16 tokens (192 <= 256): one pass');
  // Each input's vector is its own: the same as when it runs alone.
  const alone = await embed(engine, [short[5]!]);
  assert.ok(cosine(alone.outputs[0]!, packed.outputs[5]!) > 0.99999);
  // 256 tokens (the model's maximum, and the whole step budget) beside two short ones: its own pass, never chunked.
  const long = ids(256, 3000);
  passes = engine.poolingStats().passes;
  const mixed = await embed(engine, [short[0]!, long, short[1]!]);
  // First come, first served: the long one waits for a step of its own, and nothing passes it.
  assert.equal(
    engine.poolingStats().passes - passes,
    3,
    'a short one, the long one alone, the other short one',
  );
  const longAlone = await embed(engine, [long]);
  assert.ok(cosine(longAlone.outputs[0]!, mixed.outputs[1]!) > 0.99999, 'the long input ran whole');
  const status = await engine.status();
  assert.equal(status.totalBlocks, 0, 'an encoder keeps no KV');
  assert.equal(status.running + status.waiting, 0);
  assert.equal(status.requestsReceived, 0, 'pooling requests are counted apart from generation');
  assert.ok(status.pooling!.requests >= 4);
});

test('a queued encoder request is cancelled before it runs; the engine goes on serving', async () => {
  const m = await minilm({ maxBatchSize: 1, maxPrefillTokens: 64 });
  try {
    const first = embed(
      m,
      Array.from({ length: 6 }, (_, i) => ids(48, 4000 + i)),
    );
    const abort = new AbortController();
    const queued = embed(m, [ids(8, 5000), ids(8, 5100)], {}, abort.signal);
    // Cancelled once the first pass has run: its inputs are in the scheduler's queue then.
    let waitingThen = 0;
    const watch = setInterval(() => {
      if (m.poolingStats().passes === 0) return;
      clearInterval(watch);
      void m.status().then((st) => (waitingThen = st.waiting));
      abort.abort();
    }, 1);
    await assert.rejects(queued, (e: unknown) => e instanceof EngineError && e.code === 'CANCELLED');
    await first;
    assert.ok(waitingThen >= 2, `${waitingThen} inputs were waiting when it was cancelled`);
    assert.equal(m.poolingStats().passes, 6, "only the first request's inputs ran");
    const status = await m.status();
    assert.equal(status.running + status.waiting, 0, 'nothing of the cancelled request is left');
    assert.equal((await embed(m, [ids(8, 5000)])).outputs.length, 1);
  } finally {
    await m.close();
  }
});

test('--scheduling-policy priority: a later, more urgent request runs before the rest of an earlier one', async () => {
  const order = async (policy: 'fcfs' | 'priority'): Promise<string[]> => {
    const m = await minilm({ maxBatchSize: 1, maxPrefillTokens: 64, schedulingPolicy: policy });
    try {
      const done: string[] = [];
      const low = embed(
        m,
        Array.from({ length: 6 }, (_, i) => ids(48, 6000 + i)),
        {
          ...(policy === 'priority' ? { priority: 5 } : {}),
        },
      ).then(() => done.push('low'));
      const high = embed(m, [ids(8, 7000)]).then(() => done.push('high'));
      await Promise.all([low, high]);
      return done;
    } finally {
      await m.close();
    }
  };
  assert.deepEqual(await order('priority'), ['high', 'low']);
  assert.deepEqual(await order('fcfs'), ['low', 'high'], 'fcfs: the later request waits its turn');
});

test('bad scheduling fields are refused naming them; a full queue refuses a whole request', async () => {
  for (const [priority, rule] of [
    [1, /must be 0 unless the engine schedules by priority/],
    [0.5, /must be an integer/],
  ] as const)
    await assert.rejects(embed(engine, [ids(4)], { priority }), (e: unknown) => {
      assert.ok(e instanceof EngineError && e.code === 'INVALID_ARGUMENT', String(e));
      assert.equal(e.field, 'priority');
      assert.match(e.message, rule);
      return true;
    });
  const m = await minilm({ maxBatchSize: 64, maxPrefillTokens: 256, maxQueueSize: 1 });
  try {
    // Room for 2048 unfinished inputs (a whole request's): a second full request waits for none of it.
    const full = Array.from({ length: 2048 }, (_, i) => ids(4, 1000 + (i % 500)));
    const first = embed(m, full);
    await assert.rejects(
      embed(m, full),
      (e: unknown) => e instanceof EngineError && e.code === 'RESOURCE_EXHAUSTED',
    );
    assert.equal((await first).outputs.length, 2048);
  } finally {
    await m.close();
  }
});
