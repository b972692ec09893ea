/**
 * The CUDA backend behind native.ts, on a machine without a GPU:
 *  - asked for where it cannot run, it fails with an error that says why (here: the library
 *    is not there);
 *  - through the CPU emulation of CUDA (build/cuda-emu/libprism_cuda_emu.so, selected with
 *    PRISM_CUDA_LIBRARY), the whole device path — weights uploaded and laid out, KV cache on
 *    the "device", the forward pass, sampling, late masks, logits — gives the CPU engine's
 *    greedy tokens and logits on small models of every weight type and architecture.
 * scripts/device-check.sh runs this file on a GPU with PRISM_TEST_CUDA_LIBRARY naming the real
 * library (build/Release/libprism_cuda.so): the same comparisons, on the card.
 */
import { cudaTestLibrary } from './test-library.js';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  contextInfo,
  createContext,
  CUDA_KERNELS,
  cudaDevices,
  disposeContext,
  disposeModel,
  loadModel,
  modelInfo,
  step,
  TENSOR_TYPES,
  supplyMasks,
  type Device,
  type ModelHandle,
  type StepPlan,
  type TensorType,
} from '../native.js';
import { writeTinyGguf, writeTinyHfDir, type TinyShape } from '../test-model-files.js';
import { greedySampling } from '../../engine/step-plan.js';
import { startSpeculation, type ServedContext } from '../../engine/speculative/start.js';

let dir: string;
/** The library under test: the CPU emulation build, or PRISM_TEST_CUDA_LIBRARY (a GPU build). */
let library: string;

/** Shapes the device takes: rows of 32 values, K-quant blocks of 256. */
const SHAPE: TinyShape = { vocab: 300, hidden: 256, heads: 4, kvHeads: 2, inter: 512, layers: 2 };

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'prism-cuda-'));
  library = cudaTestLibrary();
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
  delete process.env.PRISM_CUDA_LIBRARY;
});

function useLibrary(path: string | undefined): void {
  if (path === undefined) delete process.env.PRISM_CUDA_LIBRARY;
  else process.env.PRISM_CUDA_LIBRARY = path;
}

interface Seq {
  tokens: number[];
  start: number;
}

/** A plan of one or more sequences, each with its own 4 blocks of 16 (a shuffled table). */
function plan(seqs: Seq[], opts: Partial<StepPlan> = {}): StepPlan {
  const tokens: number[] = [];
  const positions: number[] = [];
  const offsets = [0];
  const tables: number[] = [];
  const tableOffsets = [0];
  seqs.forEach((s, i) => {
    s.tokens.forEach((t, k) => {
      tokens.push(t);
      positions.push(s.start + k);
    });
    offsets.push(tokens.length);
    tables.push(4 * i + 3, 4 * i + 1, 4 * i + 2, 4 * i);
    tableOffsets.push(tables.length);
  });
  const S = seqs.length;
  return {
    tokens: Int32Array.from(tokens),
    positions: Int32Array.from(positions),
    seqTokenOffsets: Int32Array.from(offsets),
    blockTableOffsets: Int32Array.from(tableOffsets),
    blockTables: Int32Array.from(tables),
    sample: new Uint8Array(S).fill(1),
    ...greedySampling(S),
    seeds: new BigUint64Array(S).fill(7n),
    topLogprobs: new Int32Array(S).fill(2),
    returnLogits: 'last',
    ...opts,
  };
}

function relError(a: Float32Array, b: Float32Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < a.length; i++) {
    num += (a[i]! - b[i]!) ** 2;
    den += b[i]! ** 2;
  }
  return Math.sqrt(num / den);
}

/**
 * Prefill of two sequences (14 and 9 tokens: the GEMM path), then decode steps of both (the
 * GEMV path), greedy. Returns each step's tokens and last-token logits.
 */
