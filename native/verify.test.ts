/**
 * Speculative decoding in the native step: a plan's draft tokens are verified position by
 * position, each sampled exactly as the non-speculative sampler would sample that output
 * (same logits bit for bit, same mask, same penalty history, same seeded draw). So a verify
 * step must give the tokens, logprobs and top alternatives that one-token steps give, accept
 * exactly the draft tokens those steps would have produced, and stop at the first that differs.
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
import { ensureDefaultModel } from '../engine/default-model.js';

interface Sampling {
  temperature?: number;
  topK?: number;
  topP?: number;
  seed?: bigint;
  repetitionPenalty?: number;
  frequencyPenalty?: number;
  topLogprobs?: number;
}

/** A one-sequence plan: `tokens` at `start`, the last `draft` of them draft tokens. */
function plan(
  tokens: readonly number[],
  start: number,
  blocks: readonly number[],
  o: Sampling & { counter?: number; history?: readonly number[]; draft?: number; maskRow?: number } = {},
  extra: Partial<StepPlan> = {},
): StepPlan {
  const history = o.history ?? [];
  return {
    tokens: Int32Array.from(tokens),
    positions: Int32Array.from(tokens.map((_, i) => start + i)),
    seqTokenOffsets: Int32Array.from([0, tokens.length]),
    blockTableOffsets: Int32Array.from([0, blocks.length]),
    blockTables: Int32Array.from(blocks),
    sample: Uint8Array.from([1]),
    temperature: Float32Array.from([o.temperature ?? 0]),
    topK: Int32Array.from([o.topK ?? 0]),
    topP: Float32Array.from([o.topP ?? 1]),
    repetitionPenalty: Float32Array.from([o.repetitionPenalty ?? 1]),
    presencePenalty: Float32Array.from([0]),
    frequencyPenalty: Float32Array.from([o.frequencyPenalty ?? 0]),
    penaltyTokenOffsets: Int32Array.from([0, history.length]),
    penaltyTokens: Int32Array.from(history),
    seeds: BigUint64Array.from([o.seed ?? 0n]),
    sampleCounters: Int32Array.from([o.counter ?? 0]),
    allowedMaskRows: Int32Array.from([o.maskRow ?? -1]),
    allowedMask: new Int32Array(0),
    topLogprobs: Int32Array.from([o.topLogprobs ?? 0]),
    ...(o.draft !== undefined ? { draftCounts: Int32Array.from([o.draft]) } : {}),
    ...extra,
  };
}

const PROMPT = [504, 3575, 282, 4649, 314, 7042, 30, 378, 3575, 282, 7062, 314, 1801, 30, 378, 3575, 282];
const BLOCKS_A = [0, 1, 2, 3];
const BLOCKS_B = [8, 9, 10, 11];

