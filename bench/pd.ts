/**
 * `npm run bench:pd`: split prefill/decode against one mixed engine, same total cores.
 *
 * Split: a prefill engine and a decode engine (`prism engine --threads 1 --role prefill|decode`,
 * each its own process) behind the coordinator (engine/kv-transfer/coordinator.ts, in this
 * process, MindIE's flow by default). Mixed: one `prism engine --threads 2`. Both get the same
 * requests at the same times: Poisson arrivals at each rate, half of them long prompts with
 * short answers, half short prompts with long answers (the decodes a long prefill disturbs),
 * greedy, every prompt distinct (nothing prefix-cached). Per rate and setup: TTFT p50/p99 of
 * all requests, inter-token p50/p99 of the long answers, and for the split the KV moved per
 * request and the transfer time per prompt token (the decode engine's own counters). The two
 * setups alternate rate by rate in one run, so both see the same minutes of this shared machine.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureDefaultModel } from '../engine/default-model.js';
import { PdCoordinator, type PdFlow } from '../engine/kv-transfer/coordinator.js';
import { connectEngine, type GrpcEngineClient } from '../engine/service/client.js';
import type { Engine, GenerateRequest } from '../engine/types.js';
import { startEngineProcess, stopEngineProcess, wordPromptIds } from './engine-process.js';
import { positiveInteger, replaySavedReport, updateDocSection, type DocSection } from './report-cli.js';
import { percentile } from './stats.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const help = `usage: npm run bench:pd [-- options]

Split prefill/decode (two 1-thread engines + the coordinator) vs one 2-thread mixed engine.

options:
  --model PATH          model (default: SmolLM2-135M-Instruct)
  --rates LIST          request rates, requests/s (default 0.25,0.5,1)
  --requests N          requests per rate and setup (default 16)
  --long-prompt N       prompt tokens of the long-prompt requests (default 512)
  --short-prompt N      prompt tokens of the long-answer requests (default 32)
  --long-output N       new tokens of the long-answer requests (default 96)
  --short-output N      new tokens of the long-prompt requests (default 8)
  --flow FLOW           mindie (default) or llm-d
  --json                print the results as JSON (npm run -s keeps npm's banner out of it)
  --update-docs         also rewrite the split prefill/decode section of docs/benchmarks.md
  --from-json FILE      render a report saved with --json instead of measuring
  --help                this text

Hold the shared machine's bench lock while measuring: flock /tmp/prism-bench.lock npm run bench:pd`;

interface Timing {
  readonly long: boolean;
  readonly ttftMs: number;
  readonly gapsMs: number[];
}

interface SetupResult {
  readonly setup: 'split' | 'mixed';
  readonly rate: number;
  readonly requests: number;
  readonly wallS: number;
  readonly ttftP50Ms: number;
  readonly ttftP99Ms: number;
  readonly itlP50Ms: number;
  readonly itlP99Ms: number;
  /** Split only: KV moved per request (MB) and pull time per moved prompt token (ms). */
  readonly kvMbPerRequest?: number;
  readonly transferMsPerToken?: number;
}

interface Report {
  readonly model: string;
  readonly date: string;
  /** The machine's 1-minute load average at the end (and at the start, when recorded). */
  readonly loadAverage: number;
  readonly loadAverageStart?: number;
  readonly commit?: string;
  readonly flow: PdFlow;
  readonly longPrompt: number;
  readonly shortPrompt: number;
  readonly longOutput: number;
  readonly shortOutput: number;
  readonly results: SetupResult[];
}

/** `count` token ids of pseudo-random words seeded by `tag` (two tags share no prefix). */
async function timed(engine: Engine, request: GenerateRequest, long: boolean): Promise<Timing> {
  const t0 = performance.now();
  let first = NaN;
  let last = 0;
  let tokens = 0;
  const gaps: number[] = [];
  for await (const e of engine.generate(request)) {
    if (e.type === 'token' && e.tokenIds.length > 0) {
      const now = performance.now();
      if (tokens === 0) first = now - t0;
      else for (let i = 0; i < e.tokenIds.length; i++) gaps.push((now - last) / e.tokenIds.length);
      tokens += e.tokenIds.length;
      last = now;
    } else if (e.type === 'finish' && e.reason === 'error') throw new Error(`request failed: ${e.error}`);
  }
  return { long, ttftMs: first, gapsMs: gaps };
}