async function run(model: ModelHandle): Promise<{ tokens: number[][]; logits: Float32Array[] }> {
  const ctx = createContext(model, {
    kvBlocks: 8,
    blockSize: 16,
    maxBatchTokens: 32,
    maxSeqs: 2,
    threads: 1,
  });
  try {
    const a: Seq = { tokens: [5, 17, 2, 99, 3, 250, 8, 8, 41, 7, 0, 13, 200, 64], start: 0 };
    const b: Seq = { tokens: [1, 2, 3, 4, 5, 6, 7, 8, 9], start: 0 };
    const tokens: number[][] = [];
    const logits: Float32Array[] = [];
    let r = await step(ctx, plan([a, b]));
    tokens.push(Array.from(r.tokens));
    logits.push(r.logits!);
    let pos = [a.tokens.length, b.tokens.length];
    for (let i = 0; i < 3; i++) {
      const last = tokens[tokens.length - 1]!;
      r = await step(
        ctx,
        plan([
          { tokens: [last[0]!], start: pos[0]! },
          { tokens: [last[1]!], start: pos[1]! },
        ]),
      );
      tokens.push(Array.from(r.tokens));
      logits.push(r.logits!);
      pos = pos.map((p) => p + 1);
    }
    return { tokens, logits };
  } finally {
    disposeContext(ctx);
  }
}

/** The types whose fast decode GEMV rounds x to int8 per 32 values (gemv_fast.h). */
const INT8_X_TYPES = ['Q8_0', 'Q4_0', 'Q4_1', 'Q4_K'];

/** The CPU engine's tokens and logits with its activations rounded as PRISM_ACTIVATIONS says. */
async function runCpu(path: string, activations?: 'int8'): Promise<Awaited<ReturnType<typeof run>>> {
  const before = process.env.PRISM_ACTIVATIONS;
  if (activations) process.env.PRISM_ACTIVATIONS = activations;
  try {
    const m = await loadModel(path);
    try {
      return await run(m);
    } finally {
      disposeModel(m);
    }
  } finally {
    if (before === undefined) delete process.env.PRISM_ACTIVATIONS;
    else process.env.PRISM_ACTIVATIONS = before;
  }
}

/**
 * Both kernel sets of the device against the CPU engine: greedy tokens equal, logits within
 * 2e-2. The fast set's decode rounds x to int8 per 32 values for the INT8_X_TYPES (the CPU
 * engine's own scheme from hidden 1024 up; these tiny random models get int16 there, and
 * int8 rounding moves their logits by a few 1e-2): for a file with such matrices the fast
 * set may differ from the CPU by at most 1.5× what the CPU's own int8 run differs by.
 */
async function compare(path: string, label: string): Promise<void> {
  useLibrary(library);
  const cpu = await runCpu(path);
  const probe = await loadModel(path);
  const int8X = Object.keys(modelInfo(probe).tensorTypes).some((t) => INT8_X_TYPES.includes(t));
  disposeModel(probe);
  const cpuInt8 = int8X ? await runCpu(path, 'int8') : undefined;
  for (const cudaKernels of CUDA_KERNELS) {
    const gpuModel = await loadModel(path, undefined, { device: 'cuda:0', cudaKernels });
    try {
      assert.equal(modelInfo(gpuModel).device, 'cuda:0');
      assert.equal(modelInfo(gpuModel).deviceName, cudaDevices()[0]!.name);
      assert.equal(modelInfo(gpuModel).cudaKernels, cudaKernels);
      const gpu = await run(gpuModel);
      const at = `${label} (${cudaKernels} kernels)`;
      assert.deepEqual(gpu.tokens, cpu.tokens, `${at}: greedy tokens`);
      // Prefill multiplies in bf16 on the device (its KV carries that rounding into decode);
      // the CPU in f32 or int16: logits agree to a few 1e-3.
      for (let i = 0; i < cpu.logits.length; i++) {
        const err = relError(gpu.logits[i]!, cpu.logits[i]!);
        const int8Bound =
          cudaKernels === 'fast' && cpuInt8 ? 1.5 * relError(cpuInt8.logits[i]!, cpu.logits[i]!) : 0;
        const bound = Math.max(2e-2, int8Bound);
        assert.ok(err < bound, `${at}: step ${i} logits differ by ${err} (bound ${bound})`);
      }
    } finally {
      disposeModel(gpuModel);
    }
  }
}