describe('native verification of draft tokens', () => {
  let model: ModelHandle;
  let ctx: ContextHandle;
  let V = 0;
  let layers = 0;

  before(async () => {
    model = await loadModel(ensureDefaultModel());
    V = modelInfo(model).vocabSize;
    layers = modelInfo(model).numLayers;
    ctx = createContext(model, { kvBlocks: 32, blockSize: 8, maxBatchTokens: 64, maxSeqs: 4, threads: 2 });
  });
  after(() => {
    disposeContext(ctx);
    disposeModel(model);
  });

  /** n outputs the one-token way (prefill, then a step per token), with their logits and logprobs. */
  async function sequential(n: number, o: Sampling = {}) {
    const history = o.repetitionPenalty || o.frequencyPenalty ? [...PROMPT] : [];
    let r = await step(ctx, plan(PROMPT, 0, BLOCKS_A, { ...o, history }));
    const tokens = [r.tokens[0]];
    const logprobs = [r.logprobs[0]];
    const tops = [Array.from(r.topLogprobIds)];
    const logits: Float32Array[] = [];
    for (let i = 1; i <= n; i++) {
      const last = tokens[i - 1];
      if (history.length > 0) history.push(last);
      r = await step(
        ctx,
        plan([last], PROMPT.length + i - 1, BLOCKS_A, { ...o, counter: i, history }, { returnLogits: 'all' }),
      );
      logits.push(r.logits!.slice());
      tokens.push(r.tokens[0]);
      logprobs.push(r.logprobs[0]);
      tops.push(Array.from(r.topLogprobIds));
    }
    return { tokens, logprobs, tops, logits };
  }

  /** Prefills PROMPT on the other blocks, then verifies `draft` after output 0 in one step. */
  async function verify(
    first: number,
    draft: readonly number[],
    o: Sampling = {},
    extra: Partial<StepPlan> = {},
  ) {
    const history = o.repetitionPenalty || o.frequencyPenalty ? [...PROMPT] : [];
    await step(ctx, plan(PROMPT, 0, BLOCKS_B, { ...o, history }));
    if (history.length > 0) history.push(first);
    return step(
      ctx,
      plan(
        [first, ...draft],
        PROMPT.length,
        BLOCKS_B,
        { ...o, counter: 1, history, draft: draft.length },
        extra,
      ),
    );
  }

  it('greedy: the logits of every verified position equal one-token steps bit for bit; all drafts accepted', async () => {
    const seq = await sequential(6);
    const r = await verify(seq.tokens[0], seq.tokens.slice(1, 6), {}, { returnLogits: 'all' });
    assert.deepEqual(Array.from(r.numAccepted!), [5]);
    assert.equal(r.tokens[0], seq.tokens[6], 'the token after the accepted drafts');
    for (let i = 0; i <= 5; i++) {
      const row = r.logits!.subarray(i * V, (i + 1) * V);
      assert.ok(
        row.every((x, j) => Object.is(x, seq.logits[i][j])),
        `position ${i}: logits differ from a one-token step`,
      );
    }
    for (let i = 0; i < 5; i++) assert.equal(r.acceptedLogprobs![i], seq.logprobs[i + 1]);
    assert.equal(r.logprobs[0], seq.logprobs[6]);
  });

  it('greedy: a wrong draft token is refused and the model token taken there; later drafts are not looked at', async () => {
    const seq = await sequential(5);
    for (const wrongAt of [0, 2, 4]) {
      const draft = seq.tokens.slice(1, 6);
      draft[wrongAt] = (draft[wrongAt] + 1) % V;
      const r = await verify(seq.tokens[0], draft);
      assert.equal(r.numAccepted![0], wrongAt, `refused at ${wrongAt}`);
      assert.equal(r.tokens[0], seq.tokens[wrongAt + 1]);
      assert.equal(r.logprobs[0], seq.logprobs[wrongAt + 1]);
      for (let i = wrongAt; i < 5; i++) assert.ok(Number.isNaN(r.acceptedLogprobs![i]));
    }
  });

  it('seeded sampling: the same draws as one-token steps (counter + position), top-k/top-p and top logprobs too', async () => {
    const o: Sampling = { temperature: 1.2, topP: 0.9, topK: 40, seed: 77n, topLogprobs: 3 };
    const seq = await sequential(6, o);
    const all = await verify(seq.tokens[0], seq.tokens.slice(1, 6), o);
    assert.deepEqual(Array.from(all.numAccepted!), [5]);
    assert.equal(all.tokens[0], seq.tokens[6]);
    for (let i = 0; i < 5; i++) {
      assert.equal(all.acceptedLogprobs![i], seq.logprobs[i + 1]);
      assert.deepEqual(Array.from(all.acceptedTopLogprobIds!.subarray(i * 3, i * 3 + 3)), seq.tops[i + 1]);
    }
    assert.deepEqual(Array.from(all.topLogprobIds), seq.tops[6]);
    const wrong = seq.tokens.slice(1, 6);
    wrong[3] = wrong[3] === 0 ? 1 : 0;
    const r = await verify(seq.tokens[0], wrong, o);
    assert.equal(r.numAccepted![0], 3);
    assert.equal(r.tokens[0], seq.tokens[4], 'the draw at position 3 is the one the sequential run made');
    assert.deepEqual(Array.from(r.topLogprobIds), seq.tops[4]);
    assert.deepEqual(Array.from(r.acceptedTopLogprobIds!.subarray(9, 15)), [-1, -1, -1, -1, -1, -1]);
  });

  it('penalties: each verified position sees the draft tokens before it in its history', async () => {
    const o: Sampling = { repetitionPenalty: 1.8, frequencyPenalty: 0.7 };
    const seq = await sequential(6, o);
    const r = await verify(seq.tokens[0], seq.tokens.slice(1, 6), o);
    assert.deepEqual(Array.from(r.numAccepted!), [5]);
    assert.equal(r.tokens[0], seq.tokens[6]);
  });

  it('masks: position i uses mask row allowedMaskRows + i', async () => {
    const seq = await sequential(3);
    const words = Math.ceil(V / 32);
    const masks = new Int32Array(4 * words).fill(-1);
    // Row 2 (position 2) forbids the model's token there: draft 2 is refused, and the
    // sample taken there is the best token row 2 allows.
    const banned = seq.tokens[3];
    masks[2 * words + (banned >> 5)] &= ~(1 << (banned & 31));
    const r = await verify(seq.tokens[0], seq.tokens.slice(1, 4), { topLogprobs: 0 }, { allowedMask: masks });
    const m = await verify(
      seq.tokens[0],
      seq.tokens.slice(1, 4),
      {},
      { allowedMask: masks, allowedMaskRows: Int32Array.from([0]) },
    );
    assert.deepEqual(Array.from(r.numAccepted!), [3], 'no mask row: all accepted');
    assert.equal(m.numAccepted![0], 2);
    assert.notEqual(m.tokens[0], banned);
  });

  it('a batch mixes sequences with and without drafts', async () => {
    const seq = await sequential(4);
    await step(ctx, plan(PROMPT, 0, BLOCKS_B));
    const two: StepPlan = {
      ...plan([seq.tokens[0], ...seq.tokens.slice(1, 4)], PROMPT.length, BLOCKS_B),
      tokens: Int32Array.from([seq.tokens[0], ...seq.tokens.slice(1, 4), 3575, 282]),
      positions: Int32Array.from([17, 18, 19, 20, 0, 1]),
      seqTokenOffsets: Int32Array.from([0, 4, 6]),
      blockTableOffsets: Int32Array.from([0, 4, 5]),
      blockTables: Int32Array.from([...BLOCKS_B, 20]),
      sample: Uint8Array.from([1, 1]),
      temperature: Float32Array.from([0, 0]),
      topK: Int32Array.from([0, 0]),
      topP: Float32Array.from([1, 1]),
      repetitionPenalty: Float32Array.from([1, 1]),
      presencePenalty: Float32Array.from([0, 0]),
      frequencyPenalty: Float32Array.from([0, 0]),
      penaltyTokenOffsets: Int32Array.from([0, 0, 0]),
      seeds: BigUint64Array.from([0n, 0n]),
      sampleCounters: Int32Array.from([1, 0]),
      allowedMaskRows: Int32Array.from([-1, -1]),
      topLogprobs: Int32Array.from([0, 0]),
      draftCounts: Int32Array.from([3, 0]),
    };
    const r = await step(ctx, two);
    assert.deepEqual(Array.from(r.numAccepted!), [3, 0]);
    assert.equal(r.tokens[0], seq.tokens[4]);
    assert.equal(r.acceptedLogprobs!.length, 3);
  });

  it('exitLayer: all layers is the plain step; fewer runs the first layers and the head', async () => {
    const full = await step(ctx, plan(PROMPT, 0, BLOCKS_A, {}, { returnLogits: 'last' }));
    const same = await step(ctx, plan(PROMPT, 0, BLOCKS_A, {}, { returnLogits: 'last', exitLayer: layers }));
    const early = await step(ctx, plan(PROMPT, 0, BLOCKS_A, {}, { returnLogits: 'last', exitLayer: 2 }));
    assert.ok(full.logits!.every((x, j) => Object.is(x, same.logits![j])));
    assert.ok(early.logits!.some((x, j) => x !== full.logits![j]));
  });

  it('plans that break the draft rules are refused, naming the field', async () => {
    const cases: [StepPlan, RegExp][] = [
      [plan([1, 2], 0, BLOCKS_A, { draft: 2 }), /draftCounts\[0\].*leave at least one/],
      [plan([1, 2], 0, BLOCKS_A, { draft: -1 }), /draftCounts\[0\]: must be >= 0/],
      [{ ...plan([1, 2, 3], 0, BLOCKS_A, { draft: 1 }), sample: Uint8Array.from([0]) }, /must sample/],
      [plan([1, 2, 3], 0, BLOCKS_A, { draft: 1 }, { returnLogits: 'last' }), /'last' cannot be combined/],
      [
        plan(
          [1, 2, 3],
          0,
          BLOCKS_A,
          { draft: 2, maskRow: 0 },
          { allowedMask: new Int32Array(2 * Math.ceil(V / 32)) },
        ),
        /allowedMaskRows\[0\].*r \+ draftCounts/,
      ],
      [
        plan([1, 2, 3], 0, BLOCKS_A, { draft: 1, maskRow: 0 }, { lateMaskRows: 3 }),
        /lateMaskRows.*S \+ draft tokens = 2/,
      ],
      [plan([1], 0, BLOCKS_A, {}, { exitLayer: 0 }), /exitLayer: must be an integer in \[1, layers=/],
      [plan([1], 0, BLOCKS_A, {}, { exitLayer: layers + 1 }), /exitLayer/],
      [
        { ...plan([1, 2, 3], 0, BLOCKS_A), draftCounts: Int32Array.from([0, 0]) },
        /draftCounts: length 2 must be 1/,
      ],
    ];
    for (const [p, re] of cases) await assert.rejects(step(ctx, p), re);
    // The context still steps.
    const ok = await step(ctx, plan([1, 2, 3], 0, BLOCKS_A, { draft: 1 }));
    assert.equal(ok.numAccepted!.length, 1);
  });
});
