/**
 * The dashboard's arithmetic on two reads of /metrics-json's `prism` object: rates from
 * counter differences, quantiles from the difference of two cumulative histograms
 * (Prometheus' histogram_quantile: linear within the bucket). No DOM; Node tests it.
 */
export interface Histogram {
  bounds: number[];
  /** Cumulative: counts[i] = observations <= bounds[i]; the last entry is +Inf. */
  counts: number[];
  sum: number;
  count: number;
}

export interface PrismMetrics {
  time: number;
  startedAt: number;
  model: string;
  requests: {
    received: number;
    succeeded: number;
    failed: number;
    running: number;
    waiting: number;
    preemptions: number;
    maxBatchSize: number;
  };
  tokens: { prompt: number; generation: number };
  kvBlocks: { total: number; free: number; used: number; blockSize: number };
  prefixCache: { enabled: boolean; queriedTokens: number; hitTokens: number };
  latencySeconds: { ttft: Histogram; interToken: Histogram; e2e: Histogram };
  /** Speculative decoding's counters; null (or absent, from an older server) when it is off. */
  speculativeDecoding?: {
    method: string;
    drafts: number;
    draftTokens: number;
    acceptedTokens: number;
    acceptedPerPosition: number[];
  } | null;
  families: Record<string, { requests: number; errors: number }>;
  models: { id: string; parent: string | null }[];
}

/** Observations between two snapshots of one histogram (b later than a). */
export function histogramDelta(a: Histogram, b: Histogram): Histogram {
  return {
    bounds: b.bounds,
    counts: b.counts.map((c, i) => c - (a.counts[i] ?? 0)),
    sum: b.sum - a.sum,
    count: b.count - a.count,
  };
}

/** The q-quantile (0..1) of a cumulative histogram; null when it holds no observation. */
export function quantile(h: Histogram, q: number): number | null {
  const total = h.counts[h.counts.length - 1] ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  for (let i = 0; i < h.counts.length; i++) {
    if (h.counts[i] >= rank) {
      if (i >= h.bounds.length) return h.bounds[h.bounds.length - 1] ?? null; // +Inf bucket
      const lower = i === 0 ? 0 : h.bounds[i - 1];
      const below = i === 0 ? 0 : h.counts[i - 1];
      const inBucket = h.counts[i] - below;
      return inBucket > 0 ? lower + ((h.bounds[i] - lower) * (rank - below)) / inBucket : h.bounds[i];
    }
  }
  return h.bounds[h.bounds.length - 1] ?? null;
}

/** Per-second rate of a counter between two reads; null without a time difference. */
export function rate(a: number, b: number, seconds: number): number | null {
  return seconds > 0 ? Math.max(0, b - a) / seconds : null;
}

/** One point of each dashboard series, from a read and an earlier one (the window's start). */
export interface Point {
  time: number;
  outputTokensPerS: number | null;
  promptTokensPerS: number | null;
  running: number;
  waiting: number;
  ttftP50Ms: number | null;
  ttftP99Ms: number | null;
  itlP50Ms: number | null;
  itlP99Ms: number | null;
  kvUsed: number;
  kvFree: number;
  /** Prompt tokens found in the prefix cache / looked up, in the window, percent. */
  prefixHitPct: number | null;
}

const ms = (s: number | null): number | null => (s === null ? null : s * 1000);

/**
 * A dashboard point: rates over the last refresh (prev → cur), latency quantiles and the
 * prefix-cache hit rate over a longer window (windowStart → cur) so that a quiet refresh
 * still shows the recent latencies; null where the window saw nothing.
 */
export function point(prev: PrismMetrics | null, windowStart: PrismMetrics | null, cur: PrismMetrics): Point {
  const dt = prev ? cur.time - prev.time : 0;
  // No earlier read: the window is empty (a lifetime figure would look like a recent one).
  const w = windowStart ?? cur;
  const ttft = w ? histogramDelta(w.latencySeconds.ttft, cur.latencySeconds.ttft) : cur.latencySeconds.ttft;
  const itl = w
    ? histogramDelta(w.latencySeconds.interToken, cur.latencySeconds.interToken)
    : cur.latencySeconds.interToken;
  const queried = cur.prefixCache.queriedTokens - (w?.prefixCache.queriedTokens ?? 0);
  const hits = cur.prefixCache.hitTokens - (w?.prefixCache.hitTokens ?? 0);
  return {
    time: cur.time,
    outputTokensPerS: prev ? rate(prev.tokens.generation, cur.tokens.generation, dt) : null,
    promptTokensPerS: prev ? rate(prev.tokens.prompt, cur.tokens.prompt, dt) : null,
    running: cur.requests.running,
    waiting: cur.requests.waiting,
    ttftP50Ms: ms(quantile(ttft, 0.5)),
    ttftP99Ms: ms(quantile(ttft, 0.99)),
    itlP50Ms: ms(quantile(itl, 0.5)),
    itlP99Ms: ms(quantile(itl, 0.99)),
    kvUsed: cur.kvBlocks.used,
    kvFree: cur.kvBlocks.free,
    prefixHitPct: queried > 0 ? (100 * hits) / queried : null,
  };
}
