/** The dashboard's rates and windowed quantiles from two reads of /metrics-json's `prism` object. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { histogramDelta, point, quantile, rate, type Histogram, type PrismMetrics } from './metrics.js';

const h = (counts: number[], sum = 0): Histogram => ({
  bounds: [0.1, 0.2, 0.5],
  counts,
  sum,
  count: counts[3],
});

test('quantile interpolates inside the bucket like histogram_quantile; empty is null', () => {
  // 10 observations: 4 in (0, 0.1], 4 in (0.1, 0.2], 2 in (0.2, 0.5].
  const x = h([4, 8, 10, 10]);
  assert.equal(quantile(x, 0.5), 0.125);
  assert.ok(Math.abs(quantile(x, 0.99)! - 0.485) < 1e-9);
  assert.equal(quantile(h([0, 0, 0, 0]), 0.5), null);
  assert.equal(quantile(h([0, 0, 0, 3]), 0.5), 0.5, '+Inf bucket reports the last bound');
  assert.deepEqual(histogramDelta(h([1, 1, 2, 2], 1), h([4, 8, 10, 10], 3)).counts, [3, 7, 8, 8]);
  assert.equal(rate(10, 30, 2), 10);
  assert.equal(rate(10, 30, 0), null);
});

function read(time: number, gen: number, ttft: number[], hits: number, queried: number): PrismMetrics {
  return {
    time,
    startedAt: 0,
    model: 'm',
    requests: {
      received: 0,
      succeeded: 0,
      failed: 0,
      running: 1,
      waiting: 2,
      preemptions: 0,
      maxBatchSize: 8,
    },
    tokens: { prompt: 0, generation: gen },
    kvBlocks: { total: 10, free: 7, used: 3, blockSize: 16 },
    prefixCache: { enabled: true, queriedTokens: queried, hitTokens: hits },
    latencySeconds: { ttft: h(ttft), interToken: h([0, 0, 0, 0]), e2e: h([0, 0, 0, 0]) },
    families: {},
    models: [],
  };
}

test('a point: rate over the last refresh, quantiles and hit rate over the window', () => {
  const w = read(100, 0, [1, 1, 1, 1], 0, 100);
  const prev = read(110, 50, [1, 1, 1, 1], 0, 100);
  const cur = read(112, 90, [1, 1, 3, 3], 64, 228);
  const p = point(prev, w, cur);
  assert.equal(p.outputTokensPerS, 20);
  assert.equal(p.ttftP50Ms, 350); // both new observations in (0.2, 0.5]
  assert.equal(p.prefixHitPct, 50);
  assert.equal(p.running, 1);
  assert.equal(p.kvUsed, 3);
  const first = point(null, null, cur);
  assert.equal(first.outputTokensPerS, null);
  assert.equal(first.ttftP50Ms, null, 'no window yet: nothing recent to show');
});
