/**
 * What a speculative verify step costs: native steps of one sequence with n tokens (1 real
 * token + n-1 draft tokens, `draftCounts`), against a 1-token step, for one or more native
 * builds side by side in one process:
 *
 *   node --import tsx bench/kernels/verify-steps.ts models/SmolLM2-135M-Instruct.Q4_1.gguf 9 \
 *     build/Release/prism_native.node [/tmp/b.node ...]
 *
 * Every round takes each step size once on every build, the order of sizes and builds
 * alternating from round to round, so a swing of the shared machine hits all of them alike.
 * The context is a 80-token prompt; every step starts at the position after it (the draft
 * rows' KV is overwritten by the next step). Output: per build and size the median step in
 * ms and that median over the 1-token step's; with several builds, the paired median ratio
 * of each build's step to the first build's. SIZES=1,2,4 (environment) picks the sizes,
 * THREADS the thread count (default 2). A build may carry a decode tuning after an `@`, as in
 * ab-steps.ts (the token-wide tiles take its prefetch distance).
 */
import type { ContextHandle, NativeAddon } from '../../native/native.js';
import { greedyPlan } from '../engine/plan.js';
import { median, nowMs } from '../stats.js';
import { openBuild, prefill } from './load-build.js';

const BLOCK = 128;
const BLOCKS = [0, 1];
const PROMPT = 80;

const [modelPath, roundsArg, ...addonPaths] = process.argv.slice(2);
const rounds = Number(roundsArg);
if (!modelPath || !Number.isInteger(rounds) || rounds < 1 || addonPaths.length < 1) {
  process.stderr.write('usage: verify-steps.ts MODEL.gguf ROUNDS A.node[@TUNING] [B.node[@TUNING] ...]\n');
  process.exit(2);
}
const threads = Number(process.env.THREADS ?? 2);
const sizes = (process.env.SIZES ?? '1,2,4,6,8,10,11,12,14,15,16').split(',').map(Number);
if (sizes.some((n) => !Number.isInteger(n) || n < 1 || n > 32)) {
  process.stderr.write('SIZES: whole numbers 1..32, comma-separated\n');
  process.exit(2);
}

const prompt = Array.from({ length: PROMPT }, (_, i) => 100 + ((i * 37) % 900));
const builds: {
  path: string;
  addon: NativeAddon;
  ctx: ContextHandle;
  next: number;
  times: Map<number, number[]>;
}[] = [];
for (const path of addonPaths) {
  const build = await openBuild(path, modelPath, { kvBlocks: BLOCKS.length, blockSize: BLOCK, threads });
  const next = await prefill(build, prompt, BLOCKS, BLOCK);
  builds.push({ path, ...build, next, times: new Map(sizes.map((n) => [n, []])) });
}

for (let round = 0; round < rounds; round++) {
  const order = round % 2 ? [...sizes].reverse() : sizes;
  for (const n of order) {
    for (const b of round % 2 ? [...builds].reverse() : builds) {
      // The draft: the prompt's tokens after the real one (what an n-gram proposer would send).
      const tokens = [b.next, ...prompt.slice(1, n)];
      const plan = {
        ...greedyPlan([{ tokens, startPosition: PROMPT, blocks: BLOCKS, sample: true }], BLOCK),
        draftCounts: Int32Array.of(n - 1),
      };
      const start = nowMs();
      await b.addon.step(b.ctx, plan);
      b.times.get(n)!.push(nowMs() - start);
    }
  }
}

for (const b of builds) {
  const one = median(b.times.get(1) ?? [NaN]);
  process.stdout.write(`${b.path} (${threads} threads, ${rounds} rounds)\n`);
  for (const n of sizes) {
    const t = b.times.get(n)!;
    const base = builds[0].times.get(n)!;
    const paired = builds.length > 1 ? `  vs first ${median(t.map((x, i) => x / base[i])).toFixed(3)}` : '';
    process.stdout.write(
      `  ${String(n).padStart(2)} tokens: ${median(t).toFixed(2)} ms  ${(median(t) / one).toFixed(2)}×${paired}\n`,
    );
  }
}
