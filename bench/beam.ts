/**
 * `npm run bench:beam`: what a beam search costs, on the default model in one process. A
 * W-beam request against W independent samples of the same prompt and length (n = W,
 * temperature 0.8), both with ignore_eos so every sequence runs to `--tokens`; the rounds
 * alternate the two so the machine's drift falls on both. Per side: wall time, output tokens
 * per second (tokens the sequences generated, W x tokens on both sides), the peak of KV blocks
 * held while it ran (the prompt's blocks are shared by every beam or sample, and a beam's
 * blocks fork copy-on-write where it diverges) and the blocks a request of that shape would
 * hold were nothing shared. The host's load average is printed beside the figures.
 *
 * Usage: npm run bench:beam [-- --width 4 --tokens 64 --prompt-tokens 256 --rounds 5]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { loadEngine } from '../engine/load-engine.js';
import type { SamplingParams } from '../engine/types.js';
import { fmt, median, nowMs } from './stats.js';

const { values: args } = parseArgs({
  options: {
    width: { type: 'string', default: '4' },
    tokens: { type: 'string', default: '64' },
    'prompt-tokens': { type: 'string', default: '256' },
    rounds: { type: 'string', default: '5' },
    threads: { type: 'string', default: '2' },
  },
});
const width = Number(args.width);
const tokens = Number(args.tokens);
const promptTokens = Number(args['prompt-tokens']);
const rounds = Number(args.rounds);

interface Run {
  readonly ms: number;
  readonly generated: number;
  readonly peakBlocks: number;
}

/** Runs one request to its end while sampling the blocks in use between steps. */
async function run(engine: EngineCore, ids: readonly number[], params: SamplingParams): Promise<Run> {
  let peak = 0;
  let polling = true;
  const poll = (async () => {
    while (polling) {
      const s = await engine.status();
      peak = Math.max(peak, s.totalBlocks - s.freeBlocks);
      await new Promise((r) => setImmediate(r));
    }
  })();
  const t0 = nowMs();
  let generated = 0;
  for await (const ev of engine.generate({ prompt: { kind: 'tokens', ids }, params }))
    if (ev.type === 'finish') generated += ev.tokenIds.length;
  const ms = nowMs() - t0;
  polling = false;
  await poll;
  return { ms, generated, peakBlocks: peak };
}

async function main(): Promise<void> {
  const engine = await loadEngine(ensureDefaultModel(), {
    threads: Number(args.threads),
    maxBatchSize: 16,
    maxSeqLen: promptTokens + tokens + 64,
    kvCacheBytes: 256 << 20,
  });
  try {
    const text = await engine.tokenize(
      'The lighthouse keeper climbed the spiral stairs each evening, counting the steps. '.repeat(64),
      false,
    );
    const { blockSize } = await engine.status();
    const sides: Record<'beams' | 'samples', SamplingParams> = {
      beams: { useBeamSearch: true, bestOf: width, n: width, maxNewTokens: tokens, ignoreEos: true },
      samples: { n: width, temperature: 0.8, seed: 7, maxNewTokens: tokens, ignoreEos: true },
    };
    const results: Record<'beams' | 'samples', Run[]> = { beams: [], samples: [] };
    for (let r = 0; r < rounds + 1; r++) {
      // A prompt of its own per round, so the prefix cache serves neither side from a past round.
      const ids = [r + 1, ...text.slice(0, promptTokens - 1)];
      for (const side of r % 2 === 0 ? (['beams', 'samples'] as const) : (['samples', 'beams'] as const)) {
        const res = await run(engine, ids, sides[side]);
        if (r > 0) results[side].push(res); // round 0 warms up
      }
    }
    const unshared = width * Math.ceil((promptTokens + tokens) / blockSize);
    const load = loadavg().map((v) => v.toFixed(2));
    console.log(
      `# bench:beam  width ${width}, prompt ${promptTokens} tokens, ${tokens} new tokens per sequence, ` +
        `${rounds} rounds (medians), block ${blockSize} tokens, load average ${load.join(' ')}`,
    );
    console.log('| side | wall ms | output tok/s | peak KV blocks | blocks if unshared |');
    console.log('|---|---:|---:|---:|---:|');
    for (const side of ['beams', 'samples'] as const) {
      const rs = results[side];
      const ms = median(rs.map((x) => x.ms));
      const tps = median(rs.map((x) => (x.generated / x.ms) * 1000));
      // A beam search returns its W finished beams; every beam generated `tokens` tokens.
      console.log(
        `| ${side === 'beams' ? `${width}-beam search` : `${width} samples`} | ${fmt(ms, 0)} | ${fmt(tps)} | ` +
          `${median(rs.map((x) => x.peakBlocks))} | ${unshared} |`,
      );
    }
    const ratio = median(results.beams.map((x) => x.ms)) / median(results.samples.map((x) => x.ms));
    console.log(`\nbeam search / samples wall time: ${ratio.toFixed(2)}x`);
  } finally {
    await engine.close();
  }
}

await main();
