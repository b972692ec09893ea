/**
 * `npm run bench:grpc`: the engine as its callers see it — `prism engine` in its own process,
 * driven over gRPC (unix socket) by the engine client from this one.
 *
 * 1. Load levels: at concurrency 1, 4, 16, 64, that many greedy streams start together, each
 *    with its own prompt (distinct from the first token, so the prefix cache cannot help);
 *    output tok/s = generated tokens ÷ wall time of the level; TTFT = request sent → first
 *    token event; inter-token = gap between token events ÷ tokens in the event.
 * 2. Prefix cache: TTFT of a 2,000-token prompt whose first 1,900 tokens are cached (an
 *    earlier request with the same 1,900 tokens and another tail) vs the same-length prompt
 *    cold; medians over --runs, each run with prefixes never seen before.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { GrpcEngineClient } from '../engine/service/client.js';
import type { GenerateRequest } from '../engine/types.js';
import { startEngineProcess, stopEngineProcess, wordPromptIds } from './engine-process.js';
import { positiveInteger, replaySavedReport, updateDocSection, type DocSection } from './report-cli.js';
import { median, percentile } from './stats.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const help = `usage: npm run bench:grpc [-- options]

Benchmarks the engine through its gRPC API (prism engine in a child process, unix socket).

options:
  --model PATH        model (default: SmolLM2-135M-Instruct)
  --levels LIST       concurrency levels (default 1,4,16,64)
  --tokens N          new tokens per request in the load levels (default 32)
  --prompt-tokens N   prompt length in the load levels (default 32)
  --runs N            runs of the prefix-cache measurement (default 3)
  --json              print the results as JSON instead of a table
  --update-docs       also rewrite the gRPC engine section of docs/benchmarks.md
  --from-json FILE    render a report saved with --json instead of measuring
  --help              this text`;

interface LevelResult {
  readonly concurrency: number;
  readonly requests: number;
  readonly outputTokens: number;
  readonly wallS: number;
  readonly outputTokPerS: number;
  readonly ttftP50Ms: number;
  readonly ttftP99Ms: number;
  readonly itlP50Ms: number;
  readonly itlP99Ms: number;
}

interface PrefixResult {
  readonly promptTokens: number;
  readonly cachedPrefixTokens: number;
  readonly reportedCachedTokens: number;
  readonly coldTtftMs: number;
  readonly warmTtftMs: number;
  readonly speedup: number;
}

interface Report {
  readonly model: string;
  readonly date: string;
  /** 1-minute load average of the machine when the run ended (other work skews the numbers). */
  readonly loadAverage?: number;
  readonly commit?: string;
  readonly newTokens: number;
  readonly promptTokens: number;
  readonly levels: LevelResult[];
  readonly prefix: PrefixResult;
}

/** Nearest-rank percentile. */
interface StreamTiming {
  readonly ttftMs: number;
  readonly gapsMs: number[];
  readonly tokens: number;
  readonly cachedPromptTokens: number;
}

/** Runs one request over the stream and times it from the client's side. */
async function timedStream(client: GrpcEngineClient, request: GenerateRequest): Promise<StreamTiming> {
  const t0 = performance.now();
  let first = NaN;
  let last = 0;
  let tokens = 0;
  let cached = 0;
  const gaps: number[] = [];
  for await (const e of client.generate(request)) {
    if (e.type === 'token' && e.tokenIds.length > 0) {
      const now = performance.now();
      if (tokens === 0) first = now - t0;
      else for (let i = 0; i < e.tokenIds.length; i++) gaps.push((now - last) / e.tokenIds.length);
      tokens += e.tokenIds.length;
      last = now;
    } else if (e.type === 'finish') {
      if (e.reason === 'error') throw new Error(`request failed: ${e.error ?? 'unknown error'}`);
      cached = e.usage.cachedPromptTokens;
    }
  }
  return { ttftMs: first, gapsMs: gaps, tokens, cachedPromptTokens: cached };
}

