/**
 * Memory of a loaded engine: whether the model plus its KV pool fit the machine (checked at
 * load, before the pool is allocated: the pool is zero-filled, so an oversized one would be
 * an OOM kill later rather than an error now), and the one-line report `prism serve` prints
 * at start (issue 12, item 5).
 */
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { EngineError } from './errors.js';

export interface MemoryPlan {
  /** Every weight byte the model keeps (mmapped file pages + repacked copies; all experts of a mixture). */
  readonly weightBytes: number;
  /** The KV pool that will be allocated. */
  readonly kvBytes: number;
  /** The smallest pool that can run one sequence of maxSeqLen. */
  readonly minKvBytes: number;
  /** Memory this process may use: physical memory, or the cgroup limit when lower. */
  readonly machineBytes: number;
}

export interface MemoryReport {
  readonly weightBytes: number;
  readonly kvBytes: number;
  readonly kvBlocks: number;
  readonly blockSize: number;
  /** Resident set of the process right after loading (mmapped pages count once touched). */
  readonly rssBytes: number;
  readonly machineBytes: number;
  /** Where the weights and the KV pool are ('cpu' when absent), and that device in words. */
  readonly device?: string;
  readonly deviceName?: string;
}

const MIB = 2 ** 20;
const mib = (bytes: number) => `${Math.round(bytes / MIB)} MiB`;

/** Physical memory, lowered to the cgroup v2 (or v1) limit when one is set. */
export function machineMemoryBytes(readLimit: (path: string) => string | undefined = readText): number {
  let bytes = totalmem();
  for (const path of ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']) {
    const text = readLimit(path)?.trim();
    if (text === undefined || !/^\d+$/.test(text)) continue; // 'max' or absent: no limit
    bytes = Math.min(bytes, Number(text));
  }
  return bytes;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Throws INVALID_ARGUMENT (naming what to change) when the plan cannot fit the machine. */
export function checkMemoryFits(plan: MemoryPlan): void {
  const { weightBytes, kvBytes, minKvBytes, machineBytes } = plan;
  if (weightBytes + minKvBytes > machineBytes) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `model: its weights (${mib(weightBytes)}) plus the smallest KV pool (${mib(minKvBytes)}, one sequence of ` +
        `maxSeqLen) need more than this machine's ${mib(machineBytes)} of memory (${mib(weightBytes + minKvBytes - machineBytes)} missing); ` +
        `use a smaller model or a smaller maxSeqLen (--max-model-len)`,
      'model',
    );
  }
  if (weightBytes + kvBytes > machineBytes) {
    const room = Math.floor((machineBytes - weightBytes) / MIB);
    throw new EngineError(
      'INVALID_ARGUMENT',
      `kvCacheBytes: a KV pool of ${mib(kvBytes)} plus the model's weights (${mib(weightBytes)}) exceed this ` +
        `machine's ${mib(machineBytes)} of memory; set the budget (config npuMemSize) to at most ${room} MiB`,
      'kvCacheBytes',
    );
  }
}

export function formatMemoryReport(r: MemoryReport): string {
  const where = r.device && r.device !== 'cpu' ? ` on ${r.device} (${r.deviceName ?? 'CUDA'})` : '';
  return (
    `memory: weights ${mib(r.weightBytes)}, KV pool ${mib(r.kvBytes)} (${r.kvBlocks} blocks × ${r.blockSize} tokens)${where}, ` +
    `resident ${mib(r.rssBytes)} after load, machine ${mib(r.machineBytes)}`
  );
}
