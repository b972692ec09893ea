/**
 * Three engines on one machine, as an endpoint picker sees three pods: each gets a different
 * load (a queue; a nearly full KV cache; an adapter running), each one's /metrics is read the
 * way llm-d's metrics extractor reads it (test/k8s/msp-scrape.ts), and the data is checked
 * against the load the test made. A client choosing by the protocol's metrics in the picker's
 * documented order (shortest queue, then room in the KV cache, then LoRA affinity, then the
 * least KV use) must then choose the engine the loads call for. The chooser is the smallest
 * statement of those rules; what is under test is that Prism's numbers lead it right.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineOptions } from '../engine/options.js';
import type { EngineStatus, GenerateRequest } from '../engine/types.js';
import { adapterFixture } from './adapter-fixtures.js';
import { freePortConfig, postJson, startHarness, type Harness } from './gateways-harness.js';
import { scrapeMsp, type MspMetrics } from './k8s/msp-scrape.js';

const BLOCK = 16;
/** The picker's KV threshold: a pod at or above it has no room for another prompt. */
const KV_FULL = 0.8;

interface Pod {
  readonly name: string;
  readonly h: Harness;
  readonly stop: AbortController;
  readonly streams: Promise<void>[];
}

const pods: Pod[] = [];

async function startPod(name: string, engine: EngineOptions): Promise<Pod> {
  const h = await startHarness(freePortConfig(), {
    engine: { cacheBlockSize: BLOCK, maxSeqLen: 512, maxInputTokenLen: 500, ...engine },
    lora: {
      maxLoras: 2,
      maxLoraRank: 16,
      modules: [{ name: 'qv', path: adapterFixture('default-qv').path }],
    },
  });
  const loaded = await postJson(`${h.managementUrl}/v1/load_lora_adapter`, {
    lora_name: 'dyn',
    lora_path: adapterFixture('default-all').path,
  });
  assert.equal(loaded.status, 200, loaded.text);
  return { name, h, stop: new AbortController(), streams: [] };
}

function load(pod: Pod, promptBlocks: number, adapter?: string, maxNewTokens = 250): void {
  const r: GenerateRequest = {
    prompt: {
      kind: 'tokens',
      ids: Array.from({ length: promptBlocks * BLOCK }, (_, i) => 2000 + ((i * 37) % 5000)),
    },
    params: { maxNewTokens, doSample: false, ignoreEos: true },
    ...(adapter ? { adapter } : {}),
  };
  pod.streams.push(
    (async () => {
      try {
        for await (const ev of pod.h.engine.generate(r, pod.stop.signal)) void ev;
      } catch {
        // Cancelled when the test is done with this load.
      }
    })(),
  );
}

async function until(pod: Pod, want: (s: EngineStatus) => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!want(await pod.h.engine.status())) {
    assert.ok(Date.now() < deadline, `${pod.name} never reached the load the test asked for`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function unload(pod: Pod): Promise<void> {
  pod.stop.abort();
  await Promise.all(pod.streams.splice(0));
  await until(pod, (s) => s.running === 0 && s.waiting === 0);
}

/** Shortest queue, then room in the KV cache, then LoRA affinity, then the least KV use. */
function choose(view: { name: string; m: MspMetrics }[], adapter?: string): string {
  const minQueue = Math.min(...view.map((p) => p.m.waitingQueueSize));
  let c = view.filter((p) => p.m.waitingQueueSize === minQueue);
  const roomy = c.filter((p) => p.m.kvCacheUsagePercent < KV_FULL);
  if (roomy.length > 0) c = roomy;
  if (adapter) {
    const affine = c.filter((p) => p.m.activeModels.includes(adapter) || p.m.waitingModels.includes(adapter));
    const free = c.filter((p) => p.m.activeModels.length < p.m.maxActiveModels);
    c = affine.length > 0 ? affine : free.length > 0 ? free : c;
  }
  return c.reduce((a, b) => (b.m.kvCacheUsagePercent < a.m.kvCacheUsagePercent ? b : a)).name;
}

const scrapeAll = async () =>
  Promise.all(pods.map(async (p) => ({ name: p.name, m: await scrapeMsp(p.h.url) })));

before(async () => {
  // full: a pool of 70 blocks. queued: one request at a time. light: room for everything.
  pods.push(
    await startPod('full', { kvBlocks: 70, maxBatchSize: 4, maxSeqLen: 1024, maxInputTokenLen: 1000 }),
  );
  pods.push(await startPod('queued', { kvBlocks: 64, maxBatchSize: 1 }));
  pods.push(await startPod('light', { kvBlocks: 64, maxBatchSize: 4 }));
});
after(async () => {
  for (const p of pods) {
    p.stop.abort();
    await Promise.all(p.streams);
    await p.h.close();
  }
});

test('three engines, three loads: the metrics say so, and a metrics-driven choice follows them', async () => {
  const [full, queued, light] = pods;
  // One prompt of 57 blocks: 57 of 70 and growing (> 0.8), never past 64 (no preemption).
  load(full, 57, undefined, 100);
  for (let i = 0; i < 3; i++) load(queued, 1, undefined, 450); // one runs, two wait
  load(light, 2, 'qv', 450);
  await until(queued, (s) => s.running === 1 && s.waiting === 2);
  await until(light, (s) => s.running === 1);
  // The full engine's state is the shortest-lived (its cache has room for 100 more tokens):
  // it is read as soon as it is reached.
  await until(full, (s) => s.running === 1 && 1 - s.freeBlocks / s.totalBlocks >= KV_FULL);

  const view = await scrapeAll();
  const m = Object.fromEntries(view.map((p) => [p.name, p.m]));
  assert.deepEqual([m.queued.waitingQueueSize, m.queued.runningRequestsSize], [2, 1]);
  assert.deepEqual([m.full.waitingQueueSize, m.full.runningRequestsSize], [0, 1]);
  assert.ok(m.full.kvCacheUsagePercent >= KV_FULL, `full: KV use ${m.full.kvCacheUsagePercent}`);
  assert.equal(m.full.cacheNumBlocks, 70);
  assert.deepEqual([m.light.waitingQueueSize, m.light.activeModels, m.light.maxActiveModels], [0, ['qv'], 2]);
  assert.ok(m.light.kvCacheUsagePercent < 0.1);
  assert.equal(choose(view), 'light', 'the base model: not the queue, not the full cache');

  // The queue drains: now the queued engine is the idlest of all. (The full engine may have
  // finished its one request by now, so the adapter choices are between the other two.)
  await unload(queued);
  const idle = (await scrapeAll()).filter((p) => p.name !== 'full');
  const q = idle.find((p) => p.name === 'queued')!.m;
  assert.deepEqual(idle.find((p) => p.name === 'light')!.m.activeModels, ['qv'], 'qv still runs on light');
  assert.deepEqual(
    [q.waitingQueueSize, q.runningRequestsSize, q.kvCacheUsagePercent, q.activeModels],
    [0, 0, 0, []],
  );
  assert.equal(choose(idle, 'qv'), 'light', 'qv: where qv already runs, though another engine is emptier');
  assert.equal(choose(idle, 'dyn'), 'queued', 'dyn runs nowhere: the emptiest engine with a free slot');
});
