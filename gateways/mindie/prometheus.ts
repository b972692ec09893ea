/**
 * GET /metrics: the engine's counters, gauges and histograms (EngineStatus, read once per
 * scrape) in Prometheus text format through prom-client, under MindIE's names and under
 * vLLM's `vllm:` names, each with the `model_name` label.
 *
 * The `vllm:` gauges are the Inference Extension's model-server protocol
 * (docs/proposals/003-model-server-protocol), with vLLM's meaning, which an endpoint picker
 * reads to place requests: num_requests_waiting (queue), num_requests_running,
 * kv_cache_usage_perc (a fraction in [0, 1] of the KV blocks held by requests; blocks that
 * only keep prefix-cache contents count as free, since any request may take them),
 * lora_requests_info (labels: the adapters of running and waiting requests and the slot
 * count; value: when this state was read, so a picker takes the newest series) and
 * cache_config_info (labels block_size and num_gpu_blocks, the size of the KV pool).
 */
import { Registry } from 'prom-client';
import type { EngineStatus, HistogramSnapshot } from '../../engine/api.js';

type Kind = 'counter' | 'gauge' | 'histogram';

interface MetricValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

interface Definition {
  readonly names: readonly string[];
  readonly help: string;
  readonly type: Kind;
  readonly read: (s: EngineStatus, rates: Rates) => number | HistogramSnapshot;
  /** Labels besides model_name (info-style gauges). */
  readonly labels?: (s: EngineStatus) => Record<string, string>;
  /** Instead of `read`: any number of samples, each with its own labels (none: no sample). */
  readonly samples?: (s: EngineStatus) => { value: number; labels: Record<string, string> }[];
}

interface Rates {
  readonly promptTokensPerS: number;
  readonly generationTokensPerS: number;
}

/** Counters read from an optional part of the status (absent: no sample, e.g. no speculation). */
function optionalCounters<P>(
  part: (s: EngineStatus) => P | undefined,
  rows: readonly (readonly [string, string, { [K in keyof P]: P[K] extends number ? K : never }[keyof P]])[],
): Definition[] {
  return rows.map(([name, help, field]) => ({
    names: [name],
    help,
    type: 'counter',
    read: () => 0,
    samples: (s) => {
      const p = part(s);
      return p ? [{ value: p[field] as number, labels: {} }] : [];
    },
  }));
}

const kvUsage = (s: EngineStatus): number => (s.totalBlocks > 0 ? 1 - s.freeBlocks / s.totalBlocks : 0);

