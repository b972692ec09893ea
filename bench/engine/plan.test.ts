import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BlockPool, greedyPlan } from './plan.js';

test('greedyPlan lays out a prefill chunk and a decode token in CSR form', () => {
  const plan = greedyPlan(
    [
      { tokens: [10, 11, 12, 13, 14], startPosition: 0, blocks: [7, 8, 9], sample: false },
      { tokens: [42], startPosition: 4, blocks: [3, 5], sample: true },
    ],
    4,
  );
  assert.deepEqual([...plan.tokens], [10, 11, 12, 13, 14, 42]);
  assert.deepEqual([...plan.positions], [0, 1, 2, 3, 4, 4]);
  assert.deepEqual([...plan.seqTokenOffsets], [0, 5, 6]);
  // Only the blocks that cover positions 0..last are passed: 5 positions of 4 → 2 blocks each.
  assert.deepEqual([...plan.blockTableOffsets], [0, 2, 4]);
  assert.deepEqual([...plan.blockTables], [7, 8, 3, 5]);
  assert.deepEqual([...plan.sample], [0, 1]);
  assert.deepEqual([...plan.temperature], [0, 0]);
  assert.deepEqual([...plan.topP], [1, 1]);
  assert.deepEqual([...plan.repetitionPenalty], [1, 1]);
  assert.deepEqual([...plan.allowedMaskRows], [-1, -1]);
  assert.deepEqual([...plan.topLogprobs], [-1, -1]);
  assert.deepEqual([...plan.penaltyTokenOffsets], [0, 0, 0]);
  assert.equal(plan.seeds.length, 2);
  assert.equal(plan.returnLogits, 'none');
});

test('greedyPlan rejects empty steps, empty chunks and missing blocks', () => {
  assert.throws(() => greedyPlan([], 16), /at least one sequence/);
  assert.throws(
    () => greedyPlan([{ tokens: [], startPosition: 0, blocks: [0], sample: true }], 16),
    /no tokens/,
  );
  assert.throws(
    () => greedyPlan([{ tokens: [1], startPosition: 16, blocks: [0], sample: true }], 16),
    /reaches position 16 but has 1 blocks of 16/,
  );
});

test('BlockPool hands out distinct ids and refuses to overcommit', () => {
  const pool = new BlockPool(5);
  assert.deepEqual(pool.take(2), [0, 1]);
  assert.deepEqual(pool.take(3), [2, 3, 4]);
  assert.throws(() => pool.take(1), /asked for 1 blocks with 0 of 5 left/);
  pool.reset();
  assert.deepEqual(pool.take(1), [0]);
});

test('greedyPlan gives each block its pages when the model keeps layer groups apart', () => {
  const plan = greedyPlan([{ tokens: [1, 2, 3], startPosition: 15, blocks: [4, 2], sample: true }], 16, 3);
  // Block 4 is pages 12..14, block 2 pages 6..8 (Gemma 3's layout: one page per group page).
  assert.deepEqual(Array.from(plan.blockTables), [12, 13, 14, 6, 7, 8]);
  assert.deepEqual(Array.from(plan.blockTableOffsets), [0, 6]);
});
