/**
 * step(): plan validation, KV-cache correctness (one prefill = chunked prefill = token-by-
 * token decode, contiguous or shuffled blocks, alone or batched) and native sampling
 * (greedy, seeds independent of the batch, allowed-token masks, top-k, logprobs).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  createContext,
  disposeContext,
  disposeModel,
  faultTestHooks,
  loadModel,
  modelInfo,
  step,
  type ContextHandle,
  type ModelHandle,
  type StepPlan,
} from './native.js';
import { ensureDefaultModel } from '../engine/default-model.js';

interface SeqSpec {
  tokens: number[];
  start: number;
  blocks: number[];
  sample?: boolean;
  temperature?: number;
  topK?: number;
  topP?: number;
  seed?: bigint;
  counter?: number;
  maskRow?: number;
  topLogprobs?: number;
  penaltyTokens?: number[];
  repetitionPenalty?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
}

function makePlan(seqs: SeqSpec[], extra: Partial<StepPlan> = {}): StepPlan {
  const cat = (f: (s: SeqSpec) => number[]) => Int32Array.from(seqs.flatMap(f));
  const offsets = (f: (s: SeqSpec) => number) => {
    const o = [0];
    for (const s of seqs) o.push(o[o.length - 1]! + f(s));
    return Int32Array.from(o);
  };
  return {
    tokens: cat((s) => s.tokens),
    positions: cat((s) => s.tokens.map((_, i) => s.start + i)),
    seqTokenOffsets: offsets((s) => s.tokens.length),
    blockTableOffsets: offsets((s) => s.blocks.length),
    blockTables: cat((s) => s.blocks),
    sample: Uint8Array.from(seqs.map((s) => (s.sample === false ? 0 : 1))),
    temperature: Float32Array.from(seqs.map((s) => s.temperature ?? 0)),
    topK: Int32Array.from(seqs.map((s) => s.topK ?? 0)),
    topP: Float32Array.from(seqs.map((s) => s.topP ?? 1)),
    repetitionPenalty: Float32Array.from(seqs.map((s) => s.repetitionPenalty ?? 1)),
    presencePenalty: Float32Array.from(seqs.map((s) => s.presencePenalty ?? 0)),
    frequencyPenalty: Float32Array.from(seqs.map((s) => s.frequencyPenalty ?? 0)),
    penaltyTokenOffsets: offsets((s) => (s.penaltyTokens ?? []).length),
    penaltyTokens: cat((s) => s.penaltyTokens ?? []),
    seeds: BigUint64Array.from(seqs.map((s) => s.seed ?? 0n)),
    sampleCounters: Int32Array.from(seqs.map((s) => s.counter ?? 0)),
    allowedMaskRows: Int32Array.from(seqs.map((s) => s.maskRow ?? -1)),
    allowedMask: new Int32Array(0),
    topLogprobs: Int32Array.from(seqs.map((s) => s.topLogprobs ?? -1)),
    ...extra,
  };
}

const PROMPT = [
  504, 3575, 282, 4649, 314, 7042, 30, 378, 3575, 282, 7062, 314, 1801, 30, 378, 3575, 282, 9840, 314,
];
const BS = 8;

function maxRelDiff(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let maxAbs = 0;
  let maxDiff = 0;
  for (let i = 0; i < a.length; i++) {
    maxAbs = Math.max(maxAbs, Math.abs(a[i]!));
    maxDiff = Math.max(maxDiff, Math.abs(a[i]! - b[i]!));
  }
  return maxDiff / maxAbs;
}

function argmax(a: Float32Array, from = 0, len = a.length): number {
  let best = from;
  for (let i = from; i < from + len; i++) if (a[i]! > a[best]!) best = i;
  return best - from;
}

describe('native step', () => {
  let model: ModelHandle;
  let ctx: ContextHandle;
  let V = 0;

  before(async () => {
    model = await loadModel(ensureDefaultModel());
    V = modelInfo(model).vocabSize;
    ctx = createContext(model, { kvBlocks: 64, blockSize: BS, maxBatchTokens: 64, maxSeqs: 8, threads: 2 });
  });
  after(() => {
    disposeContext(ctx);
    disposeModel(model);
  });

  /** Logits ('all') of PROMPT fed in chunks of the given sizes, over the given blocks. */
  async function chunkedLogits(chunks: number[], blocks: number[]): Promise<Float32Array> {
    const rows: Float32Array[] = [];
    let pos = 0;
    for (const n of chunks) {
      const r = await step(
        ctx,
        makePlan([{ tokens: PROMPT.slice(pos, pos + n), start: pos, blocks }], { returnLogits: 'all' }),
      );
      assert.ok(r.logits);
      rows.push(r.logits);
      pos += n;
    }
    assert.equal(pos, PROMPT.length);
    const out = new Float32Array(PROMPT.length * V);
    let at = 0;
    for (const r of rows) {
      out.set(r, at);
      at += r.length;
    }
    return out;
  }

  it('prefill in one go = chunked prefill = token-by-token decode, on shuffled blocks too', async () => {
    const blocks = [0, 1, 2];
    const whole = await chunkedLogits([PROMPT.length], blocks);
    const chunked = await chunkedLogits([5, 1, 7, 6], blocks);
    const single = await chunkedLogits(
      PROMPT.map(() => 1),
      blocks,
    );
    const shuffled = await chunkedLogits([3, 16], [41, 7, 23]);
    assert.ok(maxRelDiff(whole, chunked) < 1e-3, `chunked differs: ${maxRelDiff(whole, chunked)}`);
    assert.ok(maxRelDiff(whole, single) < 1e-3, `decode differs: ${maxRelDiff(whole, single)}`);
    assert.ok(maxRelDiff(whole, shuffled) < 1e-3, `shuffled blocks differ: ${maxRelDiff(whole, shuffled)}`);
  });

  it('a batch of sequences gives the same logits as each sequence alone', async () => {
    const a = PROMPT.slice(0, 11);
    const b = PROMPT.slice(4, 19);
    const c = [1, 2, 3];
    const alone = [];
    for (const [tokens, blocks] of [
      [a, [10, 11]],
      [b, [12, 13]],
      [c, [14]],
    ] as const) {
      alone.push(
        (
          await step(
            ctx,
            makePlan([{ tokens: [...tokens], start: 0, blocks: [...blocks] }], { returnLogits: 'last' }),
          )
        ).logits!,
      );
    }
    const batch = await step(
      ctx,
      makePlan(
        [
          { tokens: a, start: 0, blocks: [20, 21] },
          { tokens: b, start: 0, blocks: [22, 23] },
          { tokens: c, start: 0, blocks: [24] },
        ],
        { returnLogits: 'last' },
      ),
    );
    for (let s = 0; s < 3; s++) {
      const row = batch.logits!.subarray(s * V, (s + 1) * V);
      assert.ok(maxRelDiff(alone[s]!, row) < 1e-3, `sequence ${s} differs in a batch`);
    }
    // Greedy sampling = argmax of the returned logits.
    for (let s = 0; s < 3; s++) assert.equal(batch.tokens[s], argmax(batch.logits!, s * V, V));
  });

  it('greedy continuation of a prompt makes sense', async () => {
    const prompt = [504, 3575, 282, 4649, 314]; // "The capital of France is"
    const r = await step(ctx, makePlan([{ tokens: prompt, start: 0, blocks: [30] }]));
    assert.equal(r.tokens[0], 7042); // " Paris"
  });

  it('same seed → same tokens alone and in a batch with others', async () => {
    const sampled = async (inBatch: boolean): Promise<number[]> => {
      const out: number[] = [];
      const seq: SeqSpec = {
        tokens: PROMPT.slice(0, 6),
        start: 0,
        blocks: [40, 41],
        temperature: 1.3,
        topP: 0.95,
        seed: 1234n,
      };
      for (let i = 0; i < 6; i++) {
        const seqs: SeqSpec[] = inBatch
          ? [
              { tokens: [7, 8, 9], start: 0, blocks: [50], temperature: 0.7, seed: 99n },
              { ...seq, counter: i },
              { tokens: [11], start: 0, blocks: [51], temperature: 1, topK: 5, seed: 5n },
            ]
          : [{ ...seq, counter: i }];
        const r = await step(ctx, makePlan(seqs));
        const tok = r.tokens[inBatch ? 1 : 0]!;
        out.push(tok);
        seq.start += seq.tokens.length;
        seq.tokens = [tok];
      }
      return out;
    };
    const alone = await sampled(false);
    const batched = await sampled(true);
    assert.deepEqual(batched, alone);
  });

  it('allowed-token masks are respected, including a single allowed token and an empty mask', async () => {
    const words = Math.ceil(V / 32);
    const mask = new Int32Array(3 * words);
    const allowedA = [17, 500, 4096, 49151];
    for (const t of allowedA) mask[t >> 5]! |= 1 << (t & 31);
    mask[words + (1234 >> 5)]! |= 1 << (1234 & 31);
    // row 2 stays empty: nothing allowed
    for (let seed = 0n; seed < 8n; seed++) {
      const r = await step(
        ctx,
        makePlan(
          [
            { tokens: [1, 2], start: 0, blocks: [1], temperature: 1, seed, maskRow: 0 },
            { tokens: [3], start: 0, blocks: [2], temperature: 0.8, seed, maskRow: 1, topLogprobs: 2 },
            { tokens: [4], start: 0, blocks: [3], temperature: 0, maskRow: 0 },
            { tokens: [5], start: 0, blocks: [4], temperature: 1, maskRow: 2 },
          ],
          { allowedMask: mask },
        ),
      );
      assert.ok(allowedA.includes(r.tokens[0]!), `token ${r.tokens[0]} not allowed`);
      assert.equal(r.tokens[1], 1234);
      assert.ok(Math.abs(r.logprobs[1]!) < 1e-6, 'the only allowed token has probability 1');
      assert.ok(allowedA.includes(r.tokens[2]!));
      assert.equal(r.tokens[3], -1);
      assert.ok(r.errors && typeof r.errors[3] === 'string' && r.errors[0] === null);
    }
  });

  it('sampled frequencies follow the processed distribution (mask, temperature, top-k, top-p)', async () => {
    const prompt = [504, 3575, 282];
    const base = await step(
      ctx,
      makePlan([{ tokens: prompt, start: 0, blocks: [60] }], { returnLogits: 'last' }),
    );
    const logits = base.logits!;
    const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => logits[b]! - logits[a]!);
    const top4 = order.slice(0, 4);
    const words = Math.ceil(V / 32);
    const mask = new Int32Array(words);
    for (const t of top4) mask[t >> 5]! |= 1 << (t & 31);
    const expected = (temperature: number, keep: number) => {
      const kept = top4.slice(0, keep);
      const w = kept.map((t) => Math.exp((logits[t]! - logits[kept[0]!]!) / temperature));
      const sum = w.reduce((a, b) => a + b, 0);
      return new Map(kept.map((t, i) => [t, w[i]! / sum]));
    };
    const configs: Array<[Partial<SeqSpec>, Map<number, number>]> = [
      [{ temperature: 2, maskRow: 0 }, expected(2, 4)],
      [{ temperature: 2, maskRow: 0, topK: 2 }, expected(2, 2)],
    ];
    for (const [params, probs] of configs) {
      const counts = new Map<number, number>();
      const S = 8;
      const rounds = 25;
      for (let round = 0; round < rounds; round++) {
        const seqs: SeqSpec[] = Array.from({ length: S }, (_, s) => ({
          tokens: prompt,
          start: 0,
          blocks: [s],
          seed: BigInt(round * S + s),
          ...params,
        }));
        const r = await step(ctx, makePlan(seqs, { allowedMask: mask }));
        for (const t of r.tokens) counts.set(t, (counts.get(t) ?? 0) + 1);
      }
      for (const t of counts.keys()) assert.ok(probs.has(t), `token ${t} is outside the kept set`);
      for (const [t, p] of probs) {
        const freq = (counts.get(t) ?? 0) / (S * rounds);
        assert.ok(
          Math.abs(freq - p) < 0.1,
          `token ${t}: frequency ${freq.toFixed(3)} vs probability ${p.toFixed(3)}`,
        );
      }
    }
  });

  it('top-k = 1 equals greedy; logprobs are consistent', async () => {
    const base = { tokens: PROMPT.slice(0, 9), start: 0, blocks: [5, 6] };
    const g = await step(
      ctx,
      makePlan([{ ...base, temperature: 0, topLogprobs: 5 }], { returnLogits: 'last' }),
    );
    for (let seed = 0n; seed < 5n; seed++) {
      const k1 = await step(ctx, makePlan([{ ...base, temperature: 1.5, topK: 1, seed }]));
      assert.equal(k1.tokens[0], g.tokens[0]);
    }
    assert.equal(g.tokens[0], argmax(g.logits!));
    assert.equal(g.topLogprobsStride, 5);
    assert.equal(g.topLogprobIds[0], g.tokens[0]);
    assert.ok(Math.abs(g.topLogprobValues[0]! - g.logprobs[0]!) < 1e-6);
    let mass = 0;
    for (let i = 0; i < 5; i++) {
      assert.ok(g.topLogprobValues[i]! <= 0);
      if (i > 0) assert.ok(g.topLogprobValues[i]! <= g.topLogprobValues[i - 1]!);
      mass += Math.exp(g.topLogprobValues[i]!);
    }
    assert.ok(mass <= 1 + 1e-5 && mass > 0);
    // The full distribution sums to 1: log-softmax of the returned logits.
    const l = g.logits!;
    let mx = -Infinity;
    for (const v of l) mx = Math.max(mx, v);
    let sum = 0;
    for (const v of l) sum += Math.exp(v - mx);
    assert.ok(Math.abs(l[g.tokens[0]!]! - mx - Math.log(sum) - g.logprobs[0]!) < 1e-4);
  });

  it('repetition penalty changes the greedy choice away from a penalised token', async () => {
    const base = { tokens: [504, 3575, 282, 4649, 314], start: 0, blocks: [7] };
    const plain = await step(ctx, makePlan([{ ...base }]));
    const pen = await step(
      ctx,
      makePlan([{ ...base, penaltyTokens: [plain.tokens[0]!], presencePenalty: 100 }]),
    );
    assert.notEqual(pen.tokens[0], plain.tokens[0]);
  });

  it('suppressed tokens (min_tokens) cannot be sampled: greedy takes the next best', async () => {
    const base = { tokens: [504, 3575, 282, 4649, 314], start: 0, blocks: [7] };
    const plain = await step(ctx, makePlan([{ ...base }]));
    const held = await step(ctx, {
      ...makePlan([{ ...base }]),
      suppressTokenOffsets: Int32Array.from([0, 1]),
      suppressTokens: Int32Array.from([plain.tokens[0]!]),
    });
    assert.notEqual(held.tokens[0], plain.tokens[0]);
  });

  it('failNextSteps: the next K steps reject from native code; the context then steps as before', async () => {
    const plan = () => makePlan([{ tokens: PROMPT, start: 0, blocks: [0, 1, 2] }], { returnLogits: 'last' });
    const before = await step(ctx, plan());
    faultTestHooks.failNextSteps(ctx, 2);
    for (let i = 0; i < 2; i++) await assert.rejects(step(ctx, plan()), /step failed: injected fault/);
    // The context is free again (not "already running") and computes the same logits.
    const again = await step(ctx, plan());
    assert.deepEqual(again.tokens, before.tokens);
    assert.ok(maxRelDiff(again.logits!, before.logits!) < 1e-6);
    faultTestHooks.failNextSteps(ctx, 1);
    faultTestHooks.failNextSteps(ctx, 0); // disarms
    assert.deepEqual((await step(ctx, plan())).tokens, before.tokens);
    assert.throws(() => faultTestHooks.failNextSteps(ctx, -1), RangeError);
  });

  describe('plan validation', () => {
    const ok = (): StepPlan => makePlan([{ tokens: [1, 2, 3], start: 0, blocks: [0] }]);
    const cases: Array<[string, (p: StepPlan) => StepPlan, RegExp, typeof TypeError | typeof RangeError]> = [
      [
        'token id out of vocab',
        (p) => ({ ...p, tokens: Int32Array.from([1, 2, 999999]) }),
        /plan\.tokens\[2\]/,
        RangeError,
      ],
      [
        'negative token',
        (p) => ({ ...p, tokens: Int32Array.from([1, -2, 3]) }),
        /plan\.tokens\[1\]/,
        RangeError,
      ],
      [
        'tokens wrong type',
        (p) => ({ ...p, tokens: [1, 2, 3] as unknown as Int32Array }),
        /plan\.tokens must be a Int32Array/,
        TypeError,
      ],
      [
        'positions length',
        (p) => ({ ...p, positions: Int32Array.from([0, 1]) }),
        /plan\.positions/,
        RangeError,
      ],
      [
        'negative position',
        (p) => ({ ...p, positions: Int32Array.from([-1, 0, 1]) }),
        /plan\.positions\[0\]/,
        RangeError,
      ],
      [
        'position beyond block table',
        (p) => ({ ...p, positions: Int32Array.from([7, 8, 9]) }),
        /plan\.positions\[1\].*block table/,
        RangeError,
      ],
      [
        'non-consecutive positions',
        (p) => ({ ...p, positions: Int32Array.from([0, 2, 3]) }),
        /consecutive/,
        RangeError,
      ],
      [
        'offsets not ending at T',
        (p) => ({ ...p, seqTokenOffsets: Int32Array.from([0, 2]) }),
        /plan\.seqTokenOffsets/,
        RangeError,
      ],
      [
        'block id out of range',
        (p) => ({ ...p, blockTables: Int32Array.from([64]) }),
        /plan\.blockTables\[0\]/,
        RangeError,
      ],
      [
        'too many tokens',
        (p) => ({ ...p, tokens: new Int32Array(65), positions: new Int32Array(65) }),
        /maxBatchTokens/,
        RangeError,
      ],
      [
        'mask row out of range',
        (p) => ({ ...p, allowedMaskRows: Int32Array.from([0]) }),
        /plan\.allowedMaskRows\[0\]/,
        RangeError,
      ],
      ['mask length', (p) => ({ ...p, allowedMask: new Int32Array(5) }), /plan\.allowedMask/, RangeError],
      ['topP zero', (p) => ({ ...p, topP: Float32Array.from([0]) }), /plan\.topP\[0\]/, RangeError],
      [
        'temperature NaN',
        (p) => ({ ...p, temperature: Float32Array.from([NaN]) }),
        /plan\.temperature\[0\]/,
        RangeError,
      ],
      [
        'seeds wrong type',
        (p) => ({ ...p, seeds: Int32Array.from([1]) as unknown as BigUint64Array }),
        /plan\.seeds/,
        TypeError,
      ],
      [
        'penalty token out of vocab',
        (p) => ({ ...p, penaltyTokenOffsets: Int32Array.from([0, 1]), penaltyTokens: Int32Array.from([V]) }),
        /plan\.penaltyTokens\[0\]/,
        RangeError,
      ],
      [
        'suppressed token out of vocab',
        (p) => ({
          ...p,
          suppressTokenOffsets: Int32Array.from([0, 1]),
          suppressTokens: Int32Array.from([V]),
        }),
        /plan\.suppressTokens\[0\]/,
        RangeError,
      ],
      [
        'suppressed tokens without offsets',
        (p) => ({ ...p, suppressTokens: Int32Array.from([1]) }),
        /plan\.suppressTokens/,
        RangeError,
      ],
      [
        'odd block copies',
        (p) => ({ ...p, blockCopies: Int32Array.from([1]) }),
        /plan\.blockCopies/,
        RangeError,
      ],
      ['bad returnLogits', (p) => ({ ...p, returnLogits: 'some' as 'all' }), /plan\.returnLogits/, TypeError],
    ];
    for (const [name, mutate, message, type] of cases) {
      it(`rejects ${name}`, async () => {
        await assert.rejects(
          step(ctx, mutate(ok())),
          (err: Error) => err instanceof type && message.test(err.message),
        );
      });
    }
    it('rejects a second concurrent step and a disposed context', async () => {
      const first = step(ctx, ok());
      await assert.rejects(step(ctx, ok()), /already running/);
      await first;
      const other = createContext(model, {
        kvBlocks: 2,
        blockSize: 4,
        maxBatchTokens: 4,
        maxSeqs: 1,
        threads: 1,
      });
      disposeContext(other);
      await assert.rejects(step(other, ok()), /disposed/);
      await assert.rejects(step(model as unknown as ContextHandle, ok()), /must be a context handle/);
    });
  });
});
