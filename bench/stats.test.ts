import { test } from 'node:test';
import assert from 'node:assert/strict';
import { commonPrefixLength, fmt, median, range, ratio } from './stats.js';

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
