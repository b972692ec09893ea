/**
 * A/B of native builds on one model, decode step by decode step, in one process:
 *
 *   cp build/Release/prism_native.node /tmp/a.node     # build A
 *   ... change, rebuild ...
 *   cp build/Release/prism_native.node /tmp/b.node     # build B
 *   node --import tsx bench/kernels/ab-steps.ts models/sizes/3b-q4_0.gguf 150 /tmp/a.node /tmp/b.node
 *
 * Why not two runs of bench:engine: this machine's memory bandwidth swings with its
 * neighbours (a plain two-core read loop reads 45-48 GB/s in some minutes and 75-80 in
 * others, changing every few tens of seconds), and decode follows it, so two sequential
 * runs mostly compare minutes. Here every build loads the model into its own context and
 * the builds take single-token decode steps in turn (order alternating), so each swing hits
 * all of them alike; the paired median of step-time ratios against the first build is the
 * answer (noise about ±1% on the 3B shapes). Each addon is a separate dlopen, so several
 * builds coexist in one process; each holds its own copy of the weights.
 *
 * A build may carry a decode tuning after an `@` (ContextOptions.decodeTuning: `off`, `auto`,
 * `measure` or a setting), so one build compares settings, e.g. the constants against what
 * the load-time measurement picks on this host:
 *
 *   node --import tsx bench/kernels/ab-steps.ts models/sizes/1b-q4_0.gguf 200 \
 *     build/Release/prism_native.node@off build/Release/prism_native.node@measure
 *
 * Steps run at positions 32 .. 511 (a 32-token prompt, then four 128-token blocks), wrapping
 * back to 32; CONTEXT=N wraps them at N instead (CONTEXT=80: the size suite's 32-token prompt
 * and 48 new tokens, where attention is a smaller part of a step).
 *
 * Each build's context holds its own copy of the weights, and where a copy lands shows: the
 * same build twice read 0.967 and 0.980 of the first copy's step time (3B Q4_0, Xeon, 2026-12-03).
 * Give a comparison an A/A control (`A B A B`) before reading a ratio within ±3% of 1.
 */
import type { ContextHandle, NativeAddon } from '../../native/native.js';
import { greedyPlan } from '../engine/plan.js';
import { median, nowMs } from '../stats.js';
import { openBuild, prefill } from './load-build.js';

const BLOCK = 128;
const BLOCKS = [0, 1, 2, 3];
const PROMPT = 32;

const [modelPath, stepsArg, ...addonPaths] = process.argv.slice(2);
const steps = Number(stepsArg);
if (!modelPath || !Number.isInteger(steps) || steps < 1 || addonPaths.length < 2) {
  process.stderr.write('usage: ab-steps.ts MODEL.gguf STEPS A.node[@TUNING] B.node[@TUNING] [...]\n');
  process.exit(2);
}
const threads = Number(process.env.THREADS ?? 2);

const builds: { path: string; addon: NativeAddon; ctx: ContextHandle; next: number; times: number[] }[] = [];
for (const path of addonPaths) {
  const build = await openBuild(path, modelPath, { kvBlocks: BLOCKS.length, blockSize: BLOCK, threads });
  const tuning = build.addon.contextInfo(build.ctx).decodeTuning;
  if (tuning)
    process.stdout.write(
      `${path}: decode tuning ${tuning.setting} (${tuning.source}` +
        `${tuning.measuredMs > 0 ? `, measured in ${tuning.measuredMs.toFixed(0)} ms` : ''})\n` +
        (tuning.detail && tuning.source !== 'cached' ? tuning.detail.replace(/^/gm, '  ') + '\n' : ''),
    );
  const prompt = Array.from({ length: PROMPT }, (_, i) => 100 + i);
  builds.push({ path, ...build, next: await prefill(build, prompt, BLOCKS, BLOCK), times: [] });
}

const maxPosition = Math.min(BLOCKS.length * BLOCK, Number(process.env.CONTEXT ?? Infinity)) - 1;
if (!(maxPosition > PROMPT)) {
  process.stderr.write(`CONTEXT must be above the ${PROMPT}-token prompt\n`);
  process.exit(2);
}
for (let i = 0; i < steps; i++) {
  // Positions wrap back to just after the prompt so any step count fits the four blocks.
  const position = PROMPT + (i % (maxPosition - PROMPT));
  for (const b of i % 2 ? [...builds].reverse() : builds) {
    const start = nowMs();
    const result = await b.addon.step(
      b.ctx,
      greedyPlan([{ tokens: [b.next], startPosition: position, blocks: BLOCKS, sample: true }], BLOCK),
    );
    b.times.push(nowMs() - start);
    b.next = result.tokens[0];
  }
}

const base = builds[0].times;
for (const b of builds) {
  const mean = b.times.reduce((x, y) => x + y, 0) / b.times.length;
  const paired = median(b.times.map((t, i) => t / base[i]));
  process.stdout.write(
    `${b.path}: mean step ${mean.toFixed(2)} ms (${(1000 / mean).toFixed(1)} tok/s), ` +
      `median ${median(b.times).toFixed(2)} ms, paired median ratio to the first ${paired.toFixed(3)}\n`,
  );
}
