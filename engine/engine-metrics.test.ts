import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BUCKETS, Histogram, RecentAverage } from './engine-metrics.js';

test('histograms are cumulative with a +Inf bucket (MindIE TTFT buckets)', () => {
  const h = new Histogram(BUCKETS.ttft);
  for (const v of [0.0005, 0.003, 0.003, 0.2, 42]) h.observe(v);
  const s = h.snapshot();
  assert.equal(s.counts.length, BUCKETS.ttft.length + 1);
  assert.equal(s.counts[0], 1); // <= 0.001
  assert.equal(s.counts[1], 3); // <= 0.005
  assert.equal(s.counts[BUCKETS.ttft.indexOf(0.25)], 4);
  assert.equal(s.counts[s.counts.length - 1], 5);
  assert.equal(s.count, 5);
  assert.ok(Math.abs(s.sum - 42.2065) < 1e-9);
});

test('recent averages keep only the latest N values', () => {
  const r = new RecentAverage(3);
  assert.equal(r.mean, 0);
  for (const v of [100, 1, 2, 3]) r.add(v);
  assert.equal(r.mean, 2);
});
