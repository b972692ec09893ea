/**
 * Mixture-of-experts steps give a token the same logits, bit for bit, whatever route its
 * experts take (native/src/moe.cc): a one-token step on two threads runs every chosen expert
 * in two parallel regions, each thread on a row range of every expert; on one thread, and in
 * a step of several tokens, the experts run one after another, batched by expert. The
 * fixtures' experts are 64 rows, so the two threads split every matrix.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  createContext,
  disposeContext,
  disposeModel,
  loadModel,
  modelInfo,
  step,
  type ContextHandle,
  type StepPlan,
} from './native.js';
import { fixture } from '../test/fixtures.js';
import { greedyPlan } from '../bench/engine/plan.js';

const TOKENS = [504, 3575, 282, 4649, 314, 7042, 30, 378, 3575, 282, 7062, 314];
const BLOCKS = [3, 0, 2, 1];

const BLOCK_SIZE = 16;

function plan(tokens: readonly number[], start: number): StepPlan {
  return {
    ...greedyPlan([{ tokens, startPosition: start, blocks: BLOCKS, sample: true }], BLOCK_SIZE),
    returnLogits: 'all',
  };
}

/** Logits of every token of TOKENS, fed `perStep` tokens per step. */
async function logitsOf(ctx: ContextHandle, perStep: number): Promise<Float32Array[]> {
  const rows: Float32Array[] = [];
  for (let p = 0; p < TOKENS.length; p += perStep) {
    const r = await step(ctx, plan(TOKENS.slice(p, p + perStep), p));
    assert.ok(r.logits);
    const V = r.logits.length / Math.min(perStep, TOKENS.length - p);
    for (let i = 0; i * V < r.logits.length; i++) rows.push(r.logits.slice(i * V, (i + 1) * V));
  }
  return rows;
}

function assertSameBits(a: Float32Array[], b: Float32Array[], what: string): void {
  assert.equal(a.length, b.length);
  for (let t = 0; t < a.length; t++) {
    const x = new Uint32Array(a[t]!.buffer, a[t]!.byteOffset, a[t]!.length);
    const y = new Uint32Array(b[t]!.buffer, b[t]!.byteOffset, b[t]!.length);
    const at = x.findIndex((v, i) => v !== y[i]);
    assert.equal(at, -1, `${what}: token ${t} differs at logit ${at}`);
  }
}

for (const [name, activations] of [
  ['qwen3moe-gguf-q8_0', 'auto'],
  ['qwen3moe-gguf-q8_0', 'int8'],
  ['mixtral-gguf-f32', 'auto'],
] as const) {
  describe(`mixture-of-experts routes, ${name} (activations ${activations})`, () => {
    it('one-token steps on two threads = on one thread = one step of all the tokens', async () => {
      const before = process.env.PRISM_ACTIVATIONS;
      process.env.PRISM_ACTIVATIONS = activations;
      const model = await loadModel(fixture(name).path);
      if (before === undefined) delete process.env.PRISM_ACTIVATIONS;
      else process.env.PRISM_ACTIVATIONS = before;
      try {
        assert.ok(modelInfo(model).experts > 0);
        const runs: Float32Array[][] = [];
        for (const [threads, perStep] of [
          [2, 1],
          [1, 1],
          [2, TOKENS.length],
        ] as const) {
          const ctx = createContext(model, {
            kvBlocks: 4,
            blockSize: BLOCK_SIZE,
            maxBatchTokens: 16,
            maxSeqs: 1,
            threads,
          });
          try {
            runs.push(await logitsOf(ctx, perStep));
          } finally {
            disposeContext(ctx);
          }
        }
        assertSameBits(runs[0]!, runs[1]!, 'two threads against one');
        assertSameBits(runs[0]!, runs[2]!, 'one token per step against one step');
      } finally {
        disposeModel(model);
      }
    });
  });
}
