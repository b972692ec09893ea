/**
 * Prompt logprobs in the native step (native/src/prompt_scores.h): the rows a plan names are
 * scored at their target token against the same step's raw logits (returnLogits 'all', a
 * log-softmax in float64 here) — logprob, rank and top alternatives — across more rows than
 * one output-head pass takes (64) and beside a sequence that asks for none; a bad target is
 * refused naming the field.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureDefaultModel } from '../engine/default-model.js';
import { greedySampling } from '../engine/step-plan.js';
import {
  createContext,
  disposeContext,
  disposeModel,
  loadModel,
  modelInfo,
  step,
  type ContextHandle,
  type ModelHandle,
  type StepPlan,
} from './native.js';

const BLOCK = 16;
let model: ModelHandle;
let ctx: ContextHandle;
let V = 0;

before(async () => {
  model = await loadModel(ensureDefaultModel());
  V = modelInfo(model).vocabSize;
  ctx = createContext(model, { kvBlocks: 16, blockSize: BLOCK, maxBatchTokens: 160, maxSeqs: 2, threads: 2 });
});
after(() => {
  disposeContext(ctx);
  disposeModel(model);
});

/** Two sequences' prefills in one step: `a` (scored, `top` alternatives) then `b` (not). */
function plan(a: number[], b: number[], top: number): StepPlan {
  const blocksA = Math.ceil(a.length / BLOCK);
  const blocksB = Math.ceil(b.length / BLOCK);
  const targets = new Int32Array(a.length + b.length).fill(-1);
  for (let i = 0; i + 1 < a.length; i++) targets[i] = a[i + 1];
  return {
    ...greedySampling(2),
    tokens: Int32Array.from([...a, ...b]),
    positions: Int32Array.from([...a.keys(), ...b.keys()]),
    seqTokenOffsets: Int32Array.from([0, a.length, a.length + b.length]),
    blockTableOffsets: Int32Array.from([0, blocksA, blocksA + blocksB]),
    blockTables: Int32Array.from({ length: blocksA + blocksB }, (_, i) => i),
    sample: Uint8Array.from([1, 1]),
    returnLogits: 'all',
    promptLogprobTargets: targets,
    promptTopLogprobs: Int32Array.from([top, 0]),
  };
}

test('each named row: logprob, rank and top alternatives of the raw distribution', async () => {
  const a = Array.from({ length: 100 }, (_, i) => (i * 7919 + 13) % 49152);
  const b = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  const top = 5;
  const r = await step(ctx, plan(a, b, top));
  assert.ok(r.logits && r.promptLogprobs && r.promptLogprobRanks && r.promptTopLogprobIds);
  assert.equal(r.promptTopLogprobsStride, top);
  let worst = 0;
  for (let t = 0; t < a.length + b.length; t++) {
    if (t >= a.length - 1) {
      assert.ok(Number.isNaN(r.promptLogprobs[t]), `row ${t} is not scored`);
      assert.equal(r.promptLogprobRanks[t], -1);
      continue;
    }
    const row: Float32Array = r.logits!.subarray(t * V, (t + 1) * V);
    const target = a[t + 1];
    // One pass: the normaliser, the tokens above the target, the `top` best (ties: lower id).
    let max = -Infinity;
    for (const x of row) max = Math.max(max, x);
    let sum = 0;
    let higher = 0;
    const best: number[] = [];
    row.forEach((x, id) => {
      sum += Math.exp(x - max);
      if (x > row[target]) higher++;
      if (best.length === top && x <= row[best[top - 1]]) return;
      let at = best.length;
      while (at > 0 && row[best[at - 1]] < x) at--;
      best.splice(at, 0, id);
      if (best.length > top) best.pop();
    });
    const lse = max + Math.log(sum);
    worst = Math.max(worst, Math.abs(r.promptLogprobs[t] - (row[target] - lse)));
    assert.equal(r.promptLogprobRanks[t], 1 + higher, `rank at ${t}`);
    assert.deepEqual([...r.promptTopLogprobIds.subarray(t * top, (t + 1) * top)], best, `top at ${t}`);
    assert.ok(Math.abs(r.promptTopLogprobValues![t * top] - (row[best[0]] - lse)) < 1e-4);
  }
  assert.ok(worst < 1e-4, `logprob error ${worst}`);
});

test('a target outside the vocabulary is refused, naming the row', async () => {
  const p = plan([1, 2, 3], [4], 0);
  const targets = new Int32Array(4).fill(-1);
  targets[1] = V;
  await assert.rejects(step(ctx, { ...p, promptLogprobTargets: targets }), /promptLogprobTargets\[1\]/);
  await assert.rejects(step(ctx, { ...p, promptTopLogprobs: undefined }), /given together/);
});
