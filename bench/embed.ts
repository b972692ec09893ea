/**
 * Embedding benchmark: sentences/s and per-request latency (p50, p99) at each concurrency
 * (default 1, 16, 256 clients, each sending one text per request, closed loop) of inputs of
 * 16-256 tokens, against three servers one after the other on the same machine, threads and
 * texts:
 *
 * - Prism (`prism serve --model DIR`: the folder's safetensors, POST /v1/embeddings);
 * - llama.cpp: a real `llama-server --embedding` when --llama-server names its binary (on the
 *   GGUF twin of the same weights); else bench/llama-server.ts --embedding, llama.cpp through
 *   node-llama-cpp's prebuilt binary, which embeds one input per llama_decode;
 * - sentence-transformers on PyTorch CPU (bench/embed/st_server.py, the same folder), batching
 *   the requests that wait.
 *
 * Texts are made from the test set's sentences (test/pooling/sentences.ts) to token lengths
 * spread evenly over 16..256 by MiniLM's own tokenizer. A short run proves the script; the
 * comparison that counts is a quiet machine's (docs/benchmarks.md says which was which).
 *
 * Usage: npm run bench:embed [-- --model DIR --gguf FILE --concurrency 1,16,256 --requests N
 *        --threads N --sides prism,llama.cpp,st --llama-server PATH --json]
 */
import type { ChildProcess } from 'node:child_process';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadTokenizer } from '../engine/tokenizer/index.js';
import { fixture } from '../test/fixtures.js';
import { MIXED_SENTENCES } from '../test/pooling/sentences.js';
import { startChild, stopChild } from './child.js';
import { useProjectPython } from './lora-peer.js';
import { percentile } from './stats.js';

type Side = 'prism' | 'llama.cpp' | 'st';

interface Args {
  model: string;
  gguf: string;
  concurrency: number[];
  requests: number;
  threads: number;
  sides: Side[];
  llamaServer?: string;
  json: boolean;
}

function parse(): Args {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      gguf: { type: 'string' },
      concurrency: { type: 'string', default: '1,16,256' },
      requests: { type: 'string', default: '512' },
      threads: { type: 'string', default: String(availableParallelism()) },
      sides: { type: 'string', default: 'prism,llama.cpp,st' },
      'llama-server': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: npm run bench:embed [-- --model DIR --gguf FILE --concurrency 1,16,256 --requests N --threads N ' +
        '--sides prism,llama.cpp,st --llama-server PATH --json]\n',
    );
    process.exit(0);
  }
  const sides = values.sides!.split(',') as Side[];
  for (const s of sides)
    if (!['prism', 'llama.cpp', 'st'].includes(s)) throw new Error(`--sides: unknown side '${s}'`);
  return {
    model: values.model ?? fixture('all-minilm-l6-v2').path,
    gguf: values.gguf ?? fixture('all-minilm-l6-v2-f16').path,
    concurrency: values.concurrency!.split(',').map(Number),
    requests: Number(values.requests),
    threads: Number(values.threads),
    sides,
    ...(values['llama-server'] ? { llamaServer: values['llama-server'] } : {}),
    json: values.json!,
  };
}

const log = (line: string): void => void process.stderr.write(`bench:embed: ${line}\n`);

/** `count` texts whose token counts (special tokens included) step evenly through 16..256. */
async function texts(model: string, count: number): Promise<{ texts: string[]; tokens: number[] }> {
  const tokenizer = await loadTokenizer(model);
  const words = MIXED_SENTENCES.join(' ').split(/\s+/);
  const out: string[] = [];
  const tokens: number[] = [];
  for (let i = 0; i < count; i++) {
    const want = 16 + Math.round((240 * i) / Math.max(1, count - 1));
    const textOf = (n: number): string =>
      Array.from({ length: n }, (_, j) => words[(i * 7 + j) % words.length]).join(' ');
    // The most words whose tokens (special ones included) stay within `want`.
    let lo = 1;
    let hi = want;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if ((await tokenizer.encodeAsync(textOf(mid))).length <= want) lo = mid;
      else hi = mid - 1;
    }
    out.push(textOf(lo));
    tokens.push((await tokenizer.encodeAsync(textOf(lo))).length);
  }
  return { texts: out, tokens };
}

