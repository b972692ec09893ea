/**
 * Test-only runner: a paged-KV *simulator* standing in for the native core in unit tests of
 * the scheduler and the engine core. It executes real StepPlans (engine/step-plan.ts): it
 * applies block copies, writes each token into the slot its block table names, and "attends"
 * by reading the whole context back out of the blocks. The next token is a hash of what it
 * read (plus seed and counter when sampling), so any block-table, sharing, copy or eviction
 * bug changes the output — and an unpreempted run must match a preempted one exactly.
 */
import type { StepPlan } from '../../native/native.js';
import type { LateMasks, Runner, StepOutput } from '../runner.js';
import type { ScheduledBatch } from '../scheduler.js';
import { buildStepPlan } from '../step-plan.js';

export class PagedKvSim implements Runner {
  readonly slots: Int32Array;
  steps = 0;
  plans: StepPlan[] = [];
  /** Delay of each step in ms (lets tests cancel while a step is in flight). */
  delayMs = 0;
  /** Make the next step throw (to test generation failures). */
  failNext: string | null = null;

  constructor(
    readonly kvBlocks: number,
    readonly blockSize: number,
    readonly vocabSize = 1000,
    private readonly keepPlans = false,
  ) {
    this.slots = new Int32Array(kvBlocks * blockSize).fill(-1);
  }

  async step(batch: ScheduledBatch, late?: LateMasks): Promise<StepOutput> {
    // The simulator does not mask; it only keeps the contract (sample after the masks).
    if (late) await late.masks;
    const plan = buildStepPlan(batch, this.blockSize);
    if (this.keepPlans) this.plans.push(plan);
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    else await Promise.resolve();
    if (this.failNext !== null) {
      const m = this.failNext;
      this.failNext = null;
      throw new Error(m);
    }
    return this.run(plan);
  }

  run(plan: StepPlan): StepOutput {
    this.steps++;
    const B = this.blockSize;
    const c = plan.blockCopies ?? new Int32Array(0);
    for (let i = 0; i < c.length; i += 2) this.slots.copyWithin(c[i + 1] * B, c[i] * B, (c[i] + 1) * B);
    const S = plan.sample.length;
    const tokens = new Int32Array(S).fill(-1);
    const logprobs = new Float32Array(S).fill(NaN);
    let numAccepted: Int32Array | undefined;
    for (let s = 0; s < S; s++) {
      const table = plan.blockTables.subarray(plan.blockTableOffsets[s], plan.blockTableOffsets[s + 1]);
      const slot = (pos: number) => {
        const b = Math.floor(pos / B);
        if (b >= table.length) throw new RangeError(`position ${pos} beyond block table of ${table.length}`);
        return table[b] * B + (pos % B);
      };
      let last = -1;
      for (let t = plan.seqTokenOffsets[s]; t < plan.seqTokenOffsets[s + 1]; t++) {
        this.slots[slot(plan.positions[t])] = plan.tokens[t];
        last = plan.positions[t];
      }
      if (!plan.sample[s]) continue;
      // "Attention": read the whole context back from the paged cache. With k draft tokens
      // (speculative decoding) the last k+1 positions each predict the next token; draft
      // token i is accepted when position i predicts it (the native sampler's rule).
      const k = plan.draftCounts?.[s] ?? 0;
      const end = plan.seqTokenOffsets[s + 1];
      let h = 2166136261;
      for (let pos = 0; pos <= last; pos++) {
        const v = this.slots[slot(pos)];
        if (v < 0) throw new Error(`position ${pos} read before it was written`);
        h = Math.imul(h ^ v, 16777619) >>> 0;
        const i = pos - (last - k);
        if (i < 0) continue;
        const next = simSample(
          h,
          this.vocabSize,
          plan.temperature[s] > 0,
          plan.seeds[s],
          plan.sampleCounters[s] + i,
        );
        if (i < k && next.token === plan.tokens[end - k + i]) {
          (numAccepted ??= new Int32Array(S))[s] = i + 1;
          continue;
        }
        tokens[s] = next.token;
        logprobs[s] = next.logprob;
        break;
      }
    }
    return {
      ...(plan.draftCounts ? { numAccepted: numAccepted ?? new Int32Array(S) } : {}),
      tokens,
      logprobs,
      topLogprobsStride: 0,
      topLogprobIds: new Int32Array(0),
      topLogprobValues: new Float32Array(0),
    };
  }
}

/**
 * The simulator's "model": the token after a context whose running FNV hash is `h` (seeded
 * draws mix in the seed and the output counter). Exported so a test proposer can predict it.
 */
export function simSample(
  h: number,
  vocabSize: number,
  sampled: boolean,
  seed: bigint,
  counter: number,
): { token: number; logprob: number } {
  if (sampled) {
    h = Math.imul(h ^ Number(seed & 0xffffffffn), 16777619) >>> 0;
    h = Math.imul(h ^ counter, 16777619) >>> 0;
  }
  return { token: h % vocabSize, logprob: -((h >>> 8) % 1000) / 100 };
}

/** The running hash `simSample` takes, over a whole context. */
export function simHash(context: readonly number[]): number {
  let h = 2166136261;
  for (const v of context) h = Math.imul(h ^ v, 16777619) >>> 0;
  return h;
}
