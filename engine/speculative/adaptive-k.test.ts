import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Acceptance, allocateDrafts, allocatePacedDrafts, stepCost } from './adaptive-k.js';

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

test('with no queue, drafts must raise the pace of the whole batch: none while one sequence cannot draft', () => {
  // Grounded rewriting at 16 sequences: 8 copy their prompt (a proposal, acceptance 0.9),
  // 8 paraphrase it (no proposal). The step is weight-bound enough that the old rule sends
  // the copies drafts; they finish early, the paraphrases set the batch's end, and every
  // step until then was longer.
  const flat = { perToken: 0.03, knee: 64 };
  const copies = Array.from({ length: 8 }, () => ({ alpha: 0.9, max: 5, base: 1 }));
  const paraphrases = Array.from({ length: 8 }, () => ({ alpha: 0.9, max: 0, base: 1 }));
  const mixed = [...copies, ...paraphrases];
  assert.ok(allocateDrafts(mixed, 16, 16, flat, 0.2).reduce((a, b) => a + b, 0) > 0);
  assert.deepEqual(
    allocatePacedDrafts(mixed, 0, 16, flat, 0.2),
    mixed.map(() => 0),
  );
  // A prompt in prefill in the same step (a pacer) stops them too.
  assert.deepEqual(
    allocatePacedDrafts(copies, 1, 16, flat, 0.2),
    copies.map(() => 0),
  );
  // Every sequence copies: the batch's pace rises, every one gets the same drafts.
  const k = allocatePacedDrafts(copies, 0, 8, flat, 0.2);
  assert.ok(k[0] > 0 && k.every((n) => n === k[0]), `k = ${k}`);
});

test('a sequence past the pace keeps only the drafts that reach it', () => {
  const flat = { perToken: 0.02, knee: 64 };
  const cands = [
    { alpha: 0.95, max: 8, base: 1 },
    { alpha: 0.6, max: 3, base: 1 },
  ];
  const [hi, lo] = allocatePacedDrafts(cands, 0, 2, flat, 0.2);
  assert.ok(lo > 0 && hi > 0, `k = ${hi}, ${lo}`);
  // 0.95 reaches what 0.6 makes with `lo` drafts in fewer drafts.
  assert.ok(hi <= lo, `k = ${hi}, ${lo}`);
  // A compute-bound step (each token a whole token's cost): no level pays.
  assert.deepEqual(allocatePacedDrafts(cands, 0, 2, { perToken: 1, knee: 1 }, 0.2), [0, 0]);
});

test("jump-forward tokens count in a sequence's pace: drafts must raise it relative to them", () => {
  // 12 sequences decode, 4 also compute 2 forced tokens; drafts accepted 80% of the time; the
  // line JSON extraction learned at 16 sequences (a draft token 0.42 of a 1-token step).
  const line = { perToken: 0.42, knee: 1000 };
  const cands = Array.from({ length: 16 }, (_, i) => ({ alpha: 0.8, max: 5, base: i < 12 ? 1 : 3 }));
  assert.deepEqual(
    allocatePacedDrafts(cands, 0, 24, line, 0.2),
    cands.map(() => 0),
  );
});