/** `count` token ids of pseudo-random words seeded by `tag`: two tags share no run of tokens. */
async function loadLevel(
  client: GrpcEngineClient,
  concurrency: number,
  newTokens: number,
  promptTokens: number,
  salt: string,
): Promise<LevelResult> {
  const prompts = await Promise.all(
    Array.from({ length: concurrency }, (_, i) =>
      wordPromptIds(client, `Request ${salt}-${concurrency}-${i}`, promptTokens),
    ),
  );
  const t0 = performance.now();
  const timings = await Promise.all(
    prompts.map((ids) =>
      timedStream(client, {
        prompt: { kind: 'tokens', ids },
        params: { temperature: 0, maxNewTokens: newTokens, ignoreEos: true },
      }),
    ),
  );
  const wallS = (performance.now() - t0) / 1000;
  const outputTokens = timings.reduce((s, t) => s + t.tokens, 0);
  const ttfts = timings.map((t) => t.ttftMs);
  const gaps = timings.flatMap((t) => t.gapsMs);
  return {
    concurrency,
    requests: concurrency,
    outputTokens,
    wallS,
    outputTokPerS: outputTokens / wallS,
    ttftP50Ms: percentile(ttfts, 50),
    ttftP99Ms: percentile(ttfts, 99),
    itlP50Ms: percentile(gaps, 50),
    itlP99Ms: percentile(gaps, 99),
  };
}

async function prefixCache(client: GrpcEngineClient, runs: number, salt: string): Promise<PrefixResult> {
  const PROMPT = 2000;
  const PREFIX = 1900;
  const cold: number[] = [];
  const warm: number[] = [];
  let reported = 0;
  const oneToken = (ids: number[]): GenerateRequest => ({
    prompt: { kind: 'tokens', ids },
    params: { temperature: 0, maxNewTokens: 1, ignoreEos: true },
  });
  for (let r = 0; r < runs; r++) {
    const a = await wordPromptIds(client, `Document ${salt}-${r}-A`, PROMPT);
    const b = await wordPromptIds(client, `Document ${salt}-${r}-B`, PROMPT);
    // Cold: prompt A, never seen. It also caches A's first 1,900 tokens for the warm run.
    cold.push((await timedStream(client, oneToken(a))).ttftMs);
    // Warm: A's 1,900-token prefix with another 100-token tail (from B).
    const t = await timedStream(client, oneToken([...a.slice(0, PREFIX), ...b.slice(PREFIX)]));
    warm.push(t.ttftMs);
    reported = t.cachedPromptTokens;
  }
  const coldMs = median(cold);
  const warmMs = median(warm);
  return {
    promptTokens: PROMPT,
    cachedPrefixTokens: PREFIX,
    reportedCachedTokens: reported,
    coldTtftMs: coldMs,
    warmTtftMs: warmMs,
    speedup: coldMs / warmMs,
  };
}

/** Starts `prism engine` on a unix socket and waits until it answers. */
const f = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : '-');

function renderTable(r: Report): string {
  const lines = [
    `gRPC engine benchmark: ${r.model}, ${r.promptTokens}-token prompts, ${r.newTokens} new tokens each, greedy` +
      (r.commit ? `; commit ${r.commit}` : '') +
      (r.loadAverage !== undefined ? `; machine load average ${r.loadAverage.toFixed(1)} at the end` : ''),
    '',
    '| concurrency | output tok/s | TTFT p50 ms | TTFT p99 ms | inter-token p50 ms | inter-token p99 ms |',
    '|---:|---:|---:|---:|---:|---:|',
    ...r.levels.map(
      (l) =>
        `| ${l.concurrency} | ${f(l.outputTokPerS)} | ${f(l.ttftP50Ms)} | ${f(l.ttftP99Ms)} | ${f(l.itlP50Ms)} | ${f(l.itlP99Ms)} |`,
    ),
    '',
    `| ${r.prefix.promptTokens}-token prompt | TTFT ms (median) |`,
    '|---|---:|',
    `| cold | ${f(r.prefix.coldTtftMs)} |`,
    `| first ${r.prefix.cachedPrefixTokens} tokens cached (engine reused ${r.prefix.reportedCachedTokens}) | ${f(r.prefix.warmTtftMs)} |`,
    `| speed-up (target ≥ 5×) | ${f(r.prefix.speedup, 1)}× |`,
  ];
  return lines.join('\n');
}

