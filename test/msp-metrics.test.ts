/**
 * The Inference Extension's model-server protocol on /metrics (gateways/mindie/prometheus.ts),
 * scraped as the endpoint picker scrapes it (test/k8s/msp-scrape.ts follows llm-d's core
 * metrics extractor) from the serving port, where a picker looks, and from the metrics
 * listener. Each value is checked against what the test set up (pool size, block size,
 * adapter slots, which requests run and which wait, which adapters they name) and against the
 * engine's Status read just before and just after the scrape, while requests run and an
 * adapter is loaded at run time.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineStatus, GenerateRequest } from '../engine/types.js';
import { adapterFixture } from './adapter-fixtures.js';
import { postJson, startHarness, waitIdle, freePortConfig, type Harness } from './gateways-harness.js';
import { scrapeMsp } from './k8s/msp-scrape.js';

const BLOCK = 16;
const KV_BLOCKS = 80;
const MAX_LORAS = 2;

let h: Harness;

before(async () => {
  h = await startHarness(freePortConfig(), {
    engine: { cacheBlockSize: BLOCK, kvBlocks: KV_BLOCKS, maxBatchSize: 2 },
    lora: {
      maxLoras: MAX_LORAS,
      maxLoraRank: 16,
      modules: [{ name: 'qv', path: adapterFixture('default-qv').path }],
    },
  });
});
after(async () => {
  await h?.close();
});

const usage = (s: EngineStatus): number => 1 - s.freeBlocks / s.totalBlocks;
const ids = (seed: number, n: number): number[] =>
  Array.from({ length: n }, (_, i) => 1000 + ((seed * 131 + i * 17) % 9000));

test('idle: every protocol metric, on the serving port and the metrics listener', async () => {
  for (const url of [h.url, h.metricsUrl]) {
    const m = await scrapeMsp(url);
    assert.deepEqual(
      [m.waitingQueueSize, m.runningRequestsSize, m.kvCacheUsagePercent],
      [0, 0, 0],
      `${url}: nothing queued, running or held`,
    );
    assert.deepEqual([m.maxActiveModels, m.activeModels, m.waitingModels], [MAX_LORAS, [], []]);
    assert.deepEqual([m.cacheBlockSize, m.cacheNumBlocks], [BLOCK, KV_BLOCKS]);
    assert.ok(
      Math.abs(m.loraUpdatedAt - Date.now() / 1000) < 5,
      'lora_requests_info holds the time of the state',
    );
  }
});

test('while requests run and wait and an adapter loads, each value is the engine state at that moment', async () => {
  const loaded = await postJson(`${h.managementUrl}/v1/load_lora_adapter`, {
    lora_name: 'dyn',
    lora_path: adapterFixture('default-all').path,
  });
  assert.equal(loaded.status, 200, loaded.text);
  const stop = new AbortController();
  const started: Promise<void>[] = [];
  const streams: Promise<void>[] = [];
  const submit = (seed: number, promptLen: number, adapter?: string): void => {
    const r: GenerateRequest = {
      prompt: { kind: 'tokens', ids: ids(seed, promptLen) },
      params: { maxNewTokens: 400, doSample: false, ignoreEos: true },
      ...(adapter ? { adapter } : {}),
    };
    let first!: () => void;
    started.push(new Promise<void>((resolve) => (first = resolve)));
    streams.push(
      (async () => {
        try {
          for await (const ev of h.engine.generate(r, stop.signal)) if (ev.type === 'token') first();
        } catch {
          // Cancelled at the end of the test.
        }
      })(),
    );
  };
  // Two run (maxBatchSize 2): one on qv, one on the base model; two more wait, one on dyn.
  submit(1, 3 * BLOCK + 5, 'qv');
  submit(2, 2 * BLOCK + 9);
  await Promise.all(started);
  submit(3, 20, 'dyn');
  submit(4, 20);
  try {
    let before: EngineStatus | undefined;
    let after: EngineStatus | undefined;
    let m;
    for (let tries = 0; tries < 50; tries++) {
      before = await h.engine.status();
      m = await scrapeMsp(h.url);
      after = await h.engine.status();
      const steady = (s: EngineStatus) => s.running === 2 && s.waiting === 2;
      if (steady(before) && steady(after)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(m && before && after, 'the four requests reached two running, two waiting');
    assert.equal(m.runningRequestsSize, 2);
    assert.equal(m.waitingQueueSize, 2);
    assert.deepEqual(m.activeModels, ['qv'], 'running_lora_adapters: the adapters of running requests');
    assert.deepEqual(m.waitingModels, ['dyn'], 'waiting_lora_adapters: those of waiting requests');
    assert.equal(m.maxActiveModels, MAX_LORAS);
    assert.deepEqual([m.cacheBlockSize, m.cacheNumBlocks], [BLOCK, KV_BLOCKS]);
    // KV use only grows while the same two requests decode: the scrape lies between the reads.
    assert.ok(usage(before) <= m.kvCacheUsagePercent && m.kvCacheUsagePercent <= usage(after));
    const held = m.kvCacheUsagePercent * KV_BLOCKS;
    assert.ok(Math.abs(held - Math.round(held)) < 1e-9, 'a whole number of blocks');
    assert.ok(Math.round(held) >= 4 + 3, 'at least the two running prompts: 4 + 3 blocks of 16');
  } finally {
    stop.abort();
    await Promise.all(streams);
  }
  await waitIdle(h.engine);
  const idle = await scrapeMsp(h.url);
  assert.deepEqual(
    [
      idle.waitingQueueSize,
      idle.runningRequestsSize,
      idle.kvCacheUsagePercent,
      idle.activeModels,
      idle.waitingModels,
    ],
    [0, 0, 0, [], []],
    'prefix-cache contents left behind count as free',
  );
});
