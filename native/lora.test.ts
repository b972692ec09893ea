/**
 * Batched multi-LoRA in the native step (native/src/lora*): adapters made with `peft`
 * (scripts/make-adapters.py) on the default model.
 *  - a B = 0 adapter leaves every logit bit-identical to the base model's;
 *  - the same prompt gives the same greedy tokens for an adapter alone and inside one batch
 *    mixing 4 adapters and the base model (and each adapter does change the tokens);
 *  - F16 storage agrees with F32 storage;
 *  - plan/slot/adapter validation: unbound slots, ranks above maxLoraRank, adapters of
 *    another model's shape, binding while a step runs.
 * Agreement with a float reference (transformers + peft) is in test/lora-numerics.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  adapterInfo,
  createContext,
  disposeContext,
  disposeModel,
  loadModel,
  setAdapterSlot,
  step,
  type AdapterHandle,
  type ContextHandle,
  type ModelHandle,
  type StepPlan,
} from './native.js';
import { ensureDefaultModel } from '../engine/default-model.js';
import { adapterFixture } from '../test/adapter-fixtures.js';
import { loadNativeAdapter } from '../engine/adapters/native-adapter.js';
import { fixture } from '../test/fixtures.js';
import { greedySampling } from '../engine/step-plan.js';

const BLOCK = 16;
const BLOCKS_PER_SEQ = 4;
const PROMPTS = [
  [1, 504, 3458, 282, 4600, 314, 253, 1345, 30, 198],
  [1, 1073, 314, 253, 2634, 282, 6123, 30],
  [1, 2683, 7175, 3100, 28, 5248, 314],
  [1, 7372, 3117, 253, 1458, 1096, 288, 3717, 6375, 30, 378],
  [1, 22, 1232, 22, 1232, 22, 1232],
];
const NEW_TOKENS = 12;

interface Seq {
  prompt: number[];
  slot: number;
}

function plan(
  parts: { tokens: number[]; start: number; seq: number; slot: number }[],
  logits = false,
): StepPlan {
  const S = parts.length;
  const offsets = [0];
  for (const p of parts) offsets.push(offsets[offsets.length - 1]! + p.tokens.length);
  return {
    tokens: Int32Array.from(parts.flatMap((p) => p.tokens)),
    positions: Int32Array.from(parts.flatMap((p) => p.tokens.map((_, i) => p.start + i))),
    seqTokenOffsets: Int32Array.from(offsets),
    blockTableOffsets: Int32Array.from({ length: S + 1 }, (_, i) => i * BLOCKS_PER_SEQ),
    blockTables: Int32Array.from(
      parts.flatMap((p) => Array.from({ length: BLOCKS_PER_SEQ }, (_, b) => p.seq * BLOCKS_PER_SEQ + b)),
    ),
    sample: new Uint8Array(S).fill(1),
    ...greedySampling(S),
    adapterSlots: Int32Array.from(parts.map((p) => p.slot)),
    returnLogits: logits ? 'last' : 'none',
  };
}

/** Greedy generation for all `seqs` together (one prefill step, then decode steps). */
async function generate(
  ctx: ContextHandle,
  seqs: Seq[],
): Promise<{ tokens: number[][]; firstLogits: Float32Array }> {
  const out: number[][] = seqs.map(() => []);
  let r = await step(
    ctx,
    plan(
      seqs.map((s, i) => ({ tokens: s.prompt, start: 0, seq: i, slot: s.slot })),
      true,
    ),
  );
  const firstLogits = r.logits!;
  for (let n = 0; ; n++) {
    seqs.forEach((_, i) => out[i]!.push(r.tokens[i]!));
    if (n + 1 === NEW_TOKENS) break;
    r = await step(
      ctx,
      plan(seqs.map((s, i) => ({ tokens: [out[i]![n]!], start: s.prompt.length + n, seq: i, slot: s.slot }))),
    );
  }
  return { tokens: out, firstLogits };
}

