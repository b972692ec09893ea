/**
 * LoRA numerics: Prism's teacher-forced logits with a PEFT adapter applied against a float
 * reference of the same weights with the same adapter (transformers + peft, see
 * test/reference/lora_logits.py), for GGUF bases (the default model, Q4_1, and the llama
 * F32 fixture: both with llama.cpp's permuted Q/K rows) and a safetensors base (qwen2).
 * Prism runs prefill chunks then decode steps with the adapter in slot 1 of 2, and once
 * more without the adapter: the adapter must move the logits far more than Prism's error.
 *
 * Asserts per case: strict top-1 agreement ≥ 99%, mean relative logit error under a
 * bound, and that error at most a fifth of how far the adapter moves the logits.
 */
import { greedySampling } from '../engine/step-plan.js';
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDefaultModel, projectRoot } from '../engine/default-model.js';
import {
  createContext,
  disposeContext,
  disposeModel,
  loadModel,
  modelInfo,
  setAdapterSlot,
  step,
  type StepPlan,
} from '../native/native.js';
import { loadNativeAdapter } from '../engine/adapters/native-adapter.js';
import { adapterFixture } from './adapter-fixtures.js';
import { fixture } from './fixtures.js';
import { loraReferenceLogits } from './reference/lora-reference.js';
import type { ReferenceLogits } from './reference/reference.js';

const PASSAGE = readFileSync(join(projectRoot(), 'test', 'reference', 'passage.txt'), 'utf8');
const MAX_TOKENS = 200;
const CHUNKS = [64, 56, 40];
const BLOCK = 16;

interface Case {
  readonly label: string;
  readonly model: string;
  readonly adapter: string;
  readonly storage: 'F32' | 'F16';
  readonly relBound: number;
}
const cases: Case[] = [];
const refs = new Map<string, ReferenceLogits>();

before(() => {
  const def = ensureDefaultModel();
  const add = (label: string, model: string, adapter: string, storage: 'F32' | 'F16', relBound: number) =>
    cases.push({ label, model, adapter: adapterFixture(adapter).path, storage, relBound });
  add('default+all', def, 'default-all', 'F32', 3e-3);
  add('default+rslora(bf16, F16 storage)', def, 'default-rslora', 'F16', 3e-3);
  add('llama-f32+all', fixture('llama-f32').path, 'llama-all', 'F32', 2e-3);
  add('qwen2-untied-f32+all', fixture('qwen2-untied-f32').path, 'qwen2-all', 'F32', 2e-3);
  const results = loraReferenceLogits(
    cases.map((c) => ({
      model: c.model,
      adapter: c.adapter,
      text: PASSAGE,
      maxTokens: MAX_TOKENS,
      ...(c.model.endsWith('.gguf') ? { tokenizer: def } : {}),
    })),
  );
  cases.forEach((c, i) => refs.set(c.label, results[i]!));
});

/** `firstBlock`: the adapter run and the base run keep their KV in separate blocks. */
function plan(ids: Int32Array, start: number, n: number, slot: number, firstBlock: number): StepPlan {
  const blocks = Math.ceil((start + n) / BLOCK);
  return {
    tokens: ids.slice(start, start + n),
    positions: Int32Array.from({ length: n }, (_, i) => start + i),
    seqTokenOffsets: Int32Array.of(0, n),
    blockTableOffsets: Int32Array.of(0, blocks),
    blockTables: Int32Array.from({ length: blocks }, (_, i) => firstBlock + i),
    sample: Uint8Array.of(0),
    ...greedySampling(1),
    adapterSlots: Int32Array.of(slot),
    returnLogits: 'all',
  };
}

function argmax(a: Float32Array, o: number, n: number): number {
  let best = 0;
  for (let i = 1; i < n; i++) if (a[o + i]! > a[o + best]!) best = i;
  return best;
}

function relDiff(a: Float32Array, b: Float32Array, o: number, n: number): number {
  let d2 = 0;
  let b2 = 0;
  for (let i = 0; i < n; i++) {
    const d = a[o + i]! - b[o + i]!;
    d2 += d * d;
    b2 += b[o + i]! * b[o + i]!;
  }
  return Math.sqrt(d2 / b2);
}

for (const label of [
  'default+all',
  'default+rslora(bf16, F16 storage)',
  'llama-f32+all',
  'qwen2-untied-f32+all',
]) {
  test(`LoRA teacher-forced logits match transformers + peft: ${label}`, async () => {
    const c = cases.find((x) => x.label === label)!;
    const ref = refs.get(label)!;
    const model = await loadModel(c.model);
    const V = modelInfo(model).vocabSize;
    assert.equal(V, ref.vocab);
    const total = ref.positions;
    const ctx = createContext(model, {
      kvBlocks: 2 * Math.ceil(total / BLOCK),
      blockSize: BLOCK,
      maxBatchTokens: Math.max(...CHUNKS),
      maxSeqs: 1,
      maxLoras: 2,
      maxLoraRank: 64,
    });
    const { handle } = loadNativeAdapter(model, c.adapter, c.storage);
    setAdapterSlot(ctx, 1, handle);
    let agree = 0;
    let relSum = 0;
    let moveSum = 0;
    try {
      const chunks = [...CHUNKS];
      for (let p = CHUNKS.reduce((a, b) => a + b, 0); p < total; p++) chunks.push(1);
      let start = 0;
      for (const n of chunks) {
        const withAdapter = (await step(ctx, plan(ref.ids, start, n, 1, 0))).logits!;
        const base = (await step(ctx, plan(ref.ids, start, n, -1, Math.ceil(total / BLOCK)))).logits!;
        const r = ref.rows(start, n);
        for (let t = 0; t < n; t++) {
          if (argmax(withAdapter, t * V, V) === argmax(r, t * V, V)) agree++;
          relSum += relDiff(withAdapter, r, t * V, V);
          moveSum += relDiff(base, r, t * V, V);
        }
        start += n;
      }
    } finally {
      disposeContext(ctx);
      disposeModel(model);
    }
    const top1 = agree / total;
    const rel = relSum / total;
    const moved = moveSum / total;
    console.log(
      `lora numerics ${label.padEnd(34)} positions=${total} top1=${(top1 * 100).toFixed(2)}% ` +
        `relErr mean=${rel.toExponential(2)} (base vs adapter reference: ${moved.toExponential(2)})`,
    );
    assert.ok(top1 >= 0.99, `${label}: top-1 agreement ${(top1 * 100).toFixed(2)}% < 99%`);
    assert.ok(rel <= c.relBound, `${label}: mean relative error ${rel.toExponential(2)} > ${c.relBound}`);
    assert.ok(
      rel * 5 <= moved,
      `${label}: the adapter moves the logits (${moved}) hardly more than the error (${rel})`,
    );
  });
}
