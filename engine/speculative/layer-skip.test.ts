/**
 * The layer-skip proposer's draft steps without the model: a scripted native step records
 * each plan. Checked: one native step per draft position, batched across the sequences; fed
 * positions start at each sequence's computed length (verified K/V is only read); its own
 * pages first, scratch pages past its table, k cut where scratch runs out; the exit layer
 * and each sequence's LoRA slot in every plan.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ContextHandle, StepPlan, StepResult } from '../../native/native.js';
import { Sequence, type SequenceSampling } from '../sequence.js';
import { LayerSkipProposer } from './layer-skip.js';
import { GREEDY_SAMPLING } from '../testing/greedy-sampling.js';

const sampling: SequenceSampling = { ...GREEDY_SAMPLING, topLogprobs: -1 };

function seq(id: string, tokens: number, computed: number, table: number[], slot = -1): Sequence {
  const s = new Sequence({
    requestId: id,
    prompt: Array.from({ length: tokens }, (_, i) => 100 + i),
    sampling,
    arrival: 0,
  });
  s.numComputed = computed;
  s.blockTable = table;
  s.adapterSlot = slot;
  return s;
}

function proposer(scratch: number[]) {
  const plans: StepPlan[] = [];
  let next = 1000;
  const run = async (_ctx: ContextHandle, plan: StepPlan): Promise<StepResult> => {
    plans.push(plan);
    const S = plan.sample.length;
    return {
      tokens: Int32Array.from({ length: S }, () => next++),
      logprobs: new Float32Array(S),
      topLogprobsStride: 0,
      topLogprobIds: new Int32Array(0),
      topLogprobValues: new Float32Array(0),
    };
  };
  const p = new LayerSkipProposer(
    {} as ContextHandle,
    {
      exitLayer: 7,
      blockSize: 4,
      pagesPerBlock: 1,
      scratchPages: scratch,
      maxSeqs: 8,
      maxBatchTokens: 64,
      draftStepCost: 0.4,
    },
    run,
  );
  return { p, plans };
}

const rowsOf = (plan: StepPlan) =>
  Array.from({ length: plan.sample.length }, (_, s) => ({
    tokens: Array.from(plan.tokens.subarray(plan.seqTokenOffsets[s], plan.seqTokenOffsets[s + 1])),
    positions: Array.from(plan.positions.subarray(plan.seqTokenOffsets[s], plan.seqTokenOffsets[s + 1])),
    pages: Array.from(plan.blockTables.subarray(plan.blockTableOffsets[s], plan.blockTableOffsets[s + 1])),
  }));

test('k draft steps batched across sequences, fed from the computed length, own pages then scratch', async () => {
  const { p, plans } = proposer([90, 91]);
  // a: 6 tokens, 5 computed, blocks 0-1 (positions 0-7): drafts to position 5+3-1 = 7, no scratch.
  const a = seq('a', 6, 5, [10, 11], 2);
  // b: 8 tokens, 7 computed, blocks 0-1 (positions 0-7): positions 8.. need a scratch block.
  const b = seq('b', 8, 7, [20, 21]);
  const got = await p.propose([
    { seq: a, k: 3 },
    { seq: b, k: 2 },
  ]);
  assert.equal(plans.length, 3, 'one native step per draft position');
  assert.deepEqual(got, [
    [1000, 1002, 1004],
    [1001, 1003],
  ]);
  const first = rowsOf(plans[0]);
  assert.deepEqual(first[0], { tokens: [105], positions: [5], pages: [10, 11] });
  assert.deepEqual(first[1], { tokens: [107], positions: [7], pages: [20, 21] });
  const second = rowsOf(plans[1]);
  assert.deepEqual(second[0], { tokens: [1000], positions: [6], pages: [10, 11] });
  assert.deepEqual(second[1], { tokens: [1001], positions: [8], pages: [20, 21, 90] });
  assert.deepEqual(rowsOf(plans[2]), [{ tokens: [1002], positions: [7], pages: [10, 11] }]);
  for (const plan of plans) {
    assert.equal(plan.exitLayer, 7);
    assert.ok(
      plan.temperature.every((t) => t === 0),
      'greedy',
    );
    assert.equal(plan.blockCopies, undefined, 'nothing is copied');
  }
  assert.deepEqual(Array.from(plans[0].adapterSlots!), [2, -1]);
});

test('pending tokens (a jump-forward run) are fed together; k is cut where scratch runs out', async () => {
  const { p, plans } = proposer([90]);
  // positions 7..9 pending; the block of 8..11 is scratch; k = 4 would feed position 12: cut to 3
  const a = seq('a', 10, 7, [10, 11]);
  const b = seq('b', 8, 7, [20, 21]); // no scratch left: positions stop at 7, k cut to 1
  const got = await p.propose([
    { seq: a, k: 4 },
    { seq: b, k: 4 },
  ]);
  assert.equal(got[0].length, 3);
  assert.equal(got[1].length, 1);
  const first = rowsOf(plans[0]);
  assert.deepEqual(first[0], { tokens: [107, 108, 109], positions: [7, 8, 9], pages: [10, 11, 90] });
  assert.deepEqual(first[1].pages, [20, 21]);
  assert.ok(
    plans.every((plan) => rowsOf(plan).every((r, s) => r.positions.every((x) => x >= [7, 7][s]))),
    'no verified position is written',
  );
});

test('batches larger than a native step are drafted in groups', async () => {
  const { p, plans } = proposer([]);
  const seqs = Array.from({ length: 10 }, (_, i) => seq(`s${i}`, 2, 1, [i]));
  const got = await p.propose(seqs.map((s) => ({ seq: s, k: 2 })));
  assert.ok(got.every((g) => g.length === 2));
  assert.deepEqual(
    plans.map((pl) => pl.sample.length),
    [8, 8, 2, 2],
  );
});
