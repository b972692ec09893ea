/**
 * A step's grammar masks (structured output's `beforeStep`): when every constrained sequence
 * of the batch has its mask the step takes them at once; else the missing ones are awaited
 * before the step, or, overlapped, handed to the runner late (the native step runs its forward
 * pass and samples once they are in).
 */
import { matcherOf } from './grammar-backend.js';
import { availableParallelism } from 'node:os';
import type { LateMasks } from '../runner.js';
import type { ScheduledBatch } from '../scheduler.js';
import type { StructuredTuning } from './tuning.js';

export class StepMasks {
  /** Steps that started before their masks were ready. */
  lateSteps = 0;
  private readonly overlapByDefault: boolean;

  constructor(
    private readonly tuning: StructuredTuning,
    /** Threads of the native context (undefined: one per core). */
    nativeThreads: number | undefined,
  ) {
    const cores = availableParallelism();
    this.overlapByDefault = cores > (nativeThreads ?? cores);
  }

  /**
   * Overlap the masks with the forward pass. Off: the engine awaits every mask before it
   * starts the step. On by default only where a core is left beside the native step's
   * threads: its fork-join pool spins, so a grammar thread (and the event loop handing over
   * the masks) running on one of its cores slows the whole forward pass more than the wait
   * it saves (measured on a 2-core machine, docs/benchmarks.md).
   */
  private get overlapMasks(): boolean {
    return this.tuning.overlapMasks ?? this.overlapByDefault;
  }

  /**
   * Before a step: undefined when every mask the step needs is there (an unconstrained batch
   * pays nothing, not even a promise); else the promise of `{ masks }`, the promise of the
   * missing ones, which the runner hands to a step that starts its forward pass at once and
   * samples once the masks are in. (An object, not the promise itself: an async function
   * would wait for a returned promise.) With `overlapMasks` off, it awaits them itself and
   * resolves to undefined.
   */
  beforeStep(batch: ScheduledBatch): Promise<LateMasks | undefined> | undefined {
    let pending: Promise<void>[] | null = null;
    let constrained = false;
    for (const { sample, seq } of batch.items) {
      const g = matcherOf(seq);
      if (!sample || !g) continue;
      constrained = true;
      if (g.mask === null && g.error === null && !g.terminated) (pending ??= []).push(g.pending);
    }
    if (!pending) {
      if (constrained) this.stall(0);
      return undefined;
    }
    return this.late(Promise.all(pending).then(() => {}));
  }

  private async late(masks: Promise<void>): Promise<LateMasks | undefined> {
    if (this.overlapMasks) {
      this.lateSteps++;
      return { masks, waited: (ms) => this.stall(ms) };
    }
    const t0 = performance.now();
    await masks;
    this.stall(performance.now() - t0);
    return undefined;
  }

  /** The critical path's wait for masks (awaited before the step, or waited by sampling after the forward pass). */
  private stall(ms: number): void {
    this.tuning.onMaskWait?.(ms);
  }
}
