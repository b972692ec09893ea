/**
 * `Engine.status()`: one snapshot of the engine's state, assembled from the parts that hold
 * it (the scheduler's queues, the block pool, the request metrics, the adapters of live
 * requests) and the request features' part (request-features.ts).
 */
import type { KvPool } from './kv-pool.js';
import type { EngineMetrics } from './engine-metrics.js';
import type { RequestTable } from './live-request.js';
import type { FeatureStatus } from './request-features.js';
import type { Scheduler } from './scheduler.js';
import type { Sequence } from './sequence.js';
import type { EngineStatus } from './types.js';

export interface StatusSources {
  readonly metrics: EngineMetrics;
  readonly scheduler: Scheduler;
  readonly blocks: KvPool;
  readonly requests: RequestTable;
  readonly features: FeatureStatus;
  readonly maxBatchSize: number;
  /** Adapter slots per step (0: base model only). */
  readonly maxLora: number;
  readonly stopping: boolean;
}

export function engineStatus(s: StatusSources): EngineStatus {
  return {
    ...s.metrics.status(),
    running: s.scheduler.running.length,
    waiting: s.scheduler.waiting.length,
    freeBlocks: s.blocks.freeBlocks,
    totalBlocks: s.blocks.numBlocks,
    blockSize: s.blocks.blockSize,
    maxBatchSize: s.maxBatchSize,
    stopping: s.stopping,
    prefixCacheQueries: s.blocks.queries,
    prefixCacheHits: s.blocks.hits,
    preemptions: s.scheduler.preemptions,
    runningLoraAdapters: adapterNames(s.requests, s.scheduler.running),
    waitingLoraAdapters: adapterNames(s.requests, s.scheduler.waiting),
    maxLora: s.maxLora,
    ...s.features,
  };
}

/** Distinct adapter names of the sequences' requests, sorted. */
function adapterNames(requests: RequestTable, seqs: readonly Sequence[]): string[] {
  const names = new Set<string>();
  for (const s of seqs) {
    const a = requests.get(s.requestId)?.adapter;
    if (a) names.add(a.name);
  }
  return [...names].sort();
}