test('CUDA asked for where its library is missing: an error that says so', async () => {
  useLibrary(join(dir, 'no-such-libprism_cuda.so'));
  assert.throws(() => cudaDevices(), /cannot load the CUDA backend .*no-such-libprism_cuda\.so/);
  const path = join(dir, 'tiny.gguf');
  writeTinyGguf(path, SHAPE, { weightType: 'F32' });
  await assert.rejects(loadModel(path, undefined, { device: 'cuda:0' }), /cannot load the CUDA backend/);
});

test('the device lists itself and the model reports where it runs', async () => {
  useLibrary(library);
  const devices = cudaDevices();
  assert.ok(devices.length >= 1);
  assert.equal(devices[0]!.device, 'cuda:0');
  assert.equal(devices[0]!.emulated, library.includes('cuda-emu'), 'the emulation build says it is one');
  const path = join(dir, 'tiny-info.gguf');
  writeTinyGguf(path, SHAPE, { weightType: 'Q8_0' });
  const missing = `cuda:${devices.length}` as Device;
  await assert.rejects(
    loadModel(path, undefined, { device: missing }),
    new RegExp(`${missing} does not exist`),
  );
  const m = await loadModel(path, undefined, { device: 'cuda:0' });
  const ctx = createContext(m, { kvBlocks: 4, blockSize: 16, maxBatchTokens: 8, maxSeqs: 1 });
  const info = contextInfo(ctx);
  assert.equal(info.device, 'cuda:0');
  assert.equal(info.isa, 'cuda');
  assert.equal(info.kvBytes, 2 * 2 * SHAPE.layers * 4 * 16 * SHAPE.kvHeads * (SHAPE.hidden / SHAPE.heads));
  assert.throws(
    () =>
      createContext(m, {
        kvBlocks: 4,
        blockSize: 16,
        maxBatchTokens: 8,
        maxSeqs: 1,
        maxLoras: 1,
        maxLoraRank: 4,
      }),
    /LoRA adapters are not supported on a CUDA device/,
  );
  // A plan that breaks a rule is refused by the same reader as on the CPU.
  await assert.rejects(step(ctx, plan([{ tokens: [SHAPE.vocab], start: 0 }])), /plan\.tokens\[0\]/);
  disposeContext(ctx);
  disposeModel(m);
});

/** The device takes every kernel storage type (those of issue 26 from Q5_0 on). */
const DEVICE_TYPES: readonly TensorType[] = TENSOR_TYPES;

for (const type of DEVICE_TYPES) {
  test(`greedy tokens and logits on the device equal the CPU's: llama ${type}`, async () => {
    const path = join(dir, `tiny-${type}.gguf`);
    writeTinyGguf(path, SHAPE, { weightType: type });
    await compare(path, `llama ${type}`);
  });
}

test("a mixed-type file (Q4_K with Q6_K parts, as llama.cpp's Q4_K_M) on the device", async () => {
  const path = join(dir, 'tiny-mixed.gguf');
  writeTinyGguf(path, SHAPE, {
    weightType: 'Q4_K',
    typeFor: (name) =>
      name.endsWith('attn_v.weight') || name.endsWith('ffn_down.weight') ? 'Q6_K' : undefined,
  });
  await compare(path, 'llama Q4_K_M-style mix');
});

