/**
 * Model loading: the default GGUF model's description, metadata reading, tiny synthetic
 * GGUF and Hugging Face directories of each supported architecture, handle lifetimes.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  contextInfo,
  cpuFeatures,
  createContext,
  disposeContext,
  disposeModel,
  loadModel,
  modelInfo,
  readGgufMetadata,
  step,
  type ModelHandle,
  type StepPlan,
} from './native.js';
import { ensureDefaultModel } from '../engine/default-model.js';
import { TINY, writeTinyGguf, writeTinyHfDir } from './test-model-files.js';

function greedyPlan(tokens: number[]): StepPlan {
  const T = tokens.length;
  return {
    tokens: Int32Array.from(tokens),
    positions: Int32Array.from(tokens.map((_, i) => i)),
    seqTokenOffsets: Int32Array.from([0, T]),
    blockTableOffsets: Int32Array.from([0, 2]),
    blockTables: Int32Array.from([1, 0]),
    sample: Uint8Array.from([1]),
    temperature: Float32Array.from([0]),
    topK: Int32Array.from([0]),
    topP: Float32Array.from([1]),
    repetitionPenalty: Float32Array.from([1]),
    presencePenalty: Float32Array.from([0]),
    frequencyPenalty: Float32Array.from([0]),
    penaltyTokenOffsets: Int32Array.from([0, 0]),
    penaltyTokens: new Int32Array(0),
    seeds: BigUint64Array.from([0n]),
    sampleCounters: Int32Array.from([0]),
    allowedMaskRows: Int32Array.from([-1]),
    allowedMask: new Int32Array(0),
    topLogprobs: Int32Array.from([-1]),
    returnLogits: 'all',
  };
}

describe('default model', () => {
  let model: ModelHandle;
  const path = ensureDefaultModel();
  before(async () => {
    const progress: number[] = [];
    model = await loadModel(path, (f) => progress.push(f));
    assert.ok(progress.length > 0 && progress[progress.length - 1] === 1, 'progress reaches 1');
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i]! >= progress[i - 1]!);
  });
  after(() => disposeModel(model));

  it('describes SmolLM2-135M', () => {
    const info = modelInfo(model);
    assert.equal(info.format, 'gguf');
    assert.equal(info.architecture, 'llama');
    assert.equal(info.vocabSize, 49152);
    assert.equal(info.hiddenSize, 576);
    assert.equal(info.intermediateSize, 1536);
    assert.equal(info.numLayers, 30);
    assert.equal(info.numHeads, 9);
    assert.equal(info.numKvHeads, 3);
    assert.equal(info.headDim, 64);
    assert.equal(info.contextLength, 8192);
    assert.equal(info.ropeTheta, 100000);
    assert.ok(Math.abs(info.rmsNormEps - 1e-5) < 1e-9);
    assert.equal(info.tiedEmbeddings, true);
    assert.deepEqual(info.tensorTypes, { F32: 61, Q4_1: 210, Q8_0: 1 });
    // Q4_1 layers (~0.625 B/weight) + the Q8_0 tied head (49152 × 576 × 34/32 bytes).
    assert.ok(info.weightBytes > 85e6 && info.weightBytes < 110e6, `weightBytes ${info.weightBytes}`);
    assert.equal(info.residentWeightBytes, info.weightBytes, 'a dense model reads every weight it holds');
    // Its 210 repacked matrices are all under 2 MiB: they were packed into the model's
    // huge-page chunks (kernels/weight_memory.h), whole 2 MiB pages, 32 MiB at a time; the
    // 28.7 MiB head is one buffer of its own. Whichever layout the ISA picks, the Q4_1 bytes
    // come to 73-81 MiB (24 bytes per 32 values, plus scales in the layouts that widen them).
    const mib = 2 ** 20;
    assert.equal(info.weightArenaBytes % (2 * mib), 0, `weightArenaBytes ${info.weightArenaBytes}`);
    assert.ok(
      info.weightArenaBytes >= 64 * mib && info.weightArenaBytes <= 128 * mib,
      `the small matrices' chunks: ${info.weightArenaBytes / mib} MiB`,
    );
  });

  it('reads GGUF metadata with arrays and numbers', () => {
    const meta = readGgufMetadata(path);
    assert.equal(meta['general.architecture'], 'llama');
    assert.equal(meta['llama.block_count'], 30);
    assert.equal(meta['tokenizer.ggml.pre'], 'smollm');
    const tokens = meta['tokenizer.ggml.tokens'];
    assert.ok(Array.isArray(tokens) && tokens.length === 49152 && typeof tokens[0] === 'string');
    assert.equal(typeof meta['tokenizer.chat_template'], 'string');
  });

  it('creates contexts and reports them', () => {
    const ctx = createContext(model, {
      kvBlocks: 16,
      blockSize: 32,
      maxBatchTokens: 64,
      maxSeqs: 4,
      threads: 2,
    });
    const info = contextInfo(ctx);
    assert.equal(info.kvBlocks, 16);
    assert.equal(info.threads, 2);
    // K and V, F16, 30 layers × 3 KV heads × 64 dims per position.
    assert.equal(info.kvBytes, 2 * 2 * 30 * 16 * 32 * 3 * 64);
    assert.equal(info.isa, cpuFeatures().selected);
    disposeContext(ctx);
    assert.throws(() => contextInfo(ctx), /disposed/);
    assert.throws(
      () => createContext(model, { kvBlocks: 0, blockSize: 32, maxBatchTokens: 64, maxSeqs: 4 }),
      /options\.kvBlocks/,
    );
    assert.throws(
      () => createContext(model, { kvBlocks: 4, blockSize: 32, maxBatchTokens: 1.5, maxSeqs: 4 }),
      /maxBatchTokens/,
    );
  });

  it('reports CPU features', () => {
    const f = cpuFeatures();
    assert.equal(typeof f.avx2, 'boolean');
    assert.ok(['avx512', 'avx2', 'reference'].includes(f.selected));
  });
});

describe('tiny models of every architecture', () => {
  const dir = mkdtempSync(join(tmpdir(), 'prism-models-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a GGUF with quantized weights loads and steps', async () => {
    for (const type of ['Q8_0', 'Q4_0', 'F16'] as const) {
      const file = join(dir, `tiny-${type}.gguf`);
      writeTinyGguf(file, TINY, { weightType: type });
      const m = await loadModel(file);
      const info = modelInfo(m);
      assert.equal(info.vocabSize, TINY.vocab);
      assert.equal(info.tiedEmbeddings, true);
      assert.equal(info.name, 'tiny test model');
      const ctx = createContext(m, { kvBlocks: 2, blockSize: 8, maxBatchTokens: 16, maxSeqs: 1, threads: 1 });
      const r = await step(ctx, greedyPlan([1, 2, 3, 4, 5]));
      assert.equal(r.logits!.length, 5 * TINY.vocab);
      assert.ok(r.logits!.every(Number.isFinite));
      disposeContext(ctx);
      disposeModel(m);
      assert.throws(() => modelInfo(m), /disposed/);
    }
  });

  it('GGUFs with K-quants, Q4_1, BF16 and mixed types per layer load and step', async () => {
    const wide = { vocab: 64, hidden: 256, heads: 4, kvHeads: 2, inter: 256, layers: 2 };
    const variants: Array<[string, Parameters<typeof writeTinyGguf>[2]]> = [
      ['Q4_K', { weightType: 'Q4_K' }],
      ['Q6_K', { weightType: 'Q6_K' }],
      ['Q4_1', { weightType: 'Q4_1' }],
      ['BF16', { weightType: 'BF16' }],
      // Like Q4_K_M: V and down in Q6_K (Q/K/V cannot be fused), embedding Q8_0.
      [
        'mixed',
        {
          weightType: 'Q4_K',
          typeFor: (n) =>
            /attn_v|ffn_down/.test(n) ? 'Q6_K' : n.startsWith('token_embd') ? 'Q8_0' : undefined,
        },
      ],
    ];
    for (const [label, opts] of variants) {
      const file = join(dir, `wide-${label}.gguf`);
      writeTinyGguf(file, wide, opts);
      const m = await loadModel(file);
      assert.equal(modelInfo(m).hiddenSize, 256);
      const ctx = createContext(m, { kvBlocks: 2, blockSize: 8, maxBatchTokens: 16, maxSeqs: 1, threads: 2 });
      const r = await step(ctx, greedyPlan([1, 2, 3]));
      assert.ok(r.logits!.every(Number.isFinite), `${label}: finite logits`);
      disposeContext(ctx);
      disposeModel(m);
    }
  });

  it('a safetensors directory with an index file', async () => {
    const d = join(dir, 'indexed');
    writeTinyHfDir(d, 'llama');
    renameSync(join(d, 'model.safetensors'), join(d, 'model-00001-of-00001.safetensors'));
    const header = readFileSync(join(d, 'model-00001-of-00001.safetensors'));
    const names = Object.keys(
      JSON.parse(header.subarray(8, 8 + Number(header.readBigUInt64LE(0))).toString()),
    ).filter((k) => k !== '__metadata__');
    const weightMap = Object.fromEntries(names.map((k) => [k, 'model-00001-of-00001.safetensors']));
    writeFileSync(
      join(d, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: {}, weight_map: weightMap }),
    );
    const m = await loadModel(d);
    assert.equal(modelInfo(m).architecture, 'llama');
    disposeModel(m);
    writeFileSync(
      join(d, 'model.safetensors.index.json'),
      JSON.stringify({ weight_map: { x: '../escape.safetensors' } }),
    );
    await assert.rejects(loadModel(d), /must name a file in the directory/);
  });

  for (const arch of ['llama', 'qwen2', 'qwen3'] as const) {
    for (const dtype of ['F32', 'BF16', 'F16'] as const) {
      it(`a ${arch} safetensors directory (${dtype}) loads and steps`, async () => {
        const d = join(dir, `${arch}-${dtype}`);
        writeTinyHfDir(d, arch, dtype);
        const m = await loadModel(d);
        const info = modelInfo(m);
        assert.equal(info.format, 'safetensors');
        assert.equal(info.architecture, arch);
        assert.equal(info.tiedEmbeddings, arch === 'qwen2');
        assert.deepEqual(Object.keys(info.tensorTypes), [dtype]);
        const ctx = createContext(m, {
          kvBlocks: 2,
          blockSize: 8,
          maxBatchTokens: 16,
          maxSeqs: 1,
          threads: 2,
        });
        const r = await step(ctx, greedyPlan([3, 1, 4, 1, 5, 9]));
        assert.ok(r.logits!.every(Number.isFinite));
        assert.ok(r.tokens[0]! >= 0 && r.tokens[0]! < TINY.vocab);
        disposeContext(ctx);
        disposeModel(m);
      });
    }
  }

  it('a context keeps its model alive after disposeModel', async () => {
    const file = join(dir, 'keep.gguf');
    writeTinyGguf(file);
    const m = await loadModel(file);
    const ctx = createContext(m, { kvBlocks: 2, blockSize: 8, maxBatchTokens: 16, maxSeqs: 1, threads: 1 });
    disposeModel(m);
    const r = await step(ctx, greedyPlan([1, 2]));
    assert.ok(r.logits!.every(Number.isFinite));
    assert.throws(
      () => createContext(m, { kvBlocks: 2, blockSize: 8, maxBatchTokens: 16, maxSeqs: 1 }),
      /disposed/,
    );
    disposeContext(ctx);
  });
});

describe('mixture-of-experts bytes', () => {
  // Two files whose layers hold their experts in different types (as a Q4_K_M file keeps some
  // layers' down experts in Q6_K): the same two layers in swapped order. A token reads 2 of 4
  // experts per layer, whatever the order, so both files read the same bytes per token; a
  // count that took layer 0's expert size for every layer would tell them apart.
  const shape = { ...TINY, experts: 4, expertsUsed: 2 };
  const dir = mkdtempSync(join(tmpdir(), 'prism-moe-bytes-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  async function info(first: 'Q8_0' | 'Q4_0', second: 'Q8_0' | 'Q4_0') {
    const path = join(dir, `${first}-${second}.gguf`);
    writeTinyGguf(path, shape, {
      weightType: 'Q8_0',
      typeFor: (name) => (!name.includes('_exps') ? undefined : name.startsWith('blk.0.') ? first : second),
    });
    const model = await loadModel(path);
    try {
      return modelInfo(model);
    } finally {
      disposeModel(model);
    }
  }

  it("counts each layer's own experts in the bytes a token reads", async () => {
    const a = await info('Q8_0', 'Q4_0');
    const b = await info('Q4_0', 'Q8_0');
    assert.equal(a.experts, 4);
    assert.equal(a.expertsUsed, 2);
    assert.equal(a.residentWeightBytes, b.residentWeightBytes);
    assert.equal(a.weightBytes, b.weightBytes);
    // Half the experts are read: the unread half is more than a quarter of what is held.
    assert.ok(a.weightBytes < a.residentWeightBytes * 0.75, `${a.weightBytes} of ${a.residentWeightBytes}`);
  });
});