const definitions: readonly Definition[] = [
  {
    names: ['request_received_total'],
    help: 'Requests received by the engine.',
    type: 'counter',
    read: (s) => s.requestsReceived,
  },
  {
    names: ['request_success_total', 'vllm:request_success_total'],
    help: 'Requests finished successfully.',
    type: 'counter',
    read: (s) => s.requestsSucceeded,
  },
  {
    names: ['request_failed_total'],
    help: 'Requests that failed.',
    type: 'counter',
    read: (s) => s.requestsFailed,
  },
  {
    names: ['num_preemptions_total', 'vllm:num_preemptions_total'],
    help: 'Preemptions (recomputed later).',
    type: 'counter',
    read: (s) => s.preemptions,
  },
  {
    names: ['prompt_tokens_total', 'vllm:prompt_tokens_total'],
    help: 'Prompt tokens processed.',
    type: 'counter',
    read: (s) => s.promptTokens,
  },
  {
    names: ['generation_tokens_total', 'vllm:generation_tokens_total'],
    help: 'Tokens generated.',
    type: 'counter',
    read: (s) => s.generationTokens,
  },
  {
    names: ['vllm:prefix_cache_queries_total'],
    help: 'Prompt tokens looked up in the prefix cache.',
    type: 'counter',
    read: (s) => s.prefixCacheQueries,
  },
  {
    names: ['vllm:prefix_cache_hits_total'],
    help: 'Prompt tokens found in the prefix cache.',
    type: 'counter',
    read: (s) => s.prefixCacheHits,
  },
  {
    names: ['num_requests_running', 'vllm:num_requests_running'],
    help: 'Requests running.',
    type: 'gauge',
    read: (s) => s.running,
  },
  {
    names: ['num_requests_waiting', 'vllm:num_requests_waiting'],
    help: 'Requests waiting.',
    type: 'gauge',
    read: (s) => s.waiting,
  },
  // Preempted sequences are recomputed, never swapped to host memory.
  {
    names: ['num_requests_swapped'],
    help: 'Requests swapped to host memory (always 0: preemption recomputes).',
    type: 'gauge',
    read: () => 0,
  },
  {
    names: ['avg_prompt_throughput_toks_per_s'],
    help: 'Prompt tokens per second since the previous scrape.',
    type: 'gauge',
    read: (_s, r) => r.promptTokensPerS,
  },
  {
    names: ['avg_generation_throughput_toks_per_s'],
    help: 'Generated tokens per second since the previous scrape.',
    type: 'gauge',
    read: (_s, r) => r.generationTokensPerS,
  },
  {
    names: ['failed_request_perc'],
    help: 'Failed requests as a fraction of received ones.',
    type: 'gauge',
    read: (s) => (s.requestsReceived > 0 ? s.requestsFailed / s.requestsReceived : 0),
  },
  {
    names: ['npu_cache_usage_perc', 'vllm:gpu_cache_usage_perc', 'vllm:kv_cache_usage_perc'],
    help: 'KV cache blocks in use (fraction; the device here is the CPU).',
    type: 'gauge',
    read: kvUsage,
  },
  {
    names: ['cpu_cache_usage_perc'],
    help: 'Host swap-space KV blocks in use (no swap space: 0).',
    type: 'gauge',
    read: () => 0,
  },
  {
    names: ['npu_prefix_cache_hit_rate'],
    help: 'Prefix cache hit rate in prompt tokens (1 = 100%).',
    type: 'gauge',
    read: (s) => (s.prefixCacheQueries > 0 ? s.prefixCacheHits / s.prefixCacheQueries : 0),
  },
  {
    // vLLM's info gauge: the adapters of running and waiting requests and the slot count, as
    // labels; the value is the time of the snapshot (seconds since the epoch), as in vLLM.
    names: ['lora_requests_info', 'vllm:lora_requests_info'],
    help: 'Running stats on LoRA requests.',
    type: 'gauge',
    read: () => Date.now() / 1000,
    labels: (s) => ({
      running_lora_adapters: s.runningLoraAdapters.join(','),
      waiting_lora_adapters: s.waitingLoraAdapters.join(','),
      max_lora: String(s.maxLora),
    }),
  },
  {
    // vLLM's info gauge of the KV cache's shape (value 1); a picker's prefix scorer reads the
    // block size and the pool size from its labels.
    names: ['vllm:cache_config_info'],
    help: 'Information of the LLMEngine CacheConfig.',
    type: 'gauge',
    read: () => 1,
    labels: (s) => ({ block_size: String(s.blockSize), num_gpu_blocks: String(s.totalBlocks) }),
  },
  {
    names: ['time_to_first_token_seconds', 'vllm:time_to_first_token_seconds'],
    help: 'Time to first token.',
    type: 'histogram',
    read: (s) => s.ttft,
  },
  {
    names: [
      'time_per_output_token_seconds',
      'vllm:time_per_output_token_seconds',
      'vllm:inter_token_latency_seconds',
    ],
    help: 'Time between output tokens.',
    type: 'histogram',
    read: (s) => s.interTokenLatency,
  },
  {
    names: ['e2e_request_latency_seconds', 'vllm:e2e_request_latency_seconds'],
    help: 'End-to-end request latency.',
    type: 'histogram',
    read: (s) => s.e2eLatency,
  },
  {
    names: ['request_prompt_tokens', 'vllm:request_prompt_tokens'],
    help: 'Prompt tokens per request.',
    type: 'histogram',
    read: (s) => s.promptTokensPerRequest,
  },
  {
    names: ['request_generation_tokens', 'vllm:request_generation_tokens'],
    help: 'Generated tokens per request.',
    type: 'histogram',
    read: (s) => s.generationTokensPerRequest,
  },
  // Speculative decoding, under vLLM's names; no samples when the engine does not speculate.
  ...optionalCounters(
    (s) => s.specDecode,
    [
      ['vllm:spec_decode_num_drafts_total', 'Verify steps that carried draft tokens.', 'numDrafts'],
      ['vllm:spec_decode_num_draft_tokens_total', 'Draft tokens proposed and verified.', 'numDraftTokens'],
      ['vllm:spec_decode_num_accepted_tokens_total', 'Draft tokens accepted.', 'numAcceptedTokens'],
    ],
  ),
  // Pooling requests (embeddings, scores), apart from generation's; no samples for a generation model.
  ...optionalCounters(
    (s) => s.pooling,
    [
      [
        'prism:pooling_requests_total',
        'Pooling requests (embeddings, scores, classification) received.',
        'requests',
      ],
      ['prism:pooling_request_success_total', 'Pooling requests answered.', 'succeeded'],
      ['prism:pooling_request_failure_total', 'Pooling requests refused or failed.', 'failed'],
      [
        'prism:pooling_inputs_total',
        'Inputs (texts, pairs, token lists) of answered pooling requests.',
        'inputs',
      ],
      ['prism:pooling_prompt_tokens_total', 'Tokens of answered pooling requests.', 'promptTokens'],
      ['prism:pooling_passes_total', 'Forward passes that pooling inputs were packed into.', 'passes'],
    ],
  ),
  {
    names: ['vllm:spec_decode_num_accepted_tokens_per_pos_total'],
    help: 'Draft tokens accepted, by draft position (0-based).',
    type: 'counter',
    read: () => 0,
    samples: (s) =>
      (s.specDecode?.acceptedPerPosition ?? []).map((value, i) => ({
        value,
        labels: { position: String(i) },
      })),
  },
];