// As llama.cpp's Q5_K_M, Q3_K_M and IQ4_XS files mix types: several parts of one fused
// matrix (Q/K/V, gate/up) in different types, each decoded by its own kernel.
const MIXES: Array<[string, TensorType, (name: string) => TensorType | undefined]> = [
  ['Q5_K_M-style (Q5_K, Q6_K V and down)', 'Q5_K', (n) => (/attn_v|ffn_down/.test(n) ? 'Q6_K' : undefined)],
  [
    'Q3_K_M-style (Q3_K, Q4_K V and output, Q5_K down)',
    'Q3_K',
    (n) => (/attn_v|attn_output/.test(n) ? 'Q4_K' : n.includes('ffn_down') ? 'Q5_K' : undefined),
  ],
  [
    'IQ4_XS with Q5_0 K and IQ4_NL up',
    'IQ4_XS',
    (n) => (n.includes('attn_k') ? 'Q5_0' : n.includes('ffn_up') ? 'IQ4_NL' : undefined),
  ],
  [
    'Q2_K with Q5_1 V and Q3_K gate',
    'Q2_K',
    (n) => (n.includes('attn_v') ? 'Q5_1' : n.includes('ffn_gate') ? 'Q3_K' : undefined),
  ],
];
for (const [label, weightType, typeFor] of MIXES) {
  test(`a mixed-type file on the device: ${label}`, async () => {
    const path = join(dir, `tiny-mix-${weightType}.gguf`);
    writeTinyGguf(path, SHAPE, { weightType, typeFor });
    await compare(path, label);
  });
}

const u32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
};

test("a Mistral-style sliding window on the device: the CPU's tokens and logits past the window", async () => {
  // Window 8 against prompts of 14 and 9 tokens and 3 decode steps: every step of the longer
  // sequence attends past the window, prefill and decode alike.
  const windowed = join(dir, 'tiny-window.gguf');
  writeTinyGguf(windowed, SHAPE, {
    weightType: 'Q4_K',
    extraKv: [['llama.attention.sliding_window', 4, u32(8)]],
  });
  await compare(windowed, 'llama Q4_K, window 8');
  // The same weights without the window give other logits: the comparison above would fail
  // on a device that ignored the window.
  const whole = join(dir, 'tiny-window-off.gguf');
  writeTinyGguf(whole, SHAPE, { weightType: 'Q4_K' });
  useLibrary(library);
  const a = await loadModel(windowed, undefined, { device: 'cuda:0' });
  const b = await loadModel(whole, undefined, { device: 'cuda:0' });
  try {
    const [ra, rb] = [await run(a), await run(b)];
    for (const i of [0, 3]) {
      const err = relError(ra.logits[i]!, rb.logits[i]!);
      assert.ok(err > 5e-2, `step ${i}: the window changes the logits by only ${err}`);
    }
  } finally {
    disposeModel(a);
    disposeModel(b);
  }
});

test('what the device does not run is refused at load, by name: mixed window layers, experts', async () => {
  useLibrary(library);
  // Qwen2's use_sliding_window: layers from max_window_layers on slide, the others do not (the
  // device's KV cache has no separate layer groups).
  const mixed = join(dir, 'hf-qwen2-mixed-window');
  writeTinyHfDir(mixed, 'qwen2', 'BF16', SHAPE);
  const configPath = join(mixed, 'config.json');
  const config = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>;
  Object.assign(config, { use_sliding_window: true, sliding_window: 16, max_window_layers: 1 });
  writeFileSync(configPath, JSON.stringify(config));
  await assert.rejects(
    loadModel(mixed, undefined, { device: 'cuda:0' }),
    /the CUDA backend does not run a mix of sliding-window and global attention layers yet \(qwen2 model\): serve it on the CPU/,
  );
  // A Mixtral-style mixture of experts.
  const moe = join(dir, 'tiny-moe.gguf');
  writeTinyGguf(moe, { ...SHAPE, experts: 4, expertsUsed: 2 }, { weightType: 'Q8_0' });
  await assert.rejects(
    loadModel(moe, undefined, { device: 'cuda:0' }),
    /the CUDA backend does not run mixture-of-experts layers yet \(llama model\)/,
  );
  // Both load on the CPU (the refusal is the device's, not the file's).
  for (const path of [mixed, moe]) disposeModel(await loadModel(path));
});

