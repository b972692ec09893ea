/**
 * Bidirectional spans (a plan's bidirectionalOffsets / bidirectionalSpans: Gemma 3's image
 * tokens attend to each other both ways) on the default model: no span, an empty list or a
 * one-token span leave every logit bit for bit causal; inside a span the queries see its later
 * positions (every logit from the span on changes, none before it); a span computed in an earlier chunk serves the later chunk from the cache as
 * one whole prefill does; a sequence beside it is untouched; every malformed span (one that
 * does not end within its step above all) is refused naming its field.
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
  type ContextHandle,
  type ModelHandle,
  type StepPlan,
} from './native.js';
import { greedySampling } from '../engine/step-plan.js';
import { ensureDefaultModel } from '../engine/default-model.js';

describe('bidirectional spans', () => {
  let model: ModelHandle;
  let ctx: ContextHandle;
  let V = 0;
  const prompt = [504, 3575, 282, 4649, 314, 1345, 28, 3117, 42, 90];

  before(async () => {
    model = await loadModel(ensureDefaultModel());
    V = modelInfo(model).vocabSize;
    ctx = createContext(model, { kvBlocks: 16, blockSize: 8, maxBatchTokens: 32, maxSeqs: 4, threads: 2 });
  });
  after(() => {
    disposeContext(ctx);
    disposeModel(model);
  });

  /** Prefills of `prompts` (sequence s in blocks 2s, 2s+1) over positions [from, to), all logits back. */
  function plan(
    prompts: readonly (readonly number[])[],
    extra: Partial<StepPlan> = {},
    from = 0,
    to?: number,
  ): StepPlan {
    const S = prompts.length;
    const parts = prompts.map((p) => p.slice(from, to ?? p.length));
    const offsets = [0];
    for (const p of parts) offsets.push(offsets.at(-1)! + p.length);
    return {
      ...greedySampling(S),
      tokens: Int32Array.from(parts.flat()),
      positions: Int32Array.from(parts.flatMap((p) => p.map((_, i) => from + i))),
      seqTokenOffsets: Int32Array.from(offsets),
      blockTableOffsets: Int32Array.from({ length: S + 1 }, (_, s) => 2 * s),
      blockTables: Int32Array.from({ length: 2 * S }, (_, k) => k),
      sample: new Uint8Array(S).fill(1),
      returnLogits: 'all',
      ...extra,
    };
  }
  const spans = (offsets: number[], pairs: number[]): Partial<StepPlan> => ({
    bidirectionalOffsets: Int32Array.from(offsets),
    bidirectionalSpans: Int32Array.from(pairs),
  });
  const row = (logits: Float32Array, t: number) => logits.subarray(t * V, (t + 1) * V);

  it('no span, an empty list or a one-token span is the causal step, bit for bit', async () => {
    const causal = (await step(ctx, plan([prompt]))).logits!;
    assert.deepEqual((await step(ctx, plan([prompt], spans([0, 0], [])))).logits!, causal);
    assert.deepEqual((await step(ctx, plan([prompt], spans([0, 1], [4, 5])))).logits!, causal);
  });

  it("a span's queries see its later positions: from the span on every logit changes (the span's last too, past layer 0), before it none", async () => {
    const causal = (await step(ctx, plan([prompt]))).logits!;
    const bidi = (await step(ctx, plan([prompt], spans([0, 1], [2, 7])))).logits!;
    for (const t of [0, 1]) assert.deepEqual(row(bidi, t), row(causal, t), `position ${t}`);
    for (const t of [2, 3, 4, 5, 6, 7, 8, 9])
      assert.notDeepEqual(row(bidi, t), row(causal, t), `position ${t}`);
  });

  it('a span computed in an earlier chunk serves the next chunk from the cache as one prefill does', async () => {
    const whole = (await step(ctx, plan([prompt], spans([0, 1], [2, 7])))).logits!;
    const first = (await step(ctx, plan([prompt], spans([0, 1], [2, 7]), 0, 7))).logits!;
    const second = (await step(ctx, plan([prompt], {}, 7))).logits!;
    assert.deepEqual(first, whole.subarray(0, 7 * V));
    assert.deepEqual(second, whole.subarray(7 * V));
  });

  it('a sequence without spans beside one with spans is its causal self', async () => {
    const other = [90, 42, 3117, 28, 1345, 314];
    const alone = (await step(ctx, plan([other]))).logits!;
    const both = (await step(ctx, plan([prompt, other], spans([0, 1, 1], [2, 7])))).logits!;
    assert.deepEqual(both.subarray(prompt.length * V), alone);
  });

  it('a malformed span is refused naming its field', async () => {
    for (const [extra, rule, from, to] of [
      [
        spans([0, 1], [2, 8]),
        /bidirectionalSpans\[0\].*must end within .* positions in this step \[0, 6\]/,
        0,
        7,
      ],
      [spans([0, 1], [1, 3]), /bidirectionalSpans\[0\].*must end within/, 4, undefined],
      [
        spans([0, 2], [2, 5, 4, 6]),
        /bidirectionalSpans\[1\].*after the sequence's previous span/,
        0,
        undefined,
      ],
      [spans([0, 1], [5, 5]), /must be non-empty/, 0, undefined],
      [spans([0, 1], [2, 5, 6]), /bidirectionalSpans: must hold \[start, end\) pairs/, 0, undefined],
      [{ bidirectionalSpans: Int32Array.of(2, 5) }, /bidirectionalOffsets: is required/, 0, undefined],
      [spans([0, 2], [2, 5]), /bidirectionalOffsets: last offset 2 must equal 1/, 0, undefined],
    ] as const) {
      await assert.rejects(step(ctx, plan([prompt], extra, from, to)), rule);
    }
  });
});