function histogramValues(name: string, h: HistogramSnapshot, labels: Record<string, string>): MetricValue[] {
  const out: MetricValue[] = [];
  let sawInf = false;
  h.counts.forEach((count, i) => {
    const bound = h.bounds[i];
    const le = bound === undefined || bound === Infinity ? '+Inf' : bound;
    if (le === '+Inf') sawInf = true;
    out.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: count });
  });
  if (!sawInf) out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: h.count });
  out.push({ metricName: `${name}_sum`, labels, value: h.sum });
  out.push({ metricName: `${name}_count`, labels, value: h.count });
  return out;
}

export class PrometheusExporter {
  readonly registry = new Registry();
  private status: EngineStatus | undefined;
  private rates: Rates = { promptTokensPerS: 0, generationTokensPerS: 0 };
  private previous: { at: number; prompt: number; generation: number } | undefined;

  constructor(modelName: string) {
    const labels = { model_name: modelName };
    for (const def of definitions) {
      for (const name of def.names) {
        this.registry.registerMetric({
          name,
          help: def.help,
          type: def.type,
          get: () => {
            const s = this.status!;
            if (def.samples) {
              const values = def
                .samples(s)
                .map((x) => ({ value: x.value, labels: { ...labels, ...x.labels } }));
              return { name, help: def.help, type: def.type, aggregator: 'sum', values };
            }
            const v = def.read(s, this.rates);
            const all = def.labels ? { ...labels, ...def.labels(s) } : labels;
            return {
              name,
              help: def.help,
              type: def.type,
              aggregator: 'sum',
              values: typeof v === 'number' ? [{ value: v, labels: all }] : histogramValues(name, v, all),
            };
          },
          // prom-client's registry calls reset() only through resetMetrics(); nothing to reset here.
          reset: () => {},
        } as never);
      }
    }
  }

  /** The text exposition of one engine status snapshot. */
  async render(status: EngineStatus, now = Date.now()): Promise<string> {
    if (this.previous && now > this.previous.at) {
      const dt = (now - this.previous.at) / 1000;
      this.rates = {
        promptTokensPerS: (status.promptTokens - this.previous.prompt) / dt,
        generationTokensPerS: (status.generationTokens - this.previous.generation) / dt,
      };
    }
    this.previous = { at: now, prompt: status.promptTokens, generation: status.generationTokens };
    this.status = status;
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