for (const arch of ['qwen2', 'qwen3', 'llama'] as const) {
  test(`greedy tokens and logits on the device equal the CPU's: ${arch} safetensors BF16`, async () => {
    const path = join(dir, `hf-${arch}`);
    writeTinyHfDir(path, arch, 'BF16', SHAPE);
    await compare(path, `${arch} BF16`);
  });
}

test('min_tokens on the device: suppressed tokens are never sampled, as on the CPU; drafts are refused', async () => {
  useLibrary(library);
  const path = join(dir, 'tiny-suppress.gguf');
  writeTinyGguf(path, SHAPE, { weightType: 'Q8_0' });
  const cpuModel = await loadModel(path);
  const gpuModel = await loadModel(path, undefined, { device: 'cuda:0' });
  const seqs: Seq[] = [
    { tokens: [4, 5, 6], start: 0 },
    { tokens: [7, 8], start: 0 },
  ];
  const once = async (m: ModelHandle, opts: Partial<StepPlan> = {}) => {
    const ctx = createContext(m, { kvBlocks: 8, blockSize: 16, maxBatchTokens: 32, maxSeqs: 2 });
    try {
      return Array.from((await step(ctx, plan(seqs, opts))).tokens);
    } finally {
      disposeContext(ctx);
    }
  };
  try {
    const greedy = await once(gpuModel);
    // Sequence 0 suppresses its greedy token; sequence 1 its own, on top of a mask row that
    // leaves out tokens 0-9.
    const words = Math.ceil(SHAPE.vocab / 32);
    const mask = new Int32Array(words).fill(-1);
    mask[0]! &= ~0x3ff;
    const suppressed: Partial<StepPlan> = {
      suppressTokenOffsets: Int32Array.from([0, 1, 2]),
      suppressTokens: Int32Array.from([greedy[0]!, greedy[1]!]),
      allowedMaskRows: Int32Array.from([-1, 0]),
      allowedMask: mask,
    };
    const gpu = await once(gpuModel, suppressed);
    assert.deepEqual(gpu, await once(cpuModel, suppressed));
    assert.notEqual(gpu[0], greedy[0]);
    assert.notEqual(gpu[1], greedy[1]);
    assert.ok(gpu[1]! >= 10, `token ${gpu[1]} is outside the mask row`);
    const ctx = createContext(gpuModel, { kvBlocks: 8, blockSize: 16, maxBatchTokens: 32, maxSeqs: 2 });
    try {
      await assert.rejects(
        step(
          ctx,
          plan([{ tokens: [4, 5, 6], start: 0 }], {
            draftCounts: Int32Array.from([1]),
            returnLogits: 'none',
          }),
        ),
        /speculative decoding is not supported on a CUDA device yet/,
      );
    } finally {
      disposeContext(ctx);
    }
  } finally {
    disposeModel(cpuModel);
    disposeModel(gpuModel);
  }
});

test('speculative decoding on a CUDA device is refused when the engine starts, for every method', async () => {
  const base = { numSpeculativeTokens: 3, adaptive: false, draftModel: undefined, draftLayers: undefined };
  const served = { device: 'cuda:0' } as ServedContext;
  for (const method of ['ngram', 'layer-skip'] as const)
    await assert.rejects(
      startSpeculation(
        { ...base, method, ngramMax: 4, ngramMin: 2, field: '--speculative' },
        { name: 'm', architecture: 'llama' },
        served,
      ),
      /is not supported on device cuda:0/,
    );
});

