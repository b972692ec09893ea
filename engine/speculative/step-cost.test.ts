import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allocateDrafts, stepCost } from './adaptive-k.js';
import { bucketOf, StepCostEstimate } from './step-cost.js';

const prior = { perToken: 0.1, knee: 48 };
const sum = (k: readonly number[]) => k.reduce((a, b) => a + b, 0);

test('the prior until a batch size has timed steps of different sizes, then the line through them', () => {
  const e = new StepCostEstimate(prior);
  for (let i = 0; i < 20; i++) e.record(1, 1, 10);
  assert.equal(e.curve(1)(6), stepCost(prior, 6), 'one size only: no slope');
  // 10 ms for one token, 2 ms per extra token.
  for (let i = 0; i < 40; i++) {
    const t = 1 + (i % 6);
    e.record(1, t, 10 + 2 * (t - 1));
  }
  const c = e.curve(1);
  assert.ok(Math.abs(c(6) / c(1) - 2) < 1e-6, `c(6)/c(1) = ${c(6) / c(1)}`);
  e.record(1, 3, Number.NaN);
  e.record(1, 0, 5);
  assert.ok(Math.abs(e.curve(1)(6) / e.curve(1)(1) - 2) < 1e-6);
  assert.equal(e.curve(16)(32), stepCost(prior, 32), 'another batch size still has the prior');
  assert.deepEqual([1, 2, 3, 4, 15, 16, 31, 32].map(bucketOf), [0, 1, 1, 2, 3, 4, 4, 5]);
});

test('the line follows the machine: steps that got cheaper per token lower the slope', () => {
  const e = new StepCostEstimate(prior);
  for (let i = 0; i < 60; i++) e.record(1, 1 + (i % 6), 10 + 2 * (i % 6));
  const before = e.curve(1)(6) / e.curve(1)(1);
  for (let i = 0; i < 400; i++) e.record(1, 1 + (i % 6), 10 + 0.2 * (i % 6));
  const after = e.curve(1)(6) / e.curve(1)(1);
  assert.ok(after - 1 < (before - 1) / 5, `${before} -> ${after}`);
});

test('a line steeper than proportional charges each token its average', () => {
  const e = new StepCostEstimate(prior);
  // 16 → 80 ms, 32 → 200 ms: the line crosses zero at 10.7 tokens.
  for (let i = 0; i < 20; i++) e.record(16, i % 2 ? 32 : 16, i % 2 ? 200 : 80);
  const c = e.curve(16);
  assert.ok(Math.abs(c(32) / c(16) - 2) < 1e-9, `${c(32) / c(16)}`);
  const cands = Array.from({ length: 16 }, () => ({ alpha: 0.99, max: 5 }));
  assert.equal(sum(allocateDrafts(cands, 16, 16, c, 0.2)), 0);
});

/**
 * Step times of the default model measured on the 2-core development machine (native step,
 * context 160, docs/speculative.md): one sequence of 1..6 tokens, 16 sequences of 1 + k
 * tokens each.
 */
const ONE_SEQ_MS = [10.1, 13.1, 16.2, 16.5, 20.4, 24.0];
const SIXTEEN_SEQS_MS = [85.5, 163.4, 240.7, 303.9, 390.0, 461.6];

test('a batch of 16 is charged on its own measured curve: break-even drafts are not sent, a single stream keeps its drafts', () => {
  const e = new StepCostEstimate(prior);
  for (let i = 0; i < 300; i++) e.record(1, 1 + (i % 6), ONE_SEQ_MS[i % 6]);
  for (let i = 0; i < 60; i++) e.record(16, 16 * (1 + (i % 4)), SIXTEEN_SEQS_MS[i % 4]);
  const batch = (alpha: number, curve = e.curve(16), margin?: number) =>
    sum(
      allocateDrafts(
        Array.from({ length: 16 }, () => ({ alpha, max: 5 })),
        16,
        16,
        curve,
        0.2,
        0,
        margin,
      ),
    );
  // A verify token at 16 sequences costs ~0.9 of a sequence's own token: a grounded rewrite
  // (0.88 of its draft tokens accepted at 16 in bench:spec) only breaks even, so none is sent.
  assert.equal(batch(0.88), 0);
  assert.ok(batch(0.995) >= 32, 'near-certain drafts still pay');
  // The old rule, one line for every batch size learned mostly on single-sequence steps
  // (whose fixed part, reading the weights once, is large) and no margin, sent them.
  assert.ok(batch(0.88, e.curve(1), 0) >= 16, 'the single-sequence line sends drafts at 16');
  // One sequence: a draft token costs about a quarter of a step; the rewrite keeps k = 5.
  assert.equal(allocateDrafts([{ alpha: 0.88, max: 5 }], 1, 1, e.curve(1), 0.2)[0], 5);
  assert.equal(allocateDrafts([{ alpha: 0.15, max: 5 }], 1, 1, e.curve(1), 0.2)[0], 0, 'chat-like: none');
});

test('a batch size that stops drafting keeps the slope it measured, not the prior', () => {
  const e = new StepCostEstimate(prior);
  // 16 sequences: a verify token costs what a sequence's own token does (16 → 90 ms, 32 → 180).
  for (let i = 0; i < 40; i++) e.record(16, i % 2 ? 32 : 16, i % 2 ? 180 : 90);
  const learned = e.curve(16);
  const cands = Array.from({ length: 16 }, () => ({ alpha: 0.9, max: 5 }));
  assert.equal(sum(allocateDrafts(cands, 16, 16, learned, 0.2)), 0);
  // Then no drafts for a long while: every step has 16 tokens and the decayed sizes all look alike.
  for (let i = 0; i < 1000; i++) e.record(16, 16, 90);
  const later = e.curve(16);
  assert.ok(Math.abs(later(32) / later(16) - 2) < 0.05, `c(32)/c(16) = ${later(32) / later(16)}`);
  assert.equal(sum(allocateDrafts(cands, 16, 16, later, 0.2)), 0, 'still none sent');
  // The prior, which the earlier rule fell back to, sends them.
  assert.ok(sum(allocateDrafts(cands, 16, 16, prior, 0.2)) > 0);
});
