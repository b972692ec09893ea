/**
 * Prism's half of the GPU benchmark: the native core on a CUDA device driven with
 * createContext + step(plan) (no scheduler, no gRPC), as bench/engine/prism.ts drives the
 * CPU. Every decode step's wall time is set beside the device's own time for it
 * (contextInfo().lastStepDeviceMs): their difference is the host's share of a step —
 * planning, N-API, the event loop — that a GPU leaves idle (issue 29, item 4).
 */
import {
  type CudaKernels,
  contextInfo,
  createContext,
  disposeContext,
  disposeModel,
  loadModel,
  measureDeviceBandwidth,
  modelInfo,
  step,
  type ContextHandle,
  type Device,
  type ModelInfo,
} from '../../native/native.js';
import { BlockPool, greedyPlan, type SeqChunk } from '../engine/plan.js';
import { median, nowMs } from '../stats.js';

export interface GpuBenchOptions {
  readonly device: Device;
  readonly cudaKernels: CudaKernels;
  readonly blockSize: number;
  readonly promptTokens: number;
  readonly newTokens: number;
  readonly aggregateSequences: readonly number[];
  readonly aggregateNewTokens: number;
  readonly prefillTokens: number;
  readonly runs: number;
}

export interface DecodeResult {
  readonly tokS: number;
  /** Per decode step (medians): wall time, the device's time, and what the host added. */
  readonly stepMs: number;
  readonly deviceMs: number;
  readonly hostMs: number;
  /** The first sequence's greedy tokens (the kernel sets are compared on them). */
  readonly tokens: readonly number[];
  /** Kernels of the last decode step's forward pass (ContextInfo.lastStepLaunches). */
  readonly launches: number;
}

export interface GpuBenchResult {
  readonly info: ModelInfo;
  readonly loadS: number;
  /** The device's read bandwidth, probed before each single-stream run (GB/s). */
  readonly bandwidthGBs: readonly number[];
  readonly single?: DecodeResult & { readonly runsTokS: readonly number[] };
  readonly aggregate: ReadonlyArray<{ readonly sequences: number } & DecodeResult>;
  readonly prefill?: { readonly tokS: number; readonly tflops: number };
}

/** Multiply-add weights per token (every matrix, the output head included). */
export function linearWeights(m: ModelInfo): number {
  const q = m.numHeads * m.headDim;
  const kv = m.numKvHeads * m.headDim;
  const perLayer = m.hiddenSize * (q + 2 * kv) + q * m.hiddenSize + 3 * m.hiddenSize * m.intermediateSize;
  return m.numLayers * perLayer + m.vocabSize * m.hiddenSize;
}

function randomIds(n: number, vocab: number, seed: number): number[] {
  let s = seed >>> 0 || 1;
  return Array.from({ length: n }, () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    // Ids away from both ends of the vocabulary (special tokens), for small ones too.
    const margin = Math.min(1000, Math.floor(vocab / 4));
    return margin + (s % (vocab - 2 * margin));
  });
}

class Runner {
  private readonly pool: BlockPool;
  constructor(
    readonly ctx: ContextHandle,
    readonly o: GpuBenchOptions,
    kvBlocks: number,
  ) {
    this.pool = new BlockPool(kvBlocks);
  }

  /** Prefills every prompt (untimed), then times batched greedy decode steps. */
  async decode(prompts: number[][], newTokens: number): Promise<DecodeResult> {
    this.pool.reset();
    const blocks = prompts.map((p) => this.pool.take(Math.ceil((p.length + newTokens) / this.o.blockSize)));
    const last: number[] = [];
    let s = 0;
    while (s < prompts.length) {
      const chunks: SeqChunk[] = [];
      let tokens = 0;
      while (
        s < prompts.length &&
        (chunks.length === 0 || tokens + prompts[s]!.length <= this.o.prefillTokens)
      ) {
        chunks.push({ tokens: prompts[s]!, startPosition: 0, blocks: blocks[s]!, sample: true });
        tokens += prompts[s]!.length;
        s++;
      }
      const r = await step(this.ctx, greedyPlan(chunks, this.o.blockSize));
      last.push(...Array.from(r.tokens));
    }
    const walls: number[] = [];
    const devices: number[] = [];
    const tokens = [last[0]!];
    const start = nowMs();
    for (let i = 1; i < newTokens; i++) {
      const chunks = prompts.map((p, k): SeqChunk => ({
        tokens: [last[k]!],
        startPosition: p.length + i - 1,
        blocks: blocks[k]!,
        sample: true,
      }));
      const t0 = nowMs();
      const r = await step(this.ctx, greedyPlan(chunks, this.o.blockSize));
      walls.push(nowMs() - t0);
      devices.push(contextInfo(this.ctx).lastStepDeviceMs ?? NaN);
      for (let k = 0; k < prompts.length; k++) last[k] = r.tokens[k]!;
      tokens.push(last[0]!);
    }
    const ms = nowMs() - start;
    const stepMs = median(walls);
    const deviceMs = median(devices);
    return {
      tokS: (prompts.length * (newTokens - 1) * 1000) / ms,
      stepMs,
      deviceMs,
      hostMs: stepMs - deviceMs,
      tokens,
      launches: contextInfo(this.ctx).lastStepLaunches ?? NaN,
    };
  }

