/**
 * The status of a pool of engines: capacities and counters add up, histograms add up bucket by
 * bucket (when their bounds agree), averages are weighted by finished requests.
 */
import type { EngineStatus, HistogramSnapshot } from '../engine/api.js';

function sumHistograms(list: readonly HistogramSnapshot[]): HistogramSnapshot {
  const first = list[0];
  const sameBounds = list.every(
    (h) => h.bounds.length === first.bounds.length && h.bounds.every((b, i) => b === first.bounds[i]),
  );
  if (!sameBounds) return first;
  return {
    bounds: first.bounds,
    counts: first.counts.map((_, i) => list.reduce((s, h) => s + h.counts[i], 0)),
    sum: list.reduce((s, h) => s + h.sum, 0),
    count: list.reduce((s, h) => s + h.count, 0),
  };
}

/** The sum of the engines' statuses (`list` not empty). */
export function sumStatus(list: readonly EngineStatus[]): EngineStatus {
  const sum = (f: (s: EngineStatus) => number): number => list.reduce((a, s) => a + f(s), 0);
  const finished = sum((s) => s.e2eLatency.count) || 1;
  return {
    running: sum((s) => s.running),
    waiting: sum((s) => s.waiting),
    freeBlocks: sum((s) => s.freeBlocks),
    totalBlocks: sum((s) => s.totalBlocks),
    blockSize: list[0].blockSize,
    maxBatchSize: sum((s) => s.maxBatchSize),
    stopping: list.every((s) => s.stopping),
    requestsReceived: sum((s) => s.requestsReceived),
    requestsSucceeded: sum((s) => s.requestsSucceeded),
    requestsFailed: sum((s) => s.requestsFailed),
    promptTokens: sum((s) => s.promptTokens),
    generationTokens: sum((s) => s.generationTokens),
    prefixCacheQueries: sum((s) => s.prefixCacheQueries),
    prefixCacheHits: sum((s) => s.prefixCacheHits),
    preemptions: sum((s) => s.preemptions),
    ttft: sumHistograms(list.map((s) => s.ttft)),
    interTokenLatency: sumHistograms(list.map((s) => s.interTokenLatency)),
    e2eLatency: sumHistograms(list.map((s) => s.e2eLatency)),
    promptTokensPerRequest: sumHistograms(list.map((s) => s.promptTokensPerRequest)),
    generationTokensPerRequest: sumHistograms(list.map((s) => s.generationTokensPerRequest)),
    // Weighted by finished requests.
    recentAvgTtft: sum((s) => s.recentAvgTtft * s.e2eLatency.count) / finished,
    recentAvgInterToken: sum((s) => s.recentAvgInterToken * s.e2eLatency.count) / finished,
    runningLoraAdapters: [...new Set(list.flatMap((s) => s.runningLoraAdapters))].sort(),
    waitingLoraAdapters: [...new Set(list.flatMap((s) => s.waitingLoraAdapters))].sort(),
    maxLora: list[0].maxLora,
    ...sumSpecDecode(list),
    role: list[0].role,
    roleStatus: list.some((s) => s.roleStatus === 'RoleSwitching') ? 'RoleSwitching' : 'RoleReady',
    leasedBlocks: sum((s) => s.leasedBlocks),
    kvTransfersIn: sum((s) => s.kvTransfersIn),
    kvBytesIn: sum((s) => s.kvBytesIn),
    kvTransferMsIn: sum((s) => s.kvTransferMsIn),
    kvTokensIn: sum((s) => s.kvTokensIn),
    kvTransfersOut: sum((s) => s.kvTransfersOut),
    kvBytesOut: sum((s) => s.kvBytesOut),
    kvTransferFailures: sum((s) => s.kvTransferFailures),
  };
}

/** Speculative decoding's counters over the engines that speculate (none: absent). */
function sumSpecDecode(list: readonly EngineStatus[]): Pick<EngineStatus, 'specDecode'> {
  const spec = list.flatMap((s) => (s.specDecode ? [s.specDecode] : []));
  if (spec.length === 0) return {};
  const perPos: number[] = [];
  for (const s of spec) s.acceptedPerPosition.forEach((v, i) => (perPos[i] = (perPos[i] ?? 0) + v));
  return {
    specDecode: {
      method: [...new Set(spec.map((s) => s.method))].join(','),
      numDrafts: spec.reduce((a, s) => a + s.numDrafts, 0),
      numDraftTokens: spec.reduce((a, s) => a + s.numDraftTokens, 0),
      numAcceptedTokens: spec.reduce((a, s) => a + s.numAcceptedTokens, 0),
      acceptedPerPosition: perPos,
    },
  };
}
