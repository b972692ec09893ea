/**
 * Placed embeddings (a plan's embedOffsets / embedPositions / embedRows: an image's rows in
 * place of token rows) on the default model: placing the table row of token X at a position
 * gives bit for bit the logits of the prompt with X there — in a prefill that starts after a
 * cached prefix too, and beside a sequence with no placements — and every malformed placement
 * is refused naming its field.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  createContext,
  deviceCapabilities,
  disposeContext,
  disposeModel,
  kernelTestHooks,
  loadModel,
  modelInfo,
  step,
  type ContextHandle,
  type ModelHandle,
  type StepPlan,
} from './native.js';
import { greedySampling } from '../engine/step-plan.js';
import { ensureDefaultModel } from '../engine/default-model.js';

describe('placed embeddings', () => {
  let model: ModelHandle;
  let ctx: ContextHandle;
  let D = 0;
  // "The capital of France is" and the same prompt with two tokens replaced by a placeholder.
  const real = [504, 3575, 282, 4649, 314];
  const held = [504, 0, 282, 0, 314];

  before(async () => {
    model = await loadModel(ensureDefaultModel());
    D = modelInfo(model).hiddenSize;
    ctx = createContext(model, { kvBlocks: 16, blockSize: 8, maxBatchTokens: 32, maxSeqs: 4, threads: 2 });
  });
  after(() => {
    disposeContext(ctx);
    disposeModel(model);
  });

  /** One prefill of each prompt (sequence s in block s), from position `start`, all logits back. */
  function plan(prompts: readonly (readonly number[])[], start = 0, extra: Partial<StepPlan> = {}): StepPlan {
    const S = prompts.length;
    const offsets = [0];
    for (const p of prompts) offsets.push(offsets.at(-1)! + p.length - start);
    return {
      ...greedySampling(S),
      tokens: Int32Array.from(prompts.flatMap((p) => p.slice(start))),
      positions: Int32Array.from(prompts.flatMap((p) => p.slice(start).map((_, i) => start + i))),
      seqTokenOffsets: Int32Array.from(offsets),
      blockTableOffsets: Int32Array.from({ length: S + 1 }, (_, s) => s),
      blockTables: Int32Array.from({ length: S }, (_, s) => s),
      sample: new Uint8Array(S).fill(1),
      returnLogits: 'all',
      ...extra,
    };
  }

  it('the CPU backend declares it', () => {
    assert.equal(deviceCapabilities('cpu').placedEmbeddings, true);
  });

  it("placing token X's table row gives the logits of the prompt holding X, bit for bit", async () => {
    const want = (await step(ctx, plan([real]))).logits!;
    const rows = kernelTestHooks.embeddingRows(model, Int32Array.of(real[1]!, real[3]!));
    const placed = plan([held], 0, {
      embedOffsets: Int32Array.of(0, 2),
      embedPositions: Int32Array.of(1, 3),
      embedRows: rows,
    });
    const got = (await step(ctx, placed)).logits!;
    assert.deepEqual(got, want);
    // Without the placement the placeholder's own row is used: the logits differ.
    const plain = (await step(ctx, plan([held]))).logits!;
    assert.notDeepEqual(plain, want);
  });

  it('after a cached prefix, and beside a sequence with no placements', async () => {
    // Both sequences compute positions 0..1 first; the step after computes 2..4 and places
    // position 3 of sequence 0 only.
    const prefix = real.slice(0, 2);
    await step(ctx, plan([prefix, prefix]));
    const want = (await step(ctx, plan([real, real], 2))).logits!;
    await step(ctx, plan([prefix, prefix]));
    const got = (
      await step(ctx, {
        ...plan([held, real], 2),
        embedOffsets: Int32Array.of(0, 1, 1),
        embedPositions: Int32Array.of(3),
        embedRows: kernelTestHooks.embeddingRows(model, Int32Array.of(real[3]!)),
      })
    ).logits!;
    assert.deepEqual(got, want);
  });

  it('refuses malformed placements, naming the field', async () => {
    const row = new Float32Array(D);
    const cases: [Partial<StepPlan>, RegExp][] = [
      [{ embedPositions: Int32Array.of(1), embedRows: row }, /plan\.embedOffsets: is required/],
      [
        { embedOffsets: Int32Array.of(0, 1, 1), embedPositions: Int32Array.of(1), embedRows: row },
        /embedOffsets: length 3 must be 2/,
      ],
      [
        {
          embedOffsets: Int32Array.of(0, 1),
          embedPositions: Int32Array.of(1),
          embedRows: new Float32Array(D - 1),
        },
        /plan\.embedRows: length \d+ must be \d+/,
      ],
      [
        { embedOffsets: Int32Array.of(0, 1), embedPositions: Int32Array.of(5), embedRows: row },
        /embedPositions\[0\]: position 5 is not among sequence 0's positions in this step \[0, 4\]/,
      ],
      [
        { embedOffsets: Int32Array.of(0, 1), embedPositions: Int32Array.of(-1), embedRows: row },
        /embedPositions\[0\]/,
      ],
      [
        {
          embedOffsets: Int32Array.of(0, 2),
          embedPositions: Int32Array.of(2, 2),
          embedRows: new Float32Array(2 * D),
        },
        /embedPositions\[1\]: positions of one sequence's placements must increase/,
      ],
      [
        { embedOffsets: Int32Array.of(0, 2), embedPositions: Int32Array.of(1), embedRows: row },
        /embedOffsets: last offset 2 must equal 1/,
      ],
      [
        {
          embedOffsets: Int32Array.of(0, 1),
          embedPositions: Int32Array.of(1),
          embedRows: Float32Array.from(row).fill(NaN, 3, 4),
        },
        /embedRows\[3\]: must be finite/,
      ],
      [
        {
          embedOffsets: Int32Array.of(0, 1),
          embedPositions: Int32Array.of(1),
          embedRows: new Int32Array(D) as never,
        },
        /plan\.embedRows must be a Float32Array/,
      ],
    ];
    for (const [extra, message] of cases) await assert.rejects(step(ctx, plan([held], 0, extra)), message);
    assert.throws(
      () => kernelTestHooks.embeddingRows(model, Int32Array.of(-1)),
      /ids\[0\]: token id must be in/,
    );
  });
});
