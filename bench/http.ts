/**
 * HTTP benchmark: N concurrent streaming chat clients against `prism serve` and, in the same
 * run, against llama.cpp's own `llama-server` (built from source by scripts/build-llama-cpp.mjs,
 * on demand: ~25 min on 2 cores the first time; PRISM_LLAMA_CPP_BIN names an existing build),
 * one slot per concurrent client (`-np`), on the same GGUF. Per concurrency level: time to first token (first non-empty content delta),
 * inter-token latency (gaps between content deltas), p50/p99, and output tok/s (completion
 * tokens ÷ wall time of the level). Plus the latency the gateway adds over calling the engine's
 * gRPC API directly (1-token chat requests, alternated, paired differences).
 *
 * The two servers run one after the other (never together: the machine has 2 cores), each in
 * its own process, with the same threads and the same prompts, greedy decoding.
 *
 * Usage: npm run bench:http [-- --concurrency 1,8,32 --max-tokens 32 --prompt-words N --json --update-docs]
 * (--prompt-words: long prompts, each request's own: see promptFor; the levels number their
 * requests one after another, so no prompt repeats and neither server's prefix cache serves one)
 */
import http from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createParser } from 'eventsource-parser';
import { ensureDefaultModel, projectRoot } from '../engine/default-model.js';
import { GrpcEngineClient } from '../engine/service/client.js';
import { describeCommit } from './engine/environment.js';
import { startChild, stopChild } from './child.js';
import { llamaCppBin } from './engine/llama-cpp-build.js';
import { percentile } from './stats.js';

interface Args {
  model: string;
  concurrency: number[];
  maxTokens: number;
  promptWords: number;
  overheadRuns: number;
  threads: number;
  json: boolean;
  updateDocs: boolean;
  skipLlama: boolean;
}

function parse(): Args {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      concurrency: { type: 'string', default: '1,8,32' },
      'max-tokens': { type: 'string', default: '32' },
      'prompt-words': { type: 'string', default: '0' },
      'overhead-runs': { type: 'string', default: '40' },
      threads: { type: 'string', default: String(availableParallelism()) },
      json: { type: 'boolean', default: false },
      'update-docs': { type: 'boolean', default: false },
      'skip-llama': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: npm run bench:http [-- --model PATH --concurrency 1,8,32 --max-tokens N --prompt-words N --overhead-runs N --threads N --skip-llama --json --update-docs]\n',
    );
    process.exit(0);
  }
  return {
    model: values.model ?? ensureDefaultModel(),
    concurrency: values.concurrency!.split(',').map(Number),
    maxTokens: Number(values['max-tokens']),
    promptWords: Number(values['prompt-words']),
    overheadRuns: Number(values['overhead-runs']),
    threads: Number(values.threads),
    json: values.json!,
    updateDocs: values['update-docs']!,
    skipLlama: values['skip-llama']!,
  };
}

const log = (line: string): void => void process.stderr.write(`bench:http: ${line}\n`);

interface RequestTiming {
  ttftMs: number;
  gapsMs: number[];
  completionTokens: number;
  promptTokens: number;
}

const topics = [
  'the sea',
  'a mountain',
  'a city at night',
  'a robot',
  'an old library',
  'a garden',
  'the moon',
  'a train journey',
];

const fillerWords = (
  'river stone lantern harbour meadow copper violin glacier orchard festival compass ' +
  'thunder velvet canyon beacon saffron willow marble falcon ember prairie quartz ' +
  'tapestry monsoon cinder lagoon juniper anchor'
).split(' ');

/**
 * Request i's messages: a short story prompt, unique per request; with `words` > 0 it first
 * carries that many filler words in an order of its own (about 1.2 tokens each with the
 * default model's tokenizer), so every request's prompt is long and shares no prefix past
 * the chat template.
 */
function promptFor(i: number, words: number): { role: 'user'; content: string }[] {
  const ask = `Write a short story about ${topics[i % topics.length]} (story ${i}).`;
  if (words <= 0) return [{ role: 'user', content: ask }];
  const notes = Array.from(
    { length: words },
    (_, j) => fillerWords[(i * 7 + j * ((i % 5) + 1)) % fillerWords.length],
  );
  return [{ role: 'user', content: `Story ${i}. Notes: ${notes.join(' ')}. ${ask}` }];
}