describe('native batched LoRA on the default model', () => {
  let model: ModelHandle;
  let ctx: ContextHandle;
  const handles = new Map<string, AdapterHandle>();
  const names = ['default-qv', 'default-all', 'default-rslora', 'default-mlp'];

  before(async () => {
    model = await loadModel(ensureDefaultModel());
    ctx = createContext(model, {
      kvBlocks: PROMPTS.length * BLOCKS_PER_SEQ,
      blockSize: BLOCK,
      maxBatchTokens: 64,
      maxSeqs: 8,
      maxLoras: 4,
      maxLoraRank: 16,
    });
    for (const n of [...names, 'default-zero'])
      handles.set(n, loadNativeAdapter(model, adapterFixture(n).path, 'F32').handle);
  });
  after(() => {
    disposeContext(ctx);
    disposeModel(model);
  });

  it('a B = 0 adapter gives exactly the base model (logits bit for bit, tokens)', async () => {
    setAdapterSlot(ctx, 0, handles.get('default-zero')!);
    const base = await generate(ctx, [{ prompt: PROMPTS[0]!, slot: -1 }]);
    const zero = await generate(ctx, [{ prompt: PROMPTS[0]!, slot: 0 }]);
    assert.deepEqual(zero.tokens, base.tokens);
    assert.deepEqual(Array.from(zero.firstLogits), Array.from(base.firstLogits));
  });

  it('the same prompt gives the same tokens alone and in a batch of 4 adapters + the base', async () => {
    names.forEach((n, slot) => setAdapterSlot(ctx, slot, handles.get(n)!));
    const seqs: Seq[] = [
      ...names.map((_, slot) => ({ prompt: PROMPTS[slot]!, slot })),
      { prompt: PROMPTS[4]!, slot: -1 },
    ];
    const alone: number[][] = [];
    for (const s of seqs) alone.push((await generate(ctx, [s])).tokens[0]!);
    const mixed = await generate(ctx, seqs);
    assert.deepEqual(mixed.tokens, alone);
    // The adapters do something: each prompt's tokens under its adapter differ from the base's.
    for (let slot = 0; slot < names.length; slot++) {
      const base = (await generate(ctx, [{ prompt: PROMPTS[slot]!, slot: -1 }])).tokens[0]!;
      assert.notDeepEqual(alone[slot], base, `${names[slot]} changed nothing`);
    }
    // The same prompt under 4 adapters and the base, in one batch, gives 5 different answers.
    const samePrompt = await generate(
      ctx,
      [0, 1, 2, 3, -1].map((slot) => ({ prompt: PROMPTS[0]!, slot })),
    );
    for (let i = 0; i < 4; i++) {
      assert.deepEqual(
        samePrompt.tokens[i],
        (await generate(ctx, [{ prompt: PROMPTS[0]!, slot: i }])).tokens[0],
      );
    }
  });

  it('F16 storage gives the tokens of F32 storage', async () => {
    const f16 = loadNativeAdapter(model, adapterFixture('default-all').path, 'F16').handle;
    assert.equal(adapterInfo(f16).storage, 'F16');
    assert.equal(adapterInfo(f16).bytes * 2, adapterInfo(handles.get('default-all')!).bytes);
    setAdapterSlot(ctx, 1, handles.get('default-all')!);
    const a = await generate(ctx, [{ prompt: PROMPTS[1]!, slot: 1 }]);
    setAdapterSlot(ctx, 1, f16);
    const b = await generate(ctx, [{ prompt: PROMPTS[1]!, slot: 1 }]);
    assert.deepEqual(b.tokens, a.tokens);
  });

  it('refuses unbound slots, too-large ranks, foreign adapters and binding during a step', async () => {
    setAdapterSlot(ctx, 3, null);
    await assert.rejects(
      step(ctx, plan([{ tokens: [1, 2], start: 0, seq: 0, slot: 3 }])),
      /adapterSlots\[0\]: must be -1/,
    );
    await assert.rejects(
      step(ctx, plan([{ tokens: [1, 2], start: 0, seq: 0, slot: 9 }])),
      /adapterSlots\[0\]/,
    );
    await assert.rejects(
      step(ctx, plan([{ tokens: [1, 2], start: 0, seq: 0, slot: -2 }])),
      /adapterSlots\[0\]/,
    );
    assert.throws(() => setAdapterSlot(ctx, 4, null), /slot must be an integer in \[0, 4\)/);
    const r64 = loadNativeAdapter(model, adapterFixture('default-r64').path).handle;
    assert.throws(() => setAdapterSlot(ctx, 0, r64), /adapter rank 64 exceeds the context's maxLoraRank 16/);
    const tiny = await loadModel(fixture('llama-f32').path);
    const foreign = loadNativeAdapter(tiny, adapterFixture('llama-all').path).handle;
    assert.throws(() => setAdapterSlot(ctx, 0, foreign), /built for a model of another shape/);
    disposeModel(tiny);
    setAdapterSlot(ctx, 0, handles.get('default-qv')!);
    const running = step(ctx, plan([{ tokens: [1, 2, 3], start: 0, seq: 0, slot: 0 }]));
    assert.throws(() => setAdapterSlot(ctx, 0, null), /the running step uses slot 0/);
    setAdapterSlot(ctx, 2, handles.get('default-mlp')!); // a slot the running step does not use
    await running;
    assert.throws(
      () => createContext(model, { kvBlocks: 1, blockSize: 16, maxBatchTokens: 8, maxSeqs: 1, maxLoras: 2 }),
      /maxLoraRank must be >= 1/,
    );
  });
});
