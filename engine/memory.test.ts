import { test } from 'node:test';
import assert from 'node:assert/strict';
import { totalmem } from 'node:os';
import { checkMemoryFits, formatMemoryReport, machineMemoryBytes } from './memory.js';

const MIB = 2 ** 20;
const GIB = 2 ** 30;

test('the model plus the smallest KV pool must fit the machine', () => {
  const plan = { weightBytes: 3 * GIB, kvBytes: GIB, minKvBytes: 300 * MIB, machineBytes: 8 * GIB };
  assert.doesNotThrow(() => checkMemoryFits(plan));
  assert.throws(
    () => checkMemoryFits({ ...plan, weightBytes: 7.9 * GIB }),
    (e: Error & { field?: string; code?: string }) =>
      e.code === 'INVALID_ARGUMENT' && e.field === 'model' && /smallest KV pool \(300 MiB/.test(e.message),
  );
});

test('a KV budget that does not fit beside the weights names the budget and the room left', () => {
  const plan = { weightBytes: 3 * GIB, kvBytes: 6 * GIB, minKvBytes: 300 * MIB, machineBytes: 8 * GIB };
  assert.throws(
    () => checkMemoryFits(plan),
    (e: Error & { field?: string }) =>
      e.field === 'kvCacheBytes' && /npuMemSize\) to at most 5120 MiB/.test(e.message),
  );
  assert.doesNotThrow(() => checkMemoryFits({ ...plan, kvBytes: 5 * GIB }));
});

test('machine memory is the cgroup limit when lower, physical memory otherwise', () => {
  assert.equal(
    machineMemoryBytes(() => 'max\n'),
    totalmem(),
  );
  assert.equal(
    machineMemoryBytes(() => undefined),
    totalmem(),
  );
  assert.equal(
    machineMemoryBytes((p) => (p.endsWith('memory.max') ? `${GIB}\n` : undefined)),
    Math.min(GIB, totalmem()),
  );
  // cgroup v1 reports "no limit" as a huge number: physical memory stays the bound.
  assert.equal(
    machineMemoryBytes((p) => (p.endsWith('limit_in_bytes') ? '9223372036854771712' : undefined)),
    totalmem(),
  );
});

test('the start-up memory line', () => {
  assert.equal(
    formatMemoryReport({
      weightBytes: 585 * MIB,
      kvBytes: 1024 * MIB,
      kvBlocks: 256,
      blockSize: 128,
      rssBytes: 700 * MIB,
      machineBytes: 24 * GIB,
    }),
    'memory: weights 585 MiB, KV pool 1024 MiB (256 blocks × 128 tokens), resident 700 MiB after load, machine 24576 MiB',
  );
});
