/**
 * The native sampler's min-p and typical-p against Hugging Face's warpers (MinPLogitsWarper,
 * TypicalLogitsWarper, after TemperatureLogitsWarper / TopK / TopP as `generate` orders them)
 * on the same logits: every sampled token is in the set the reference keeps, and the sampled
 * frequencies follow the reference's renormalised probabilities. Plus logit_bias forcing and
 * forbidding a greedy token. Seeded draws of one prompt, 32 sequences a step.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
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
import { pythonCommand } from '../test/fixtures.js';

interface Warp {
  temperature: number;
  topK?: number;
  topP?: number;
  minP?: number;
  typicalP?: number;
}

/** Hugging Face's kept tokens and their probabilities for each warp of `logits`. */
function reference(logits: Float32Array, warps: readonly Warp[]): Map<number, number>[] {
  const script = `
import json, sys, torch
from transformers.generation.logits_process import (TemperatureLogitsWarper, TopKLogitsWarper,
    TopPLogitsWarper, MinPLogitsWarper, TypicalLogitsWarper)
d = json.load(sys.stdin)
scores0 = torch.tensor([d["logits"]], dtype=torch.float32)
out = []
for w in d["warps"]:
    procs = [TemperatureLogitsWarper(w["temperature"])]
    if w.get("topK"): procs.append(TopKLogitsWarper(w["topK"]))
    if w.get("topP", 1) < 1: procs.append(TopPLogitsWarper(w["topP"]))
    if w.get("minP"): procs.append(MinPLogitsWarper(w["minP"]))
    if w.get("typicalP", 1) < 1: procs.append(TypicalLogitsWarper(w["typicalP"]))
    s = scores0.clone()
    for p in procs: s = p(None, s)
    probs = torch.softmax(s, dim=-1)[0]
    ids = torch.nonzero(probs > 0).flatten().tolist()
    out.append([[i, probs[i].item()] for i in ids])
print(json.dumps(out))
`;
  const stdout = execFileSync(pythonCommand(), ['-c', script], {
    input: JSON.stringify({ logits: Array.from(logits), warps }),
    maxBuffer: 1 << 24,
  });
  return (JSON.parse(stdout.toString()) as [number, number][][]).map((kept) => new Map(kept));
}

