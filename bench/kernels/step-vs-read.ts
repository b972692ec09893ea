/**
 * How close single-stream decode comes to the machine's sustained read bandwidth, minute by
 * minute:
 *
 *   node --import tsx bench/kernels/step-vs-read.ts models/sizes/3b-q4_0.gguf [ROUNDS]
 *
 * Each round takes five decode steps, then the sustained read rate (native
 * sustainedReadRate: the median of five passes over 1 GiB with the decode's thread count,
 * where measureMemoryBandwidth keeps the fastest of 50), and reports the step's weight
 * bytes per second against that read rate. PRISM_DECODE_TUNING chooses the context's
 * decode tuning (default auto).
 * This machine's bandwidth swings with its neighbours every few tens of seconds, so only a
 * step and a read taken in the same few seconds say how much of the bandwidth decode uses;
 * the rounds show both kinds of minute.
 */
import { loadavg } from 'node:os';
import { median, nowMs } from '../stats.js';
import { greedyPlan } from '../engine/plan.js';
import * as native from '../../native/native.js';

const BLOCK = 128;
const BLOCKS = [0, 1, 2, 3];
const STEPS = 5;
const READS = 5;

const [modelPath, roundsArg = '30'] = process.argv.slice(2);
const rounds = Number(roundsArg);
if (!modelPath || !Number.isInteger(rounds) || rounds < 1) {
  process.stderr.write('usage: step-vs-read.ts MODEL.gguf [ROUNDS]\n');
  process.exit(2);
}
const threads = Number(process.env.THREADS ?? 2);

const model = await native.loadModel(modelPath);
const weightBytes = native.modelInfo(model).weightBytes;
const ctx = native.createContext(model, {
  kvBlocks: BLOCKS.length,
  blockSize: BLOCK,
  maxBatchTokens: 64,
  maxSeqs: 1,
  threads,
});
const tuning = native.contextInfo(ctx).decodeTuning;
if (tuning) process.stdout.write(`decode tuning ${tuning.setting} (${tuning.source})\n`);
const prompt = [1, 2, 3];
let next = (
  await native.step(
    ctx,
    greedyPlan([{ tokens: prompt, startPosition: 0, blocks: BLOCKS, sample: true }], BLOCK),
  )
).tokens[0];

const stepGBs: number[] = [];
const readGBs: number[] = [];
for (let r = 0; r < rounds; r++) {
  const times: number[] = [];
  for (let i = 0; i < STEPS; i++) {
    const start = nowMs();
    const plan = greedyPlan(
      [{ tokens: [next], startPosition: prompt.length + i, blocks: BLOCKS, sample: true }],
      BLOCK,
    );
    next = (await native.step(ctx, plan)).tokens[0];
    times.push(nowMs() - start);
  }
  stepGBs.push(weightBytes / median(times) / 1e6);
  readGBs.push(native.sustainedReadRate(2 ** 30, READS, threads));
}

const ratios = stepGBs.map((s, i) => s / readGBs[i]);
const list = (xs: number[], digits: number) => xs.map((x) => x.toFixed(digits)).join(' ');
native.releaseReadBuffer();
process.stdout.write(
  `${native.hostInfo().description}; load average ${loadavg()
    .map((v) => v.toFixed(1))
    .join(' ')}\n` +
    `${modelPath}: ${(weightBytes / 1e6).toFixed(0)} MB of weights per token, ${threads} threads, ${rounds} rounds\n` +
    `decode step, weight GB/s:  ${list(stepGBs, 1)}\n` +
    `sustained read, GB/s:      ${list(readGBs, 1)}\n` +
    `step ÷ read:               ${list(ratios, 2)}\n` +
    `median step ÷ read ${median(ratios).toFixed(3)}; ` +
    `in rounds below the median read (${median(readGBs).toFixed(1)} GB/s): ` +
    `${median(ratios.filter((_, i) => readGBs[i] < median(readGBs))).toFixed(3)}, ` +
    `at or above it: ${median(ratios.filter((_, i) => readGBs[i] >= median(readGBs))).toFixed(3)}\n`,
);
