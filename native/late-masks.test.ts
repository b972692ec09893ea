/**
 * Late masks: a plan with `lateMaskRows` starts its forward pass at once and samples only
 * after `supplyMasks` hands over the rows — with the same tokens and logprobs as the same
 * masks given in the plan. Plus the contract's edges: wrong lengths, null, no step waiting,
 * a refused plan, and a context disposed while its step waits.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  createContext,
  disposeContext,
  disposeModel,
  loadModel,
  modelInfo,
  step,
  supplyMasks,
  type ContextHandle,
  type ModelHandle,
  type StepPlan,
} from './native.js';
import { ensureDefaultModel } from '../engine/default-model.js';
import { greedySampling } from '../engine/step-plan.js';

const PROMPTS = [
  [504, 3575, 282, 4649, 314],
  [7042, 30, 378],
  [3575, 282, 7062, 314, 1801, 30],
];

/** Three sequences: 0 and 2 constrained (mask rows 0 and 1), 1 free; sampled at temperature 1. */
function plan(seed: bigint, extra: Partial<StepPlan>): StepPlan {
  const S = PROMPTS.length;
  const offsets = [0];
  for (const p of PROMPTS) offsets.push(offsets[offsets.length - 1]! + p.length);
  return {
    tokens: Int32Array.from(PROMPTS.flat()),
    positions: Int32Array.from(PROMPTS.flatMap((p) => p.map((_, i) => i))),
    seqTokenOffsets: Int32Array.from(offsets),
    blockTableOffsets: Int32Array.from([0, 1, 2, 3]),
    blockTables: Int32Array.from([0, 1, 2]),
    sample: new Uint8Array(S).fill(1),
    ...greedySampling(S),
    temperature: new Float32Array(S).fill(1),
    seeds: BigUint64Array.from([seed, seed + 1n, seed + 2n]),
    allowedMaskRows: Int32Array.from([0, -1, 1]),
    topLogprobs: Int32Array.from([2, 0, 2]),
    ...extra,
  };
}

describe('native late masks', () => {
  let model: ModelHandle;
  let ctx: ContextHandle;
  let words = 0;
  let masks: Int32Array;
  const allowed = [[17, 500, 4096], [1234]];

  before(async () => {
    model = await loadModel(ensureDefaultModel());
    words = Math.ceil(modelInfo(model).vocabSize / 32);
    ctx = createContext(model, { kvBlocks: 8, blockSize: 16, maxBatchTokens: 32, maxSeqs: 4, threads: 2 });
    masks = new Int32Array(2 * words);
    allowed.forEach((ts, row) => {
      for (const t of ts) masks[row * words + (t >> 5)]! |= 1 << (t & 31);
    });
  });
  after(() => {
    disposeContext(ctx);
    disposeModel(model);
  });

  it('samples exactly as with the masks in the plan, whenever they arrive', async () => {
    for (const seed of [1n, 2n, 3n]) {
      const eager = await step(ctx, plan(seed, { allowedMask: masks }));
      // Supplied at once (before the forward pass ends) and after it ended.
      for (const delayMs of [0, 30]) {
        const late = step(ctx, plan(seed, { lateMaskRows: 2 }));
        if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
        assert.equal(supplyMasks(ctx, masks), true);
        const r = await late;
        assert.deepEqual([...r.tokens], [...eager.tokens]);
        assert.deepEqual([...r.logprobs], [...eager.logprobs]);
        assert.deepEqual([...r.topLogprobIds], [...eager.topLogprobIds]);
        assert.ok(allowed[0]!.includes(r.tokens[0]!));
        assert.equal(r.tokens[2], 1234);
      }
    }
  });

  it('a wrong length throws and the step keeps waiting; null fails the step', async () => {
    const late = step(ctx, plan(5n, { lateMaskRows: 2 }));
    assert.throws(() => supplyMasks(ctx, new Int32Array(words)), RangeError);
    assert.throws(() => supplyMasks(ctx, new Float32Array(2 * words) as unknown as Int32Array), TypeError);
    assert.equal(supplyMasks(ctx, masks), true);
    assert.equal((await late).tokens[2], 1234);

    const failed = step(ctx, plan(5n, { lateMaskRows: 2 }));
    assert.equal(supplyMasks(ctx, null), true);
    await assert.rejects(failed, /masks of this step were not supplied/);
    // The context is free again and no step waits.
    assert.equal(supplyMasks(ctx, masks), false);
    assert.equal((await step(ctx, plan(5n, { allowedMask: masks }))).tokens[2], 1234);
  });

  it('plans that misuse lateMaskRows are refused, naming the field', async () => {
    await assert.rejects(step(ctx, plan(1n, { lateMaskRows: 4 })), /plan\.lateMaskRows/);
    await assert.rejects(step(ctx, plan(1n, { lateMaskRows: 1.5 })), /plan\.lateMaskRows/);
    await assert.rejects(step(ctx, plan(1n, { lateMaskRows: 2, allowedMask: masks })), /plan\.allowedMask/);
    await assert.rejects(step(ctx, plan(1n, { lateMaskRows: 1 })), /plan\.allowedMaskRows\[2\]/);
    // A refused plan leaves nothing waiting.
    assert.equal(supplyMasks(ctx, masks), false);
  });

  it('disposing the context fails a step that waits for its masks', async () => {
    const own = createContext(model, {
      kvBlocks: 8,
      blockSize: 16,
      maxBatchTokens: 32,
      maxSeqs: 4,
      threads: 1,
    });
    const late = step(own, plan(1n, { lateMaskRows: 2 }));
    disposeContext(own);
    await assert.rejects(late, /not supplied/);
  });
});
