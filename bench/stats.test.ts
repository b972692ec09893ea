import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  commonPrefixLength,
  fmt,
  median,
  pairedRooflinePercent,
  range,
  ratio,
  medianInterval,
} from './stats.js';

test('median of odd and even counts, unsorted input untouched', () => {
  const values = [5, 1, 3];
  assert.equal(median(values), 3);
  assert.deepEqual(values, [5, 1, 3]);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([7]), 7);
  assert.throws(() => median([]), RangeError);
});

test('range, ratio and formatting', () => {
  assert.deepEqual(range([3, -1, 8]), { min: -1, max: 8 });
  assert.equal(ratio(6, 3), 2);
  assert.ok(Number.isNaN(ratio(undefined, 3)));
  assert.ok(Number.isNaN(ratio(1, 0)));
  assert.equal(fmt(1.234), '1.2');
  assert.equal(fmt(NaN), '—');
  assert.equal(fmt(undefined), '—');
});

test('commonPrefixLength', () => {
  assert.equal(commonPrefixLength([1, 2, 3], [1, 2, 4]), 2);
  assert.equal(commonPrefixLength([1, 2], [1, 2, 3]), 2);
  assert.equal(commonPrefixLength([], [1]), 0);
  assert.equal(commonPrefixLength([9], [1]), 0);
});

test('pairedRooflinePercent: each run against its own probe, then the median', () => {
  // The 3B Q4_0 row of one size suite (1641.4 MB per token): runs in slow and fast minutes.
  const runs = [25.6, 24.2, 32.7, 35.8, 37.8];
  const probes = [50.0, 46.8, 48.4, 75.9, 80.7];
  const bytes = 1641.4e6;
  // Paired: 84, 85, 111 (a fast run after a slow probe), 77, 77 → median 84%.
  assert.equal(Math.round(pairedRooflinePercent(runs, probes, bytes)), 84);
  // Median decode (32.7) over median bandwidth (50.0) would read 107%.
  assert.equal(Math.round(((32.7 * bytes) / (median(probes) * 1e9)) * 100), 107);
  assert.throws(() => pairedRooflinePercent([1, 2], [1], 1e9), /2 runs but 1 probes/);
});

test('medianInterval: order statistics whose binomial tails hold the level', () => {
  const ranks = (n: number) => {
    const iv = medianInterval(
      Array.from({ length: n }, (_, i) => i + 1),
      0.95,
    );
    return iv && [iv.lo, iv.hi];
  };
  // The published 95% ranks: n = 6 → 1st and 6th (1/64 per tail), n = 100 → 40th and 61st.
  assert.deepEqual(ranks(6), [1, 6]);
  assert.deepEqual(ranks(100), [40, 61]);
  assert.equal(ranks(5), null, 'five values cannot bound the median at 95% (1/32 per tail)');
  // Unsorted input, any values.
  assert.deepEqual(medianInterval([5, -1, 3, 9, 0, 2, 7]), { lo: -1, hi: 9 });
});