async function streamChat(
  url: string,
  model: string,
  i: number,
  maxTokens: number,
  promptWords: number,
): Promise<RequestTiming> {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      messages: promptFor(i, promptWords),
      max_tokens: maxTokens,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  let first = NaN;
  let last = NaN;
  const gaps: number[] = [];
  let completion = 0;
  let promptTokens = 0;
  let chunks = 0;
  const parser = createParser({
    onEvent: (e) => {
      if (e.data === '[DONE]') return;
      const now = performance.now();
      const chunk = JSON.parse(e.data) as {
        choices: { delta: { content?: string } }[];
        usage?: { completion_tokens: number; prompt_tokens: number } | null;
      };
      if (chunk.usage) {
        completion = chunk.usage.completion_tokens;
        promptTokens = chunk.usage.prompt_tokens;
      }
      const content = chunk.choices[0]?.delta.content;
      if (!content) return;
      chunks++;
      if (Number.isNaN(first)) first = now - t0;
      else gaps.push(now - last);
      last = now;
    },
  });
  const decoder = new TextDecoder();
  for await (const c of res.body as unknown as AsyncIterable<Uint8Array>)
    parser.feed(decoder.decode(c, { stream: true }));
  return { ttftMs: first, gapsMs: gaps, completionTokens: completion || chunks, promptTokens };
}

interface LevelResult {
  server: string;
  concurrency: number;
  requests: number;
  ttftP50: number;
  ttftP99: number;
  itlP50: number;
  itlP99: number;
  outputTokPerS: number;
  /** The median prompt length the server reported (usage.prompt_tokens). */
  promptTokensP50: number;
}

/** Requests a level of `concurrency` clients sends: at least 4, so that concurrency 1 has a median worth the name. */
function levelRequests(concurrency: number): number {
  return concurrency * Math.max(1, Math.ceil(4 / concurrency));
}

/**
 * The first request index of each level: the levels number their requests one after another,
 * so no level repeats an earlier level's prompt (which a prefix cache would serve).
 */
function levelStarts(concurrency: readonly number[]): number[] {
  let next = 0;
  return concurrency.map((c) => {
    const first = next;
    next += levelRequests(c);
    return first;
  });
}

