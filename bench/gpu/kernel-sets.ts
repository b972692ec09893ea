/**
 * bench/gpu/run.ts's kernel-set columns: which sets a run compares (--kernels), and for each
 * row the model's predicted share of the read rate (bench/gpu/roofline-model.ts, at the
 * measured read rate), the launches of a decode step, and whether the set's greedy tokens
 * are those of the first set on the same file.
 */
import { CUDA_KERNELS, type CudaKernels } from '../../native/native.js';
import { fmt, median } from '../stats.js';
import type { GpuBenchResult } from './prism-gpu.js';
import { decodeStep, SHAPES, type FileType } from './roofline-model.js';

/** A kernel's start and drain in a replayed graph, µs: the model's lead until measured. */
export const LAUNCH_US = 2;

export function cudaKernelsList(value: string): CudaKernels[] {
  const sets = value.split(',').filter(Boolean);
  for (const s of sets)
    if (!(CUDA_KERNELS as readonly string[]).includes(s))
      throw new RangeError(`--kernels: ${s} is not one of ${CUDA_KERNELS.join(', ')}`);
  if (sets.length === 0) throw new RangeError('--kernels: name at least one kernel set');
  return sets as CudaKernels[];
}

interface RowLike {
  readonly size: string;
  readonly type: string;
  readonly kernels: string;
  readonly prism?: GpuBenchResult;
}

/** First position where two token lists differ, or -1. */
export function firstDifference(a: readonly number[], b: readonly number[]): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return -1;
}

export function kernelSetColumns(
  r: RowLike,
  rows: readonly RowLike[],
  context: number,
  bandwidthGBs: readonly number[],
): { model: string; launches: string; sameTokens: string } {
  const shape = SHAPES[r.size];
  const model =
    shape && bandwidthGBs.length
      ? `${fmt(100 * decodeStep(shape, r.type as FileType, r.kernels as CudaKernels, { readGBs: median(bandwidthGBs), launchUs: LAUNCH_US }, context).shareOfRoofline, 0)}%`
      : '—';
  const first = rows.find((x) => x.size === r.size && x.type === r.type && x.prism?.single);
  const mine = r.prism?.single?.tokens ?? [];
  let sameTokens = '—';
  if (first && first !== r && first.prism?.single) {
    const d = firstDifference(first.prism.single.tokens, mine);
    sameTokens = d < 0 ? `yes (${mine.length})` : `no: from token ${d}`;
  } else if (first === r) {
    sameTokens = '(reference)';
  }
  return { model, launches: r.prism?.single ? String(r.prism.single.launches) : '—', sameTokens };
}