test('a decode step of the fast kernel set is five kernels per layer and three more', async () => {
  // Embedding, the step's RoPE table, per layer QKV (+ norm, RoPE, KV write), attention
  // (combining its own splits), O (+ residual), gate/up (+ norm, SwiGLU), down (+ residual),
  // and the output head (+ final norm). On a GPU the count is the captured graph's kernel
  // nodes (a decode step after the second of its shape replays it).
  useLibrary(library);
  const layers = 4;
  const path = join(dir, 'tiny-launches.gguf');
  writeTinyGguf(path, { ...SHAPE, layers }, { weightType: 'Q4_K' });
  const counts: Record<string, number[]> = {};
  for (const cudaKernels of CUDA_KERNELS) {
    const m = await loadModel(path, undefined, { device: 'cuda:0', cudaKernels });
    const ctx = createContext(m, { kvBlocks: 8, blockSize: 16, maxBatchTokens: 32, maxSeqs: 2 });
    try {
      let r = await step(ctx, plan([{ tokens: [5, 17, 2, 99, 3, 250, 8, 8, 41], start: 0 }]));
      counts[cudaKernels] = [];
      for (let i = 0; i < 4; i++) {
        r = await step(ctx, plan([{ tokens: [r.tokens[0]!], start: 9 + i }]));
        counts[cudaKernels]!.push(contextInfo(ctx).lastStepLaunches!);
      }
    } finally {
      disposeContext(ctx);
      disposeModel(m);
    }
  }
  for (const n of counts.fast!)
    assert.equal(n, 5 * layers + 3, `fast decode step: ${counts.fast!.join(', ')} launches`);
  // The legacy set: 9 or 10 per layer (norms, RoPE, SwiGLU and the split combine apart).
  for (const n of counts.legacy!) assert.ok(n >= 9 * layers, `legacy decode step: ${n} launches`);
});

test('sampling on the device: masks that arrive late, penalties, logprobs, the all-masked error', async () => {
  useLibrary(library);
  const path = join(dir, 'tiny-sampling.gguf');
  writeTinyGguf(path, SHAPE, { weightType: 'Q8_0' });
  const m = await loadModel(path, undefined, { device: 'cuda:0' });
  const ctx = createContext(m, { kvBlocks: 8, blockSize: 16, maxBatchTokens: 32, maxSeqs: 2 });
  try {
    const words = Math.ceil(SHAPE.vocab / 32);
    const p = plan(
      [
        { tokens: [4, 5, 6], start: 0 },
        { tokens: [7, 8], start: 0 },
      ],
      {
        temperature: Float32Array.from([0.8, 0]),
        topK: Int32Array.from([20, 0]),
        topP: Float32Array.from([0.9, 1]),
        repetitionPenalty: Float32Array.from([1.3, 1]),
        penaltyTokenOffsets: Int32Array.from([0, 3, 3]),
        penaltyTokens: Int32Array.from([4, 5, 6]),
        allowedMaskRows: Int32Array.from([0, 1]),
        allowedMask: new Int32Array(0),
        lateMaskRows: 2,
        topLogprobs: Int32Array.from([3, 0]),
      },
    );
    const pending = step(ctx, p);
    // Row 0 allows tokens 10-20; row 1 allows nothing: that sequence fails alone.
    const masks = new Int32Array(2 * words);
    for (let t = 10; t <= 20; t++) masks[t >> 5]! |= 1 << (t & 31);
    assert.equal(supplyMasks(ctx, masks), true);
    const r = await pending;
    assert.ok(r.tokens[0]! >= 10 && r.tokens[0]! <= 20, `token ${r.tokens[0]} outside the mask`);
    assert.ok(Number.isFinite(r.logprobs[0]!) && r.logprobs[0]! <= 0);
    assert.equal(r.topLogprobsStride, 3);
    for (let k = 0; k < 3; k++) assert.ok(r.topLogprobIds[k]! >= 10 && r.topLogprobIds[k]! <= 20);
    assert.equal(r.tokens[1], -1);
    assert.match(r.errors![1]!, /no token is allowed/);
    assert.equal(r.errors![0], null);
  } finally {
    disposeContext(ctx);
    disposeModel(m);
  }
});
