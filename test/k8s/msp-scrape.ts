/**
 * Reads a model server's /metrics the way the endpoint picker's core metrics extractor does
 * (llm-d-inference-scheduler, pkg/epp/framework/plugins/datalayer/extractor/metrics: the
 * `vllm` engine mapping, spec.go, loraspec.go): the text exposition parsed into families; for
 * each protocol metric the family by name, then
 *   - num_requests_waiting / num_requests_running / kv_cache_usage_perc: the gauge's value
 *     (the series with the latest timestamp; without timestamps, the first);
 *   - lora_requests_info: the series with the largest value (its value is the time of the
 *     state), its labels max_lora (an integer), running_lora_adapters and waiting_lora_adapters
 *     (comma-separated, each name trimmed, empty ones dropped);
 *   - cache_config_info: the labels block_size and num_gpu_blocks (integers).
 * A missing family or an unparsable label is an error, as it is for the extractor.
 */
import assert from 'node:assert/strict';
import parse from 'parse-prometheus-text-format';

export interface MspMetrics {
  readonly waitingQueueSize: number;
  readonly runningRequestsSize: number;
  readonly kvCacheUsagePercent: number;
  readonly maxActiveModels: number;
  readonly activeModels: readonly string[];
  readonly waitingModels: readonly string[];
  /** The lora_requests_info series' value: seconds since the epoch. */
  readonly loraUpdatedAt: number;
  readonly cacheBlockSize: number;
  readonly cacheNumBlocks: number;
}

type Family = { name: string; type: string; metrics: { value?: string; labels?: Record<string, string> }[] };

function family(families: Family[], name: string): Family {
  const f = families.find((x) => x.name === name);
  assert.ok(f, `metric family "${name}" not found`);
  assert.ok(f.metrics.length > 0, `no metrics found for "${name}"`);
  return f;
}

const gauge = (families: Family[], name: string): number => Number(family(families, name).metrics[0].value);

function atoi(v: string | undefined, what: string): number {
  assert.ok(v !== undefined && /^-?\d+$/.test(v), `${what}: not an integer: ${String(v)}`);
  return Number(v);
}

const adapters = (csv: string | undefined): string[] =>
  (csv ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

/** Parses one scrape's text. */
function extractMsp(text: string): MspMetrics {
  const families = parse(text) as Family[];
  const lora = family(families, 'vllm:lora_requests_info').metrics.reduce((a, b) =>
    Number(b.value) > Number(a.value) ? b : a,
  );
  const cache = family(families, 'vllm:cache_config_info').metrics[0];
  return {
    waitingQueueSize: gauge(families, 'vllm:num_requests_waiting'),
    runningRequestsSize: gauge(families, 'vllm:num_requests_running'),
    kvCacheUsagePercent: gauge(families, 'vllm:kv_cache_usage_perc'),
    maxActiveModels: atoi(lora.labels?.max_lora, 'max_lora'),
    activeModels: adapters(lora.labels?.running_lora_adapters),
    waitingModels: adapters(lora.labels?.waiting_lora_adapters),
    loraUpdatedAt: Number(lora.value),
    cacheBlockSize: atoi(cache.labels?.block_size, 'block_size'),
    cacheNumBlocks: atoi(cache.labels?.num_gpu_blocks, 'num_gpu_blocks'),
  };
}

/** GET <base>/metrics and extract. */
export async function scrapeMsp(base: string): Promise<MspMetrics> {
  const r = await fetch(`${base}/metrics`);
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
  return extractMsp(await r.text());
}