async function runLevel(
  server: string,
  url: string,
  model: string,
  concurrency: number,
  maxTokens: number,
  promptWords: number,
  firstRequest: number,
): Promise<LevelResult> {
  const perClient = levelRequests(concurrency) / concurrency;
  const timings: RequestTiming[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, c) => {
      for (let k = 0; k < perClient; k++)
        timings.push(await streamChat(url, model, firstRequest + c * perClient + k, maxTokens, promptWords));
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  const ttft = timings.map((t) => t.ttftMs);
  const gaps = timings.flatMap((t) => t.gapsMs);
  return {
    server,
    concurrency,
    requests: timings.length,
    ttftP50: percentile(ttft, 50),
    ttftP99: percentile(ttft, 99),
    itlP50: percentile(gaps, 50),
    itlP99: percentile(gaps, 99),
    outputTokPerS: timings.reduce((s, t) => s + t.completionTokens, 0) / wall,
    promptTokensP50: percentile(
      timings.map((t) => t.promptTokens),
      50,
    ),
  };
}

interface PairStats {
  pairs: number;
  httpP50Ms: number;
  grpcP50Ms: number;
  addedP50Ms: number;
  addedP99Ms: number;
}

interface Overhead {
  /** POST /v1/tokenizer (do_decode false) vs the Tokenize RPC: the HTTP layer alone. */
  roundTrip: PairStats;
  /** 1-token chat completions vs GenerateStream of the same chat: includes the engine's work. */
  chat: PairStats;
  /** roundTrip again, with the HTTP side sent by `fetch` (undici) instead of node:http. */
  roundTripFetch: PairStats;
}

function pairStats(http: number[], grpc: number[]): PairStats {
  const diffs = http.map((h, i) => h - grpc[i]);
  return {
    pairs: http.length,
    httpP50Ms: percentile(http, 50),
    grpcP50Ms: percentile(grpc, 50),
    addedP50Ms: percentile(diffs, 50),
    addedP99Ms: percentile(diffs, 99),
  };
}

/**
 * Alternates `viaHttp` and `viaGrpc` calls and pairs their times, after `warmup` unmeasured
 * rounds: a server runs for hours, so what counts is its code once V8 has optimized it (a
 * fresh process needs a few thousand requests to get there, and is slower by a millisecond
 * per request until then).
 */
async function pairs(
  runs: number,
  warmup: number,
  viaHttp: () => Promise<void>,
  viaGrpc: () => Promise<void>,
): Promise<PairStats> {
  const http: number[] = [];
  const grpc: number[] = [];
  for (let i = 0; i < runs + warmup; i++) {
    let t = performance.now();
    await viaHttp();
    const h = performance.now() - t;
    t = performance.now();
    await viaGrpc();
    const g = performance.now() - t;
    if (i >= warmup) {
      http.push(h);
      grpc.push(g);
    }
  }
  return pairStats(http, grpc);
}

/**
 * POST of a JSON body over a keep-alive node:http agent; resolves once the reply is read.
 * The overhead pairs use this rather than `fetch`: undici's fetch spends about half a
 * millisecond of its own per call on this machine (a trivial node:http server answers a
 * node:http client in ~0.3 ms and a fetch client in ~0.8 ms), which is the client library's
 * cost, not the gateway's. The gRPC side is likewise a lean client (grpc-js on node:http2).
 * A `fetch` row is kept so both are visible.
 */
function jsonPoster(base: string): { post(path: string, body: unknown): Promise<void>; close(): void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const post = (path: string, body: unknown): Promise<void> =>
    new Promise((resolve, reject) => {
      const payload = JSON.stringify(body);
      const req = http.request(
        `${base}${path}`,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          res.on('end', () => {
            if (res.statusCode !== 200) reject(new Error(`${path}: HTTP ${res.statusCode}: ${text}`));
            else {
              JSON.parse(text);
              resolve();
            }
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  return { post, close: () => agent.destroy() };
}

/** The same requests through the gateway (HTTP) and straight over gRPC to the same engine. */
async function gatewayOverhead(url: string, socket: string, model: string, runs: number): Promise<Overhead> {
  const client = new GrpcEngineClient(`unix:${socket}`);
  const poster = jsonPoster(url);
  const messages = [{ role: 'user' as const, content: 'Say hi.' }];
  const text = 'How much latency does the HTTP gateway add?';
  const fetchPost = async (path: string, body: unknown): Promise<void> => {
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status}`);
    await res.json();
  };
  const tokenize = async (): Promise<void> => void (await client.tokenize(text, true));
  try {
    const roundTrip = await pairs(
      runs * 5,
      3000,
      () => poster.post('/v1/tokenizer', { inputs: text, do_decode: false }),
      tokenize,
    );
    const roundTripFetch = await pairs(
      runs * 5,
      1000,
      () => fetchPost('/v1/tokenizer', { inputs: text, do_decode: false }),
      tokenize,
    );
    const chat = await pairs(
      runs,
      5,
      () => poster.post('/v1/chat/completions', { model, messages, max_tokens: 1, temperature: 0 }),
      async () => {
        for await (const ev of client.generate({
          prompt: { kind: 'chat', messages },
          params: { maxNewTokens: 1, temperature: 0 },
        }))
          void ev;
      },
    );
    return { roundTrip, chat, roundTripFetch };
  } finally {
    poster.close();
    await client.close();
  }
}

function table(levels: LevelResult[], overhead: Overhead): string {
  const f = (n: number, d = 1): string => (Number.isFinite(n) ? n.toFixed(d) : '–');
  const lines = [
    '| server | concurrency | requests | TTFT p50 (ms) | TTFT p99 (ms) | inter-token p50 (ms) | inter-token p99 (ms) | output tok/s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...levels.map(
      (l) =>
        `| ${l.server} | ${l.concurrency} | ${l.requests} | ${f(l.ttftP50)} | ${f(l.ttftP99)} | ${f(l.itlP50)} | ${f(l.itlP99)} | ${f(l.outputTokPerS)} |`,
    ),
  ];
  const ratios = levels
    .filter((l) => l.server === 'prism')
    .map((p) => {
      const q = levels.find((l) => l.server === 'llama.cpp' && l.concurrency === p.concurrency);
      return q ? `concurrency ${p.concurrency}: ${f(p.outputTokPerS / q.outputTokPerS, 2)}×` : '';
    })
    .filter(Boolean);
  if (ratios.length) lines.push('', `Output tok/s, Prism ÷ llama.cpp: ${ratios.join(', ')}.`);
  const row = (what: string, p: PairStats): string =>
    `| ${what} | ${p.pairs} | ${f(p.httpP50Ms, 2)} | ${f(p.grpcP50Ms, 2)} | ${f(p.addedP50Ms, 2)} | ${f(p.addedP99Ms, 2)} |`;
  lines.push(
    '',
    'Gateway-added latency (the same request through HTTP and straight over gRPC to the same engine, alternated; paired differences):',
    '',
    '| request | pairs | HTTP p50 (ms) | gRPC p50 (ms) | added p50 (ms) | added p99 (ms) |',
    '|---|---:|---:|---:|---:|---:|',
    row('`POST /v1/tokenizer` vs `Tokenize`', overhead.roundTrip),
    row('1-token `POST /v1/chat/completions` vs `GenerateStream`', overhead.chat),
    row('`POST /v1/tokenizer` sent with `fetch` (undici) vs `Tokenize`', overhead.roundTripFetch),
    '',
    'HTTP requests are sent with node:http over a keep-alive connection (as the gRPC side uses grpc-js over ' +
      'node:http2); the last row shows what `fetch` itself adds on top.',
  );
  return lines.join('\n');
}

const BEGIN = '<!-- bench:http begin -->';
const END = '<!-- bench:http end -->';

function updateDocs(body: string, args: Args): void {
  const path = join(projectRoot(), 'docs', 'benchmarks.md');
  let doc = '';
  try {
    doc = readFileSync(path, 'utf-8');
  } catch {
    doc = '# Benchmarks\n';
  }
  const generated = `${BEGIN}\nMeasured ${new Date().toISOString().slice(0, 10)} at commit ${describeCommit(projectRoot())}, ${args.threads} threads, max_tokens ${args.maxTokens}${args.promptWords > 0 ? `, ${args.promptWords} filler words per prompt` : ''}, greedy, model \`${args.model.split('/').pop()}\`.\n\n${body}\n${END}`;
  if (doc.includes(BEGIN)) {
    doc = doc.slice(0, doc.indexOf(BEGIN)) + generated + doc.slice(doc.indexOf(END) + END.length);
  } else {
    doc +=
      `\n## HTTP gateways\n\n` +
      'N concurrent streaming chat clients (`/v1/chat/completions`, `stream: true`, distinct prompts, greedy) against ' +
      '`prism serve` (gateways → gRPC over a unix socket → engine) and against ' +
      "`llama-server` (llama.cpp's own server, built from source by scripts/build-llama-cpp.mjs; one slot per " +
      'concurrent request, `-np`, batched by llama.cpp), one server at a time, same GGUF and threads. ' +
      'TTFT = time to the first non-empty content delta; inter-token = gaps between content deltas; output tok/s = ' +
      'completion tokens ÷ wall time of the level. Gateway-added latency: 1-token chat requests through HTTP and ' +
      'straight over gRPC to the same engine, alternated; the median of the paired differences (target ≤ 1 ms).\n\n' +
      'Reproduce: `npm run bench:http` (`-- --json`, `-- --update-docs` rewrites the part between the markers).\n\n' +
      generated +
      '\n';
  }
  writeFileSync(path, doc);
}

async function main(): Promise<void> {
  const args = parse();
  const levels: LevelResult[] = [];
  const socket = join(tmpdir(), `prism-bench-${process.pid}.sock`);
  log('starting prism serve ...');
  const prism = await startChild(
    process.execPath,
    [
      '--import',
      'tsx',
      'cli/main.ts',
      'serve',
      '--model',
      args.model,
      '--model-name',
      'bench',
      '--port',
      '0',
      '--engine-socket',
      socket,
      '--threads',
      String(args.threads),
    ],
    /service listener on (http:\/\/[^\s]+)/,
  );
  const starts = levelStarts(args.concurrency);
  let overhead: Overhead;
  try {
    const url = prism.match[1];
    for (const [j, c] of args.concurrency.entries()) {
      log(`prism: concurrency ${c}`);
      levels.push(await runLevel('prism', url, 'bench', c, args.maxTokens, args.promptWords, starts[j]!));
      log(JSON.stringify(levels.at(-1)));
    }
    log('prism: gateway-added latency');
    overhead = await gatewayOverhead(url, socket, 'bench', args.overheadRuns);
    log(JSON.stringify(overhead));
  } finally {
    await stopChild(prism.child);
  }
  if (!args.skipLlama) {
    const bin = llamaCppBin(projectRoot(), true)!;
    log(`starting llama.cpp's llama-server (${bin}) ...`);
    const maxC = Math.max(...args.concurrency);
    // One slot per client of the highest level, each with room for a prompt and the reply;
    // it logs "listening on URL" once the model is loaded.
    const llama = await startChild(
      join(bin, 'llama-server'),
      ['-m', args.model, '--host', '127.0.0.1', '--port', '0', '-np', String(maxC)]
        .concat([
          '-c',
          String(maxC * (256 + 2 * args.promptWords + args.maxTokens)),
          '-t',
          String(args.threads),
        ])
        .concat(['-tb', String(args.threads), '-ngl', '0', '--no-webui']),
      /listening on (http:\/\/[^\s]+)/,
    );
    try {
      for (const [j, c] of args.concurrency.entries()) {
        log(`llama.cpp: concurrency ${c}`);
        levels.push(
          await runLevel(
            'llama.cpp',
            llama.match[1],
            'llama.cpp',
            c,
            args.maxTokens,
            args.promptWords,
            starts[j]!,
          ),
        );
        log(JSON.stringify(levels.at(-1)));
      }
    } finally {
      await stopChild(llama.child);
    }
  }
  const text = table(levels, overhead);
  if (args.json) process.stdout.write(JSON.stringify({ args, levels, overhead }, null, 2) + '\n');
  else process.stdout.write(text + '\n');
  if (args.updateDocs) updateDocs(text, args);
}

main().catch((err: unknown) => {
  log((err as Error).stack ?? String(err));
  process.exit(1);
});
