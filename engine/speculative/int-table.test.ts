import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IntTable } from './int-table.js';

test('the table returns the value last set per key, across growth, for any int32 key', () => {
  const t = new IntTable(4);
  const want = new Map<number, number>();
  let seed = 99;
  const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) | 0);
  for (let i = 0; i < 20_000; i++) {
    // Keys from a small range repeat (overwrites); the rest span all of int32, negatives included.
    const key = i % 3 === 0 ? rand() % 500 : rand();
    const value = (i % 1000) + 1;
    t.set(key, value);
    want.set(key, value);
  }
  for (const [key, value] of want) assert.equal(t.get(key), value);
  for (const key of [0, -1, 2 ** 31 - 1, -(2 ** 31)]) assert.equal(t.get(key), want.get(key) ?? 0);
});

test('an absent key reads 0, including keys that share a slot with present ones', () => {
  const t = new IntTable(16);
  // Keys one apart in the top bits of their Fibonacci product fill neighbouring slots.
  for (let k = 0; k < 8; k++) t.set(k * 1024, k + 1);
  for (let k = 0; k < 8; k++) assert.equal(t.get(k * 1024), k + 1);
  assert.equal(t.get(8 * 1024), 0);
  assert.equal(t.get(7), 0);
});

test('values below 1 are refused (0 marks an empty slot)', () => {
  const t = new IntTable();
  assert.throws(() => t.set(5, 0), /at least 1, got 0/);
  assert.throws(() => t.set(5, -3), /at least 1/);
  assert.equal(t.get(5), 0);
});