/** Exponential gaps of mean 1/rate from a seeded stream (the same schedule for both setups). */
function arrivals(rate: number, n: number, seed: number): number[] {
  let s = seed >>> 0 || 1;
  const out: number[] = [];
  let t = 0;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    t += (-Math.log(1 - s / 2 ** 32) / rate) * 1000;
    out.push(t);
  }
  return out;
}

interface Workload {
  readonly longPrompt: number;
  readonly shortPrompt: number;
  readonly longOutput: number;
  readonly shortOutput: number;
}

async function runRate(
  engine: Engine,
  setup: 'split' | 'mixed',
  rate: number,
  n: number,
  w: Workload,
  salt: string,
  decodeStatus?: () => Promise<{
    kvBytesIn: number;
    kvTransferMsIn: number;
    kvTokensIn: number;
    kvTransfersIn: number;
  }>,
): Promise<SetupResult> {
  // Even requests: a long prompt with a short answer; odd: a short prompt with a long answer.
  const prompts = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      wordPromptIds(engine, `${setup} ${salt} ${rate} ${i}`, i % 2 === 0 ? w.longPrompt : w.shortPrompt),
    ),
  );
  const schedule = arrivals(rate, n, Math.round(rate * 1000) + n);
  const before = decodeStatus ? await decodeStatus() : undefined;
  const t0 = performance.now();
  const timings = await Promise.all(
    prompts.map(async (ids, i) => {
      const wait = schedule[i] - (performance.now() - t0);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const long = i % 2 === 1;
      return timed(
        engine,
        {
          prompt: { kind: 'tokens', ids },
          params: { temperature: 0, maxNewTokens: long ? w.longOutput : w.shortOutput, ignoreEos: true },
        },
        long,
      );
    }),
  );
  const wallS = (performance.now() - t0) / 1000;
  const gaps = timings.filter((t) => t.long).flatMap((t) => t.gapsMs);
  const ttfts = timings.map((t) => t.ttftMs);
  const result: SetupResult = {
    setup,
    rate,
    requests: n,
    wallS,
    ttftP50Ms: percentile(ttfts, 50),
    ttftP99Ms: percentile(ttfts, 99),
    itlP50Ms: percentile(gaps, 50),
    itlP99Ms: percentile(gaps, 99),
  };
  if (!decodeStatus || !before) return result;
  const after = await decodeStatus();
  const transfers = after.kvTransfersIn - before.kvTransfersIn;
  return {
    ...result,
    kvMbPerRequest: (after.kvBytesIn - before.kvBytesIn) / 1e6 / Math.max(1, transfers),
    transferMsPerToken:
      (after.kvTransferMsIn - before.kvTransferMsIn) / Math.max(1, after.kvTokensIn - before.kvTokensIn),
  };
}

/** `prism engine` in its own process on a unix socket; resolves once it answers. */
const f = (v: number | undefined, d = 1) => (v !== undefined && Number.isFinite(v) ? v.toFixed(d) : '-');

function renderTable(r: Report): string {
  return [
    `Split prefill/decode benchmark: ${r.model}, ${r.flow} flow; half the requests ${r.longPrompt}-token prompts with ` +
      `${r.shortOutput} new tokens, half ${r.shortPrompt}-token prompts with ${r.longOutput} new tokens; greedy, ` +
      `Poisson arrivals` +
      (r.commit ? `; commit ${r.commit}` : '') +
      `; machine load average ` +
      (r.loadAverageStart !== undefined ? `${r.loadAverageStart.toFixed(1)} at the start, ` : '') +
      `${r.loadAverage.toFixed(1)} at the end`,
    '',
    '| rate req/s | setup | TTFT p50 ms | TTFT p99 ms | inter-token p50 ms | inter-token p99 ms | KV MB / request | transfer ms / prompt token |',
    '|---:|---|---:|---:|---:|---:|---:|---:|',
    ...r.results.map(
      (x) =>
        `| ${x.rate} | ${x.setup === 'split' ? 'split (1 + 1 thread)' : 'mixed (2 threads)'} | ${f(x.ttftP50Ms)} | ` +
        `${f(x.ttftP99Ms)} | ${f(x.itlP50Ms)} | ${f(x.itlP99Ms)} | ${f(x.kvMbPerRequest, 2)} | ${f(x.transferMsPerToken, 3)} |`,
    ),
  ].join('\n');
}