const SECTION_INTRO = `## gRPC engine

The engine as its callers see it: \`prism engine\` in its own process (default config: block
size 128, prefix cache on), driven over gRPC on a unix socket by the engine client
(\`engine/service/client.ts\`) from the benchmark process. Load levels: N greedy streams start
together, each with its own prompt (distinct from the first token, so nothing is
prefix-cached); output tok/s = generated tokens ÷ wall time of the level; TTFT = request sent
→ first token event; inter-token = gap between token events. Prefix cache: TTFT (one new
token) of a 2,000-token prompt whose first 1,900 tokens were cached by an earlier request,
vs the same length cold; medians.

Reproduce: \`npm run bench:grpc\` (table), \`-- --json\`, \`-- --update-docs\` (rewrites the
part between the markers below).
`;

const DOC_SECTION: DocSection = {
  name: 'bench:grpc',
  begin: '<!-- bench:grpc:begin (generated by `npm run bench:grpc -- --update-docs`) -->',
  intro: SECTION_INTRO,
};

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      levels: { type: 'string', default: '1,4,16,64' },
      tokens: { type: 'string', default: '32' },
      'prompt-tokens': { type: 'string', default: '32' },
      runs: { type: 'string', default: '3' },
      json: { type: 'boolean', default: false },
      'update-docs': { type: 'boolean', default: false },
      'from-json': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(help + '\n');
    return 0;
  }
  if (values['from-json'] !== undefined) {
    replaySavedReport<Report>(values['from-json'], renderTable, {
      json: values.json,
      updateDocs: values['update-docs'],
      section: DOC_SECTION,
    });
    return 0;
  }

  const levels = values.levels.split(',').map((l) => positiveInteger('levels', l.trim()));
  const newTokens = positiveInteger('tokens', values.tokens);
  const promptTokens = positiveInteger('prompt-tokens', values['prompt-tokens']);
  const runs = positiveInteger('runs', values.runs);
  const modelPath = values.model ?? ensureDefaultModel();

  const dir = mkdtempSync(join(tmpdir(), 'prism-bench-grpc-'));
  const { child, client } = await startEngineProcess(modelPath, join(dir, 'engine.sock'));
  const salt = Date.now().toString(36);
  try {
    const info = await client.info();
    // Warm-up: the first step pays one-time costs (thread start, page faults of the weights).
    await timedStream(client, {
      prompt: { kind: 'text', text: 'Warm-up.' },
      params: { temperature: 0, maxNewTokens: 4, ignoreEos: true },
    });
    const levelResults: LevelResult[] = [];
    for (const c of levels) {
      process.stderr.write(`bench:grpc: concurrency ${c} ...\n`);
      levelResults.push(await loadLevel(client, c, newTokens, promptTokens, salt));
    }
    process.stderr.write('bench:grpc: prefix cache (2,000-token prompts) ...\n');
    const prefix = await prefixCache(client, runs, salt);
    const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
    }).stdout.trim();
    const report: Report = {
      loadAverage: loadavg()[0],
      ...(commit ? { commit } : {}),
      model: info.modelName,
      date: new Date().toISOString().slice(0, 10),
      newTokens,
      promptTokens,
      levels: levelResults,
      prefix,
    };
    const table = renderTable(report);
    process.stdout.write((values.json ? JSON.stringify(report, null, 2) : table) + '\n');
    if (values['update-docs']) updateDocSection(DOC_SECTION, report.date, table);
    return 0;
  } finally {
    await client.close();
    await stopEngineProcess(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`bench:grpc: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);
