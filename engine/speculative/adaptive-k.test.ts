import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptance, allocateDrafts, stepCost } from './adaptive-k.js';

const cost = { perToken: 0.03, knee: 32 };

test('a step costs little per token until the knee, then grows in proportion', () => {
  assert.equal(stepCost(cost, 1), 1);
  assert.ok(Math.abs(stepCost(cost, 11) - 1.3) < 1e-9);
  assert.ok(Math.abs(stepCost(cost, 64) / stepCost(cost, 32) - 2) < 1e-9);
});

test('a single stream with good acceptance gets its whole proposal', () => {
  assert.deepEqual(allocateDrafts([{ alpha: 0.9, max: 5 }], 1, 1, cost, 0.2), [5]);
});

test('low acceptance gets fewer draft tokens, and none below the floor', () => {
  const [k] = allocateDrafts([{ alpha: 0.3, max: 5 }], 1, 1, cost, 0.2);
  assert.ok(k >= 1 && k <= 3, `k = ${k}`);
  assert.deepEqual(allocateDrafts([{ alpha: 0.15, max: 5 }], 1, 1, cost, 0.2), [0]);
});

test('a compute-bound batch gets fewer drafts than a small one, the best sequences first', () => {
  const cands = Array.from({ length: 16 }, (_, i) => ({ alpha: i < 8 ? 0.9 : 0.5, max: 5 }));
  const small = allocateDrafts(cands, 16, 16, cost, 0.2).reduce((a, b) => a + b, 0);
  const big = allocateDrafts(cands, 200, 200, cost, 0.2);
  assert.ok(big.reduce((a, b) => a + b, 0) < small, `drafts at 200 tokens: ${big}`);
  assert.ok(big.slice(0, 8).reduce((a, b) => a + b, 0) >= big.slice(8).reduce((a, b) => a + b, 0));
  assert.deepEqual(
    allocateDrafts(cands, 4000, 4000, cost, 0.2),
    cands.map(() => 0),
  );
});

test('acceptance follows recent verify steps', () => {
  const a = new Acceptance(0.6);
  a.record(4, 4);
  const high = a.alpha;
  assert.ok(high > 0.6);
  let before = a.alpha;
  for (let i = 0; i < 4; i++) {
    a.record(4, 0);
    assert.ok(a.alpha < before, 'each refusal lowers it');
    before = a.alpha;
  }
  assert.ok(a.alpha < 0.5 && a.alpha < high);
  a.record(0, 0);
  assert.ok(a.alpha < 0.5, 'a step without drafts changes nothing');
});
