import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sequence } from './request-state.js';
import { buildStepPlan } from './step-plan.js';

const sampling = {
  temperature: 0.5,
  topK: 40,
  topP: 0.9,
  repetitionPenalty: 1.1,
  presencePenalty: 0,
  frequencyPenalty: 0,
  seed: 7n,
  topLogprobs: 2,
};

test('CSR layout: a prefill chunk and a decode token in one plan', () => {
  const a = new Sequence('a', 0, [1, 2, 3, 4, 5, 6], { ...sampling, repetitionPenalty: 1 }, 0);
  a.blockTable = [9, 4];
  const b = new Sequence('b', 0, [7, 8, 9], sampling, 0, 0, '', [10, 11]);
  b.blockTable = [2, 3];
  b.numComputed = 4;
  const plan = buildStepPlan(
    {
      items: [
        { seq: a, start: 2, numNew: 3, sample: false },
        { seq: b, start: 4, numNew: 1, sample: true },
      ],
      copies: [{ src: 1, dst: 3 }],
      numTokens: 4,
    },
    4,
  );
  assert.deepEqual([...plan.tokens], [3, 4, 5, 11]);
  assert.deepEqual([...plan.positions], [2, 3, 4, 4]);
  assert.deepEqual([...plan.seqTokenOffsets], [0, 3, 4]);
  assert.deepEqual([...plan.blockTableOffsets], [0, 2, 4]);
  assert.deepEqual([...plan.blockTables], [9, 4, 2, 3]);
  assert.deepEqual([...(plan.blockCopies ?? [])], [1, 3]);
  assert.deepEqual([...plan.sample], [0, 1]);
  assert.deepEqual([...plan.sampleCounters], [0, 2]);
  assert.deepEqual([...plan.seeds], [7n, 7n]);
  assert.deepEqual([...plan.topLogprobs], [-1, 2]);
  // Only b has a penalty: its history is prompt + generated up to the step's last token.
  assert.deepEqual([...plan.penaltyTokenOffsets], [0, 0, 5]);
  assert.deepEqual([...plan.penaltyTokens], [7, 8, 9, 10, 11]);
  assert.deepEqual([...plan.allowedMaskRows], [-1, -1]);
});