describe('sampler warpers (min-p, typical-p, logit bias)', () => {
  let model: ModelHandle;
  let ctx: ContextHandle;
  let V = 0;
  const prompt = [504, 3575, 282];

  before(async () => {
    model = await loadModel(ensureDefaultModel());
    V = modelInfo(model).vocabSize;
    ctx = createContext(model, { kvBlocks: 32, blockSize: 8, maxBatchTokens: 96, maxSeqs: 32, threads: 2 });
  });
  after(() => {
    disposeContext(ctx);
    disposeModel(model);
  });

  /** One step of S copies of `prompt`, each its own seed, with `extra` fields. */
  function plan(S: number, seed0: number, w: Partial<Warp>, extra: Partial<StepPlan> = {}): StepPlan {
    return {
      ...greedySampling(S),
      tokens: Int32Array.from({ length: S * prompt.length }, (_, i) => prompt[i % prompt.length]!),
      positions: Int32Array.from({ length: S * prompt.length }, (_, i) => i % prompt.length),
      seqTokenOffsets: Int32Array.from({ length: S + 1 }, (_, s) => s * prompt.length),
      blockTableOffsets: Int32Array.from({ length: S + 1 }, (_, s) => s),
      blockTables: Int32Array.from({ length: S }, (_, s) => s),
      sample: new Uint8Array(S).fill(1),
      temperature: new Float32Array(S).fill(w.temperature ?? 0),
      topK: new Int32Array(S).fill(w.topK ?? 0),
      topP: new Float32Array(S).fill(w.topP ?? 1),
      seeds: BigUint64Array.from({ length: S }, (_, s) => BigInt(seed0 + s)),
      ...(w.minP !== undefined ? { minP: new Float32Array(S).fill(w.minP) } : {}),
      ...(w.typicalP !== undefined ? { typicalP: new Float32Array(S).fill(w.typicalP) } : {}),
      ...extra,
    };
  }

  it('min-p and typical-p keep what transformers keeps, with its probabilities', async () => {
    const base = await step(ctx, { ...plan(1, 0, {}), returnLogits: 'last' });
    const logits = base.logits!;
    const warps: Warp[] = [
      { temperature: 1.5 },
      { temperature: 1.5, minP: 0.1 },
      { temperature: 1.5, typicalP: 0.6 },
      { temperature: 1.5, topK: 40, topP: 0.95, minP: 0.05, typicalP: 0.8 },
    ];
    const ref = reference(logits, warps);
    const unwarped = ref[0]!;
    const S = 32;
    const rounds = 7;
    for (const [k, w] of warps.entries()) {
      if (k === 0) continue;
      const kept = ref[k]!;
      // The warp matters here: it drops a good share of what temperature alone leaves.
      let dropped = 0;
      for (const [t, p] of unwarped) if (!kept.has(t)) dropped += p;
      assert.ok(
        kept.size >= 2 && dropped > 0.2,
        `warp ${JSON.stringify(w)}: ${kept.size} kept, ${dropped} dropped`,
      );
      const counts = new Map<number, number>();
      for (let round = 0; round < rounds; round++) {
        const r = await step(ctx, plan(S, 1000 * k + round * S, w));
        for (const t of r.tokens) counts.set(t, (counts.get(t) ?? 0) + 1);
      }
      for (const t of counts.keys())
        assert.ok(kept.has(t), `${JSON.stringify(w)}: token ${t} is outside the kept set`);
      for (const [t, p] of kept) {
        const freq = (counts.get(t) ?? 0) / (S * rounds);
        assert.ok(
          Math.abs(freq - p) < 0.1,
          `${JSON.stringify(w)}: token ${t} frequency ${freq} vs ${p.toFixed(3)}`,
        );
      }
    }
  });

  it('logit bias: +100 forces a token under greedy, -100 forbids the greedy one', async () => {
    const plain = await step(ctx, plan(1, 0, {}));
    const greedy = plain.tokens[0]!;
    const target = (greedy + 1234) % V;
    const biased = (token: number, value: number) =>
      step(
        ctx,
        plan(
          2,
          0,
          {},
          {
            logitBiasOffsets: Int32Array.from([0, 1, 1]),
            logitBiasTokens: Int32Array.from([token]),
            logitBiasValues: Float32Array.from([value]),
          },
        ),
      );
    const forced = await biased(target, 100);
    assert.equal(forced.tokens[0], target);
    assert.equal(forced.tokens[1], greedy, 'the other sequence has no bias');
    const forbidden = await biased(greedy, -100);
    assert.notEqual(forbidden.tokens[0], greedy);
    assert.equal(forbidden.tokens[1], greedy);
  });

  it('rejects bad warper fields, naming them', async () => {
    const bad: [string, Partial<StepPlan>, RegExp][] = [
      ['minP out of range', { minP: Float32Array.from([1.5]) }, /plan\.minP\[0\]: must be in \[0, 1\]/],
      ['typicalP 0', { typicalP: Float32Array.from([0]) }, /plan\.typicalP\[0\]/],
      [
        'a bias token outside the vocabulary',
        {
          logitBiasOffsets: Int32Array.from([0, 1]),
          logitBiasTokens: Int32Array.from([V]),
          logitBiasValues: Float32Array.from([1]),
        },
        /plan\.logitBiasTokens\[0\]/,
      ],
      [
        'bias values missing',
        { logitBiasOffsets: Int32Array.from([0, 1]), logitBiasTokens: Int32Array.from([3]) },
        /plan\.logitBiasValues/,
      ],
    ];
    for (const [name, extra, message] of bad)
      await assert.rejects(step(ctx, plan(1, 0, {}, extra)), message, name);
  });
});
