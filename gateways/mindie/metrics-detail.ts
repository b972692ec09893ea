/**
 * The `prism` object of GET /metrics-json: Prism's own numbers next to MindIE's five-entry
 * vector (which stays exactly as MindIE writes it; a MindIE client reads `resultType` and
 * `result` and ignores this key). Counters are totals since start, so a reader such as the
 * dashboard takes rates and windowed quantiles from the difference of two reads. Documented in
 * docs/api.md.
 */
import type { EngineStatus, HistogramSnapshot } from '../../engine/api.js';
import type { GatewayContext } from '../shared/gateway-context.js';
import { servedModels } from '../shared/served-models.js';

const histogram = (h: HistogramSnapshot): object => ({
  bounds: h.bounds,
  counts: h.counts,
  sum: h.sum,
  count: h.count,
});

export async function prismMetrics(gw: GatewayContext, s: EngineStatus): Promise<object> {
  return {
    time: Date.now() / 1000,
    startedAt: gw.info.startedAt / 1000,
    model: gw.info.modelName,
    requests: {
      received: s.requestsReceived,
      succeeded: s.requestsSucceeded,
      failed: s.requestsFailed,
      running: s.running,
      waiting: s.waiting,
      preemptions: s.preemptions,
      maxBatchSize: s.maxBatchSize,
    },
    tokens: { prompt: s.promptTokens, generation: s.generationTokens },
    kvBlocks: {
      total: s.totalBlocks,
      free: s.freeBlocks,
      used: s.totalBlocks - s.freeBlocks,
      blockSize: s.blockSize,
    },
    prefixCache: {
      enabled: gw.info.prefixCache,
      queriedTokens: s.prefixCacheQueries,
      hitTokens: s.prefixCacheHits,
    },
    latencySeconds: {
      ttft: histogram(s.ttft),
      interToken: histogram(s.interTokenLatency),
      e2e: histogram(s.e2eLatency),
    },
    // Speculative decoding's counters (vLLM's spec_decode_*); null when the engine does not speculate.
    speculativeDecoding: s.specDecode
      ? {
          method: s.specDecode.method,
          drafts: s.specDecode.numDrafts,
          draftTokens: s.specDecode.numDraftTokens,
          acceptedTokens: s.specDecode.numAcceptedTokens,
          acceptedPerPosition: s.specDecode.acceptedPerPosition,
        }
      : null,
    // Pooling requests (engine/pooling/), counted apart from generation; null for a generation model.
    pooling: s.pooling
      ? {
          requests: s.pooling.requests,
          succeeded: s.pooling.succeeded,
          failed: s.pooling.failed,
          inputs: s.pooling.inputs,
          promptTokens: s.pooling.promptTokens,
          passes: s.pooling.passes,
          latencySeconds: histogram(s.pooling.latency),
        }
      : null,
    families: gw.state.families.snapshot(),
    models: (await servedModels(gw)).map((m) => ({ id: m.id, parent: m.parent })),
  };
}
