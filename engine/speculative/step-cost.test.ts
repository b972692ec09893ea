import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allocateDrafts } from './adaptive-k.js';
import { StepCostEstimate } from './step-cost.js';

const prior = { perToken: 0.1, knee: 48 };

test('the prior until steps of different sizes were timed, then the line through them', () => {
  const e = new StepCostEstimate(prior);
  for (let i = 0; i < 20; i++) e.record(1, 10);
  assert.deepEqual(e.cost, prior, 'one size only: no slope');
  // 10 ms for one token, 2 ms per extra token: perToken = 0.2.
  for (let i = 0; i < 40; i++) {
    const t = 1 + (i % 6);
    e.record(t, 10 + 2 * (t - 1));
  }
  assert.ok(Math.abs(e.cost.perToken - 0.2) < 1e-6, `perToken ${e.cost.perToken}`);
  e.record(500, 1e6); // a long prefill is outside the range the choice is made in
  e.record(3, Number.NaN);
  assert.ok(Math.abs(e.cost.perToken - 0.2) < 1e-6);
});

test('the line follows the machine: steps that got cheaper per token lower perToken', () => {
  const e = new StepCostEstimate(prior);
  for (let i = 0; i < 60; i++) e.record(1 + (i % 6), 10 + 2 * (i % 6));
  const before = e.cost.perToken;
  for (let i = 0; i < 400; i++) e.record(1 + (i % 6), 10 + 0.2 * (i % 6));
  assert.ok(e.cost.perToken < before / 5, `${before} -> ${e.cost.perToken}`);
});

test('back-off: on steps that cost a fifth per token, low-acceptance chat drafts nothing and a batch of 16 drafts only near-certain tokens', () => {
  const e = new StepCostEstimate(prior);
  for (let i = 0; i < 60; i++) e.record(1 + (i % 6), 10 + 2 * (i % 6));
  const cost = e.cost;
  const one = (alpha: number) => allocateDrafts([{ alpha, max: 5 }], 1, 1, cost, 0.2)[0];
  assert.equal(one(0.15), 0, 'chat-like acceptance: no drafts');
  assert.ok(one(0.9) >= 4, 'a grounded rewrite keeps its drafts');
  const batch = (alpha: number) =>
    allocateDrafts(
      Array.from({ length: 16 }, () => ({ alpha, max: 5 })),
      16,
      16,
      cost,
      0.2,
    ).reduce((a, b) => a + b, 0);
  assert.equal(batch(0.5), 0, 'compute-bound at 16: half-accepted drafts do not pay');
  assert.ok(batch(0.95) > 0, 'near-certain ones still do');
  // With the old optimistic cost (a token nearly free) the same chat batch drafted.
  assert.ok(
    allocateDrafts(
      Array.from({ length: 16 }, () => ({ alpha: 0.5, max: 5 })),
      16,
      16,
      { perToken: 0.03, knee: 48 },
      0.2,
    ).some((k) => k > 0),
  );
});