interface Level {
  side: Side;
  concurrency: number;
  requests: number;
  sentencesPerS: number;
  p50Ms: number;
  p99Ms: number;
}

/** `concurrency` clients, closed loop, until `inputs` have each been sent once. */
async function runLevel(
  side: Side,
  url: string,
  inputs: readonly string[],
  concurrency: number,
): Promise<Level> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  const client = async (): Promise<void> => {
    while (next < inputs.length) {
      const i = next++;
      const start = performance.now();
      const res = await fetch(`${url}/v1/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'bench', input: inputs[i], encoding_format: 'float' }),
      });
      const body = (await res.json()) as { data?: { embedding: number[] }[] };
      if (res.status !== 200 || !body.data?.[0]?.embedding.length)
        throw new Error(`${side}: HTTP ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
      latencies.push(performance.now() - start);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  const wall = (performance.now() - t0) / 1000;
  return {
    side,
    concurrency,
    requests: inputs.length,
    sentencesPerS: inputs.length / wall,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
}

async function startSide(side: Side, a: Args): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  if (side === 'prism')
    return startChild(
      process.execPath,
      [
        '--import',
        'tsx',
        'cli/main.ts',
        'serve',
        '--model',
        a.model,
        '--model-name',
        'bench',
        '--port',
        '0',
        '--engine-socket',
        join(tmpdir(), `prism-bench-embed-${process.pid}.sock`),
        '--threads',
        String(a.threads),
      ],
      /service listener on (http:\/\/[^\s]+)/,
    );
  if (side === 'st')
    return startChild(
      process.env.PYTHON ?? 'python3',
      ['bench/embed/st_server.py', '--model', a.model, '--threads', String(a.threads)],
      /listening (http:\/\/[^\s]+)/,
    );
  if (a.llamaServer)
    return startChild(
      a.llamaServer,
      [
        '-m',
        a.gguf,
        '--embedding',
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '-t',
        String(a.threads),
        '-tb',
        String(a.threads),
        '--parallel',
        String(Math.max(...a.concurrency)),
        '-c',
        String(512 * Math.max(...a.concurrency)),
        '-ub',
        '512',
        '-b',
        '2048',
      ],
      /listening on (http:\/\/[^\s]+)/,
    );
  return startChild(
    process.execPath,
    [
      '--import',
      'tsx',
      'bench/llama-server.ts',
      '--model',
      a.gguf,
      '--embedding',
      '--ctx-per-seq',
      '512',
      '--threads',
      String(a.threads),
    ],
    /listening (http:\/\/[^\s]+)/,
  );
}

async function main(): Promise<void> {
  // The fixtures' generator and sentence-transformers live in the project's Python (.venv, as `npm test` makes it).
  await useProjectPython();
  const a = parse();
  const { texts: inputs, tokens } = await texts(a.model, a.requests);
  log(`${inputs.length} texts of ${Math.min(...tokens)}-${Math.max(...tokens)} tokens; threads ${a.threads}`);
  const levels: Level[] = [];
  for (const side of a.sides) {
    log(`starting ${side} ...`);
    const s = await startSide(side, a);
    const url = s.match[1]!;
    try {
      await runLevel(side, url, inputs.slice(0, 8), 4); // warm-up
      for (const c of a.concurrency) {
        levels.push(await runLevel(side, url, inputs, c));
        log(JSON.stringify(levels.at(-1)));
      }
    } finally {
      await stopChild(s.child);
    }
  }
  if (a.json) {
    process.stdout.write(JSON.stringify({ args: { ...a, texts: inputs.length }, levels }, null, 2) + '\n');
    return;
  }
  const rows = [
    '| server | concurrency | sentences/s | p50 ms | p99 ms |',
    '| --- | ---: | ---: | ---: | ---: |',
  ];
  for (const l of levels)
    rows.push(
      `| ${l.side} | ${l.concurrency} | ${l.sentencesPerS.toFixed(1)} | ${l.p50Ms.toFixed(1)} | ${l.p99Ms.toFixed(1)} |`,
    );
  process.stdout.write(rows.join('\n') + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:embed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
