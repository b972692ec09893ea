/**
 * Counters and histograms the engine keeps for `status()` (and, through it, for the
 * gateways' /metrics and /metrics-json). Histogram buckets are MindIE's (mindie-compat.md
 * §1.5); times are in seconds.
 */
import type { EngineStatus, HistogramSnapshot } from './types.js';

/** The fields of `EngineStatus` these counters and histograms fill. */
export type MetricsStatus = Pick<
  EngineStatus,
  | 'requestsReceived'
  | 'requestsSucceeded'
  | 'requestsFailed'
  | 'promptTokens'
  | 'generationTokens'
  | 'ttft'
  | 'interTokenLatency'
  | 'e2eLatency'
  | 'promptTokensPerRequest'
  | 'generationTokensPerRequest'
  | 'recentAvgTtft'
  | 'recentAvgInterToken'
>;

export const BUCKETS = {
  ttft: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
  interToken: [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5],
  e2e: [1, 2.5, 5, 10, 15, 20, 30, 40, 50, 60],
  tokens: [10, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 16000, 20000, 32000, 50000, 64000, 128000],
} as const;

export class Histogram {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number): void {
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]) i++;
    this.counts[i]++;
    this.sum += value;
    this.count++;
  }

  /** Cumulative counts (Prometheus style), the last entry being +Inf. */
  snapshot(): HistogramSnapshot {
    const cumulative: number[] = [];
    let run = 0;
    for (const c of this.counts) cumulative.push((run += c));
    return { bounds: [...this.bounds], counts: cumulative, sum: this.sum, count: this.count };
  }
}

/** Mean over the latest `size` values (MindIE's /metrics-json averages over 1000 requests). */
export class RecentAverage {
  private readonly values: number[] = [];
  private next = 0;

  constructor(private readonly size = 1000) {}

  add(value: number): void {
    if (this.values.length < this.size) this.values.push(value);
    else this.values[this.next] = value;
    this.next = (this.next + 1) % this.size;
  }

  get mean(): number {
    return this.values.length === 0 ? 0 : this.values.reduce((a, b) => a + b, 0) / this.values.length;
  }
}

export class EngineMetrics {
  requestsReceived = 0;
  requestsSucceeded = 0;
  requestsFailed = 0;
  promptTokens = 0;
  generationTokens = 0;
  readonly ttft = new Histogram(BUCKETS.ttft);
  readonly interToken = new Histogram(BUCKETS.interToken);
  readonly e2e = new Histogram(BUCKETS.e2e);
  readonly promptTokensPerRequest = new Histogram(BUCKETS.tokens);
  readonly generationTokensPerRequest = new Histogram(BUCKETS.tokens);
  readonly recentTtft = new RecentAverage();
  readonly recentInterToken = new RecentAverage();

  /** Records one finished request (times in seconds; interToken is its mean gap, or null with < 2 tokens). */
  finished(r: {
    ok: boolean;
    ttft: number | null;
    interToken: number | null;
    e2e: number;
    promptTokens: number;
    generationTokens: number;
  }): void {
    if (r.ok) this.requestsSucceeded++;
    else this.requestsFailed++;
    this.e2e.observe(r.e2e);
    this.promptTokensPerRequest.observe(r.promptTokens);
    this.generationTokensPerRequest.observe(r.generationTokens);
    if (r.ttft !== null) this.recentTtft.add(r.ttft);
    if (r.interToken !== null) this.recentInterToken.add(r.interToken);
  }

  /** A snapshot for `Engine.status()`. */
  status(): MetricsStatus {
    return {
      requestsReceived: this.requestsReceived,
      requestsSucceeded: this.requestsSucceeded,
      requestsFailed: this.requestsFailed,
      promptTokens: this.promptTokens,
      generationTokens: this.generationTokens,
      ttft: this.ttft.snapshot(),
      interTokenLatency: this.interToken.snapshot(),
      e2eLatency: this.e2e.snapshot(),
      promptTokensPerRequest: this.promptTokensPerRequest.snapshot(),
      generationTokensPerRequest: this.generationTokensPerRequest.snapshot(),
      recentAvgTtft: this.recentTtft.mean,
      recentAvgInterToken: this.recentInterToken.mean,
    };
  }
}
