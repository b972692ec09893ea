/**
 * The draft-model proposer's bookkeeping without a model: a scripted native step whose
 * "draft model" proposes token (position + 1000), so every plan can be checked. Checked: the
 * first proposal feeds the whole prompt (in chunks of maxBatchTokens) then its draft tokens;
 * after a verify step only what changed is fed again (refused draft tokens rolled back by
 * comparing with the verified tokens); sequences are batched; pages come back on release and
 * are taken from sequences not asked when the pool runs short.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ContextHandle, StepPlan, StepResult } from '../../native/native.js';
import { Sequence, type SequenceSampling } from '../sequence.js';
import { DraftModelProposer } from './draft-model.js';
import { GREEDY_SAMPLING } from '../testing/greedy-sampling.js';

const sampling: SequenceSampling = { ...GREEDY_SAMPLING, topLogprobs: -1 };

function seq(id: string, tokens: readonly number[]): Sequence {
  const s = new Sequence({ requestId: id, prompt: [...tokens], sampling, arrival: 0 });
  s.numComputed = tokens.length - 1;
  return s;
}

function setup(pages = 16, maxBatchTokens = 64) {
  const plans: StepPlan[] = [];
  const run = async (_ctx: ContextHandle, plan: StepPlan): Promise<StepResult> => {
    plans.push(plan);
    const S = plan.sample.length;
    // The last fed position of each row, + 1001: the "model" proposes its next position's id.
    const tokens = Int32Array.from(
      { length: S },
      (_, s) => plan.positions[plan.seqTokenOffsets[s + 1] - 1] + 1001,
    );
    return {
      tokens,
      logprobs: new Float32Array(S),
      topLogprobsStride: 0,
      topLogprobIds: new Int32Array(0),
      topLogprobValues: new Float32Array(0),
    };
  };
  const p = new DraftModelProposer(
    {} as ContextHandle,
    { blockSize: 4, pagesPerBlock: 1, pages, maxSeqs: 8, maxBatchTokens, draftStepCost: 0.3 },
    () => {},
    run,
  );
  return { p, plans };
}

const fed = (plan: StepPlan, s: number) => ({
  tokens: Array.from(plan.tokens.subarray(plan.seqTokenOffsets[s], plan.seqTokenOffsets[s + 1])),
  from: plan.positions[plan.seqTokenOffsets[s]],
});

test('the prompt is fed once, in chunks; then one draft token per step; after a verify step only the new tokens', async () => {
  const { p, plans } = setup(16, 4);
  const a = seq('a', [1, 2, 3, 4, 5, 6]);
  assert.deepEqual(await p.propose([{ seq: a, k: 3 }]), [[1006, 1007, 1008]]);
  assert.deepEqual(
    plans.map((pl) => fed(pl, 0)),
    [
      { tokens: [1, 2, 3, 4], from: 0 },
      { tokens: [5, 6], from: 4 },
      { tokens: [1006], from: 6 },
      { tokens: [1007], from: 7 },
    ],
  );
  assert.equal(p.usedPages, 2, 'positions 0..7');
  // The verify step accepted 1006, refused 1007 and sampled 77 instead.
  a.tokens.push(1006, 77);
  a.numComputed = 7;
  plans.length = 0;
  await p.propose([{ seq: a, k: 2 }]);
  assert.deepEqual(fed(plans[0], 0), { tokens: [77], from: 7 }, '1006 is kept, 1007 rolled back');
  assert.equal(plans.length, 2);
  // Everything accepted: the last draft token (never fed) and the bonus token are fed.
  a.tokens.push(1008, 1009, 55);
  a.numComputed = 10;
  plans.length = 0;
  await p.propose([{ seq: a, k: 1 }]);
  assert.deepEqual(fed(plans[0], 0), { tokens: [1009, 55], from: 9 });
  p.release(a);
  assert.equal(p.usedPages, 0);
});

test('a sequence finished without release (cancelled) gives its pages back at the next proposal', async () => {
  const { p } = setup(16);
  const a = seq('a', [1, 2, 3]);
  await p.propose([{ seq: a, k: 2 }]);
  assert.equal(p.usedPages, 1);
  a.status = 'finished';
  await p.propose([]);
  assert.equal(p.usedPages, 0);
});

test('sequences are drafted together; a short pool takes pages from sequences not asked', async () => {
  const { p, plans } = setup(4);
  const a = seq('a', [1, 2, 3]);
  const b = seq('b', [4, 5, 6, 7, 8]);
  await p.propose([
    { seq: a, k: 2 },
    { seq: b, k: 2 },
  ]);
  assert.equal(plans[0].sample.length, 2, 'one native step for both');
  assert.equal(p.usedPages, 3); // a: positions 0..3 (1 block), b: 0..5 (2 blocks)
  const c = seq('c', [9, 9, 9, 9, 9, 9, 9]);
  const got = await p.propose([{ seq: c, k: 2 }]);
  assert.equal(got[0].length, 2, 'c got the pages of a');
  assert.equal(p.usedPages, 4); // b's 2 and c's 2 (positions 0..7)
  const d = seq(
    'd',
    Array.from({ length: 30 }, () => 1),
  );
  assert.deepEqual(
    await p.propose([
      { seq: d, k: 2 },
      { seq: c, k: 2 },
    ]),
    [[], [1007, 1008]],
    'd cannot fit: no draft',
  );
});