const DOC_SECTION: DocSection = {
  name: 'bench:pd',
  begin: '<!-- bench:pd:begin (generated by `npm run bench:pd -- --update-docs`) -->',
};

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      rates: { type: 'string', default: '0.25,0.5,1' },
      requests: { type: 'string', default: '16' },
      'long-prompt': { type: 'string', default: '512' },
      'short-prompt': { type: 'string', default: '32' },
      'long-output': { type: 'string', default: '96' },
      'short-output': { type: 'string', default: '8' },
      flow: { type: 'string', default: 'mindie' },
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

  const rates = values.rates.split(',').map((x) => {
    const v = Number(x.trim());
    if (!(v > 0)) throw new Error(`--rates: each must be a positive number, got '${x}'`);
    return v;
  });
  const n = positiveInteger('requests', values.requests);
  const w: Workload = {
    longPrompt: positiveInteger('long-prompt', values['long-prompt']),
    shortPrompt: positiveInteger('short-prompt', values['short-prompt']),
    longOutput: positiveInteger('long-output', values['long-output']),
    shortOutput: positiveInteger('short-output', values['short-output']),
  };
  const flow = values.flow;
  if (flow !== 'mindie' && flow !== 'llm-d')
    throw new Error(`--flow: must be mindie or llm-d, got '${flow}'`);
  const modelPath = values.model ?? ensureDefaultModel();
  const loadAverageStart = loadavg()[0];
  const dir = mkdtempSync(join(tmpdir(), 'prism-bench-pd-'));
  const started: ChildProcess[] = [];
  const clients: GrpcEngineClient[] = [];
  let coordinator: PdCoordinator | undefined;
  try {
    // The engines' defaults otherwise (block size 128, prefix cache on).
    const [p, d, m] = await Promise.all([
      startEngineProcess(modelPath, join(dir, 'prefill.sock'), ['--threads', '1', '--role', 'prefill']),
      startEngineProcess(modelPath, join(dir, 'decode.sock'), ['--threads', '1', '--role', 'decode']),
      startEngineProcess(modelPath, join(dir, 'mixed.sock'), ['--threads', '2']),
    ]);
    started.push(p.child, d.child, m.child);
    clients.push(p.client, d.client, m.client);
    coordinator = new PdCoordinator({
      prefill: [{ address: p.address, engine: connectEngine(p.address) }],
      decode: [{ address: d.address, engine: connectEngine(d.address) }],
      flow,
      recompute: false,
    });
    if (flow === 'mindie' && !(await coordinator.ready()))
      throw new Error('the decode engine did not open its results stream');
    const info = await m.client.info();
    const salt = Date.now().toString(36);
    // Warm-up: one request through each setup (thread start, page faults of the weights).
    for (const e of [coordinator, m.client] as Engine[])
      await timed(
        e,
        {
          prompt: { kind: 'text', text: 'Warm-up.' },
          params: { temperature: 0, maxNewTokens: 4, ignoreEos: true },
        },
        false,
      );
    const results: SetupResult[] = [];
    for (const rate of rates) {
      process.stderr.write(`bench:pd: ${rate} req/s, split ...\n`);
      results.push(await runRate(coordinator, 'split', rate, n, w, salt, () => d.client.status()));
      process.stderr.write(`bench:pd: ${rate} req/s, mixed ...\n`);
      results.push(await runRate(m.client, 'mixed', rate, n, w, salt));
    }
    const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
    }).stdout.trim();
    const report: Report = {
      model: info.modelName,
      date: new Date().toISOString().slice(0, 10),
      loadAverage: loadavg()[0],
      loadAverageStart,
      ...(commit ? { commit } : {}),
      flow,
      ...w,
      results,
    };
    const table = renderTable(report);
    process.stdout.write((values.json ? JSON.stringify(report, null, 2) : table) + '\n');
    if (values['update-docs']) updateDocSection(DOC_SECTION, report.date, table);
    return 0;
  } finally {
    await coordinator?.close();
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(started.map(stopEngineProcess));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`bench:pd: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);
