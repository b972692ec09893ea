import assert from 'node:assert/strict';
import { test } from 'node:test';
import { failoverFromFlags } from './failover-flags.js';

const usage = (m: string): Error => new Error(m);

test('retries are on by default; --retry off turns them off', () => {
  assert.deepEqual(failoverFromFlags({}, usage), { retry: true, health: {} });
  assert.equal(failoverFromFlags({ retry: 'off' }, usage).retry, false);
  assert.throws(() => failoverFromFlags({ retry: 'no' }, usage), /--retry: must be on or off, got 'no'/);
});

test('the health timing flags are whole milliseconds in [50, 3600000]', () => {
  assert.deepEqual(
    failoverFromFlags(
      { 'health-interval-ms': '250', 'health-timeout-ms': '2500', 'stall-timeout-ms': '30000' },
      usage,
    ).health,
    { intervalMs: 250, timeoutMs: 2500, stallMs: 30000 },
  );
  assert.throws(
    () => failoverFromFlags({ 'health-timeout-ms': '10' }, usage),
    /--health-timeout-ms: must be an integer in \[50, 3600000\], got '10'/,
  );
  assert.throws(() => failoverFromFlags({ 'stall-timeout-ms': '1.5' }, usage), /--stall-timeout-ms/);
});
