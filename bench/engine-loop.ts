/**
 * The engine's own cost per token, without a model: the in-process engine (intake, step
 * loop, scheduler, step plans, output processor) over the paged-KV simulator
 * (engine/testing/paged-kv-sim.ts, which builds and reads real step plans but computes no
 * forward pass) and the one-character test tokenizer. What it measures is the host work a
 * native step has to hide, so a change to the engine's TypeScript shows up here without the
 * forward pass's noise: µs of wall time and of process CPU time per generated token, at
 * each concurrency, medians over rounds.
 *
 *   node --import tsx bench/engine-loop.ts [--streams 1,8,32] [--tokens 256] [--rounds 50] [--json]
 *     [--ngram-idle]
 *
 * `--ngram-idle`: the n-gram proposer runs every step but its drafts are never sent (a step
 * cost that makes none pay): the host cost speculation adds where proposals do not pay.
 *
 * It uses only the engine's public constructor and test runner, so the same file runs in an
 * older checkout for a before/after pair (copy it there and run both alternately).
 */
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { EngineCore } from '../engine/engine-core.js';
import { resolveEngineOptions } from '../engine/options.js';
import { CharTokenizer } from '../engine/testing/char-tokenizer.js';
import { PagedKvSim } from '../engine/testing/paged-kv-sim.js';
import { NgramProposer } from '../engine/speculative/ngram.js';
import type { EngineInfo, GenerateRequest } from '../engine/types.js';

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '1,8,32' },
    tokens: { type: 'string', default: '256' },
    rounds: { type: 'string', default: '50' },
    json: { type: 'boolean', default: false },
    'ngram-idle': { type: 'boolean', default: false },
  },
});
const streams = values.streams.split(',').map(Number);
const tokens = Number(values.tokens);
const rounds = Number(values.rounds);
const BLOCK = 16;
const PROMPT = 'The quick brown fox jumps over the lazy dog. ';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function once(n: number): Promise<{ wallUs: number; cpuUs: number }> {
  const kvBlocks = Math.ceil(((PROMPT.length + tokens + 2) * n) / BLOCK) + n + 8;
  const options = resolveEngineOptions({
    cacheBlockSize: BLOCK,
    maxSeqLen: PROMPT.length + tokens + 8,
    maxInputTokenLen: PROMPT.length + 4,
    kvBlocks,
    maxBatchSize: Math.max(n, 1),
    maxPrefillTokens: 4096,
  });
  const core = new EngineCore({
    runner: new PagedKvSim(kvBlocks, BLOCK, 100),
    tokenizer: new CharTokenizer(),
    options,
    info: { modelName: 'sim' } as EngineInfo,
    ...(values['ngram-idle']
      ? {
          speculation: {
            proposer: new NgramProposer({ maxN: 4, minN: 2 }),
            options: { numSpeculativeTokens: 5, cost: { perToken: 5, knee: 48 } },
          },
        }
      : {}),
  });
  const request = (i: number): GenerateRequest => ({
    // A different first character per stream: nothing is prefix-cached between streams.
    prompt: { kind: 'text', text: String.fromCharCode(65 + (i % 26)) + PROMPT },
    params: { temperature: 0, maxNewTokens: tokens, ignoreEos: true },
  });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let generated = 0;
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      for await (const ev of core.generate(request(i))) {
        if (ev.type === 'token') generated += ev.tokenIds.length;
        else if (ev.type === 'finish' && ev.reason === 'error') throw new Error(ev.error);
      }
    }),
  );
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await core.close();
  if (generated !== n * tokens) throw new Error(`generated ${generated} tokens, expected ${n * tokens}`);
  return { wallUs: (wall * 1000) / generated, cpuUs: (cpu.user + cpu.system) / generated };
}

const load = loadavg()[0];
const rows: { streams: number; wallUs: number; cpuUs: number; rounds: number }[] = [];
for (const n of streams) {
  for (let w = 0; w < 5; w++) await once(n); // warm-up: the JIT settles over the first runs
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const x = await once(n);
    wall.push(x.wallUs);
    cpu.push(x.cpuUs);
  }
  rows.push({ streams: n, wallUs: median(wall), cpuUs: median(cpu), rounds });
}
if (values.json) console.log(JSON.stringify({ tokens, load, loadEnd: loadavg()[0], rows }));
else {
  console.log(`engine loop over the simulator, ${tokens} tokens per stream, load average ${load.toFixed(2)}`);
  console.log('| streams | wall µs / token | CPU µs / token |\n|---:|---:|---:|');
  for (const r of rows) console.log(`| ${r.streams} | ${r.wallUs.toFixed(1)} | ${r.cpuUs.toFixed(1)} |`);
}
