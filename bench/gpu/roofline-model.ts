/**
 * A bytes-and-launches model of one decode step on the GPU (issue 40, item 6): for a model
 * shape, a weight file type and a kernel set, every kernel the step launches with the bytes
 * it must move through device memory (weights read once, K/V read and written, activations
 * and logits), and a predicted time per kernel of
 *
 *     launchUs + bytes / readGBs
 *
 * (a kernel in a replayed CUDA graph still costs its start and drain, here `launchUs`, however
 * few bytes it moves). The step's share of the roofline is the weights' read time over the
 * predicted step time: what `bench/gpu/run.ts` measures as "% of read" (bytes per token over
 * the read rate it probed), so each row's prediction can be held against the device's figure.
 * Both device figures are leads until measured there: the H200's datasheet reads 4.8 TB/s,
 * a device-to-device copy here moved ~4.3 TB/s (the device notes); a graph-replayed kernel's
 * start and drain is of the order of 2 µs.
 *
 *   node --import tsx bench/gpu/roofline-model.ts [--sizes 1b,3b,8b] [--types bf16,q4_k,q8_0]
 *        [--read-gbs 4300] [--launch-us 2] [--context 160] [--sequences 1]
 */
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { fmt } from '../stats.js';

export interface Shape {
  readonly name: string;
  readonly hidden: number;
  readonly intermediate: number;
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly vocab: number;
  readonly tied: boolean;
}

/** The shapes scripts/make-gpu-models.py writes (Llama-3.2-1B/3B, Llama-3.1-8B). */
export const SHAPES: Readonly<Record<string, Shape>> = {
  '1b': {
    name: 'Llama-3.2-1B',
    hidden: 2048,
    intermediate: 8192,
    layers: 16,
    heads: 32,
    kvHeads: 8,
    headDim: 64,
    vocab: 128256,
    tied: true,
  },
  '3b': {
    name: 'Llama-3.2-3B',
    hidden: 3072,
    intermediate: 8192,
    layers: 28,
    heads: 24,
    kvHeads: 8,
    headDim: 128,
    vocab: 128256,
    tied: true,
  },
  '8b': {
    name: 'Llama-3.1-8B',
    hidden: 4096,
    intermediate: 14336,
    layers: 32,
    heads: 32,
    kvHeads: 8,
    headDim: 128,
    vocab: 128256,
    tied: false,
  },
};

export type FileType = 'bf16' | 'q8_0' | 'q4_k';
export type KernelSet = 'legacy' | 'fast';

/** Bytes per weight of GGML storage types. */
const BYTES: Readonly<Record<string, number>> = { BF16: 2, Q8_0: 34 / 32, Q4_K: 144 / 256, Q6_K: 210 / 256 };

/** llama.cpp's Q4_K_M rule (as make-gpu-models.py): layers whose attn_v and ffn_down are Q6_K. */
function useMoreBits(layer: number, layers: number): boolean {
  const e = Math.floor(layers / 8);
  return layer < e || layer >= Math.floor((7 * layers) / 8) || (layer - e) % 3 === 2;
}

/** The storage type of a matrix in a file of `type` (make-gpu-models.py's `storage`). */
export function storageOf(
  type: FileType,
  matrix: 'q' | 'k' | 'v' | 'o' | 'gate' | 'up' | 'down' | 'output',
  layer: number,
  layers: number,
): string {
  if (type === 'bf16') return 'BF16';
  if (type === 'q8_0') return 'Q8_0';
  if (matrix === 'output') return 'Q6_K';
  if ((matrix === 'v' || matrix === 'down') && useMoreBits(layer, layers)) return 'Q6_K';
  return 'Q4_K';
}

export interface Device {
  /** Read rate in GB/s (the decode roofline). */
  readonly readGBs: number;
  /** A kernel's start and drain in a replayed graph, µs. */
  readonly launchUs: number;
}

export interface KernelCost {
  readonly kernel: string;
  readonly launches: number;
  readonly bytes: number;
  readonly us: number;
}

export interface StepModel {
  readonly kernels: readonly KernelCost[];
  readonly launches: number;
  /** Bytes of weights a step reads (what "% of read" counts). */
  readonly weightBytes: number;
  readonly bytes: number;
  readonly stepUs: number;
  /** Output tokens per second of `sequences` sequences decoded together. */
  readonly tokS: number;
  /** The weights' read time over the step's predicted time. */
  readonly shareOfRoofline: number;
}

/**
 * The decode step of `sequences` sequences (one token each, ≤ 8: the GEMV path) at `context`
 * positions each, as native/cuda/src/context.cu runs it with that kernel set.
 */