  async prefill(prompt: number[]): Promise<number> {
    this.pool.reset();
    const blocks = this.pool.take(Math.ceil((prompt.length + 1) / this.o.blockSize));
    const t0 = nowMs();
    await step(
      this.ctx,
      greedyPlan([{ tokens: prompt, startPosition: 0, blocks, sample: true }], this.o.blockSize),
    );
    return nowMs() - t0;
  }
}

export async function benchPrismGpu(path: string, o: GpuBenchOptions): Promise<GpuBenchResult> {
  const t0 = nowMs();
  const model = await loadModel(path, undefined, { device: o.device, cudaKernels: o.cudaKernels });
  const loadS = (nowMs() - t0) / 1000;
  const info = modelInfo(model);
  const maxSeqs = Math.max(1, ...o.aggregateSequences);
  const blocksFor = (n: number) => Math.ceil(n / o.blockSize);
  const kvBlocks = Math.max(
    blocksFor(o.prefillTokens + 1),
    blocksFor(o.promptTokens + o.newTokens),
    maxSeqs * blocksFor(o.promptTokens + o.aggregateNewTokens),
  );
  const ctx = createContext(model, {
    kvBlocks,
    blockSize: o.blockSize,
    maxBatchTokens: Math.max(o.prefillTokens, maxSeqs),
    maxSeqs,
  });
  const runner = new Runner(ctx, o, kvBlocks);
  const bandwidthGBs: number[] = [];
  const singles: DecodeResult[] = [];
  try {
    const prompt = randomIds(o.promptTokens, info.vocabSize, 1);
    await runner.decode([prompt], 8); // warm-up: first launches, cuBLASLt plans
    for (let r = 0; r < o.runs; r++) {
      bandwidthGBs.push(await measureDeviceBandwidth(o.device, 2 ** 31, 10));
      singles.push(await runner.decode([prompt], o.newTokens));
    }
    const aggregate = [];
    for (const sequences of o.aggregateSequences) {
      const prompts = Array.from({ length: sequences }, (_, k) =>
        randomIds(o.promptTokens, info.vocabSize, 100 + k),
      );
      await runner.decode(prompts, 4);
      const runs: DecodeResult[] = [];
      for (let r = 0; r < o.runs; r++) runs.push(await runner.decode(prompts, o.aggregateNewTokens));
      aggregate.push({ sequences, ...medianResult(runs) });
    }
    const long = randomIds(o.prefillTokens, info.vocabSize, 7);
    await runner.prefill(long);
    const prefillMs: number[] = [];
    for (let r = 0; r < o.runs; r++) prefillMs.push(await runner.prefill(long));
    const s = median(prefillMs) / 1000;
    return {
      info,
      loadS,
      bandwidthGBs,
      single: { ...medianResult(singles), runsTokS: singles.map((x) => x.tokS) },
      aggregate,
      prefill: { tokS: o.prefillTokens / s, tflops: (2 * linearWeights(info) * o.prefillTokens) / s / 1e12 },
    };
  } finally {
    disposeContext(ctx);
    disposeModel(model);
  }
}

function medianResult(runs: readonly DecodeResult[]): DecodeResult {
  return {
    tokS: median(runs.map((r) => r.tokS)),
    stepMs: median(runs.map((r) => r.stepMs)),
    deviceMs: median(runs.map((r) => r.deviceMs)),
    hostMs: median(runs.map((r) => r.hostMs)),
    tokens: runs[0]?.tokens ?? [],
    launches: runs[0]?.launches ?? NaN,
  };
}