export function decodeStep(
  s: Shape,
  type: FileType,
  set: KernelSet,
  dev: Device,
  context: number,
  sequences = 1,
): StepModel {
  if (sequences < 1 || sequences > 8) throw new RangeError('sequences: the GEMV path takes 1 to 8');
  const n = sequences;
  const q = s.heads * s.headDim;
  const kv = s.kvHeads * s.headDim;
  const f32 = 4;
  const out: KernelCost[] = [];
  const add = (kernel: string, bytes: number, launches = 1) => {
    const prev = out.find((k) => k.kernel === kernel);
    const us = launches * dev.launchUs + (bytes / (dev.readGBs * 1e9)) * 1e6;
    if (prev)
      out[out.indexOf(prev)] = {
        kernel,
        launches: prev.launches + launches,
        bytes: prev.bytes + bytes,
        us: prev.us + us,
      };
    else out.push({ kernel, launches, bytes, us });
  };
  // One GEMV launch per part of a distinct type (a Q4_K_M layer's V in Q6_K is its own part).
  const matrix = (name: string, rows: number, cols: number, st: string, xBytes: number) => ({
    name,
    bytes: rows * cols * BYTES[st]!,
    st,
    xBytes,
  });
  let weightBytes = 0;
  add('embed', n * s.hidden * (f32 + BYTES[storageOf(type, 'q', 0, s.layers)]!));
  if (set === 'fast') add('rope table', n * (s.headDim / 2) * 8);
  for (let l = 0; l < s.layers; l++) {
    const st = (m: Parameters<typeof storageOf>[1]) => storageOf(type, m, l, s.layers);
    const qkvParts = [
      matrix('q', q, s.hidden, st('q'), 0),
      matrix('k', kv, s.hidden, st('k'), 0),
      matrix('v', kv, s.hidden, st('v'), 0),
    ];
    const qkvTypes = new Set(qkvParts.map((p) => p.st)).size;
    const qkvBytes = qkvParts.reduce((a, p) => a + p.bytes, 0);
    const oBytes = q * s.hidden * BYTES[st('o')]!;
    const guBytes = 2 * s.intermediate * s.hidden * BYTES[st('gate')]!;
    const downBytes = s.hidden * s.intermediate * BYTES[st('down')]!;
    weightBytes += qkvBytes + oBytes + guBytes + downBytes;
    const kvWrite = n * 2 * kv * 2;
    const kvRead = n * context * 2 * kv * 2;
    const x = n * s.hidden * f32;
    if (set === 'fast') {
      add('qkv (+norm, rope, kv write)', qkvBytes + kvWrite + x + n * q * f32, qkvTypes);
      add('attention (+combine)', kvRead + 2 * n * q * f32);
      add('o (+residual)', oBytes + n * q * f32 + 2 * x);
      add('gate/up (+norm, swiglu)', guBytes + x + n * s.intermediate * f32);
      add('down (+residual)', downBytes + n * s.intermediate * f32 + 2 * x);
    } else {
      add('rmsNorm', 2 * x, 2);
      add('qkv', qkvBytes + x + n * (q + 2 * kv) * f32, qkvTypes);
      add('rope + kv write', n * (q + 2 * kv) * f32 + n * q * f32 + kvWrite);
      add('attention', kvRead + 2 * n * q * f32);
      add('attention combine', 2 * n * q * f32);
      add('o', oBytes + n * q * f32 + 2 * x);
      add('gate/up', guBytes + x + 2 * n * s.intermediate * f32);
      add('swiglu', 3 * n * s.intermediate * f32);
      add('down', downBytes + n * s.intermediate * f32 + 2 * x);
    }
  }
  const headBytes =
    s.vocab *
    s.hidden *
    BYTES[s.tied ? storageOf(type, 'q', 0, s.layers) : storageOf(type, 'output', 0, s.layers)]!;
  weightBytes += headBytes;
  if (set === 'legacy') add('rmsNorm', 2 * n * s.hidden * f32);
  add(set === 'fast' ? 'output head (+norm)' : 'output head', headBytes + n * s.vocab * f32);
  const launches = out.reduce((a, k) => a + k.launches, 0);
  const bytes = out.reduce((a, k) => a + k.bytes, 0);
  const stepUs = out.reduce((a, k) => a + k.us, 0);
  const weightUs = (weightBytes / (dev.readGBs * 1e9)) * 1e6;
  return {
    kernels: out,
    launches,
    weightBytes,
    bytes,
    stepUs,
    tokS: (n * 1e6) / stepUs,
    shareOfRoofline: weightUs / stepUs,
  };
}

function main(): void {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string', default: '1b,3b,8b' },
      types: { type: 'string', default: 'bf16,q4_k,q8_0' },
      'read-gbs': { type: 'string', default: '4300' },
      'launch-us': { type: 'string', default: '2' },
      context: { type: 'string', default: '160' },
      sequences: { type: 'string', default: '1' },
    },
  });
  const dev: Device = { readGBs: Number(values['read-gbs']), launchUs: Number(values['launch-us']) };
  const context = Number(values.context);
  const n = Number(values.sequences);
  console.log(
    `decode-step model: ${dev.readGBs} GB/s read, ${dev.launchUs} µs per kernel, ${n} sequence(s) at ${context} positions`,
  );
  console.log(
    '| shape | type | GB/token | legacy launches | legacy tok/s (% of read) | fast launches | fast tok/s (% of read) |',
  );
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (const size of values.sizes!.split(',')) {
    const shape = SHAPES[size];
    if (!shape) throw new RangeError(`--sizes: unknown size ${size} (${Object.keys(SHAPES).join(', ')})`);
    for (const type of values.types!.split(',') as FileType[]) {
      const [legacy, fast] = (['legacy', 'fast'] as const).map((set) =>
        decodeStep(shape, type, set, dev, context, n),
      );
      console.log(
        `| ${size} | ${type} | ${fmt(fast!.weightBytes / 1e9, 2)} | ${legacy!.launches} | ${fmt(legacy!.tokS, 0)} (${fmt(100 * legacy!.shareOfRoofline, 0)}%) | ` +
          `${fast!.launches} | ${fmt(fast!.tokS, 0)} (${fmt(100 * fast!.shareOfRoofline, 0)}%) |`,
      );
    }
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main();
