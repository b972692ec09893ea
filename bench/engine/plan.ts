/**
 * Builds greedy `StepPlan`s for the benchmark: each sequence contributes a run of tokens at
 * consecutive positions plus the KV blocks that cover them. Sampling is plain argmax
 * (temperature 0, no penalties, no mask, no logprobs), so a step's cost is the forward pass
 * and one argmax per sequence — the same work llama.cpp does with temperature 0.
 *
 * Kept free of the native addon (only its types) so that it can be unit-tested without a build.
 */
import type { StepPlan } from '../../native/native.js';
import { greedySampling } from '../../engine/step-plan.js';

export interface SeqChunk {
  /** Token ids this step feeds for the sequence (a prefill chunk or one decode token). */
  readonly tokens: readonly number[];
  /** Absolute position of `tokens[0]`; the rest follow consecutively. */
  readonly startPosition: number;
  /** The sequence's KV blocks in position order; must cover every position of the chunk. */
  readonly blocks: readonly number[];
  /** Sample a token after the chunk's last token (false for a non-final prefill chunk). */
  readonly sample: boolean;
}

export function greedyPlan(
  chunks: readonly SeqChunk[],
  blockSize: number,
  /**
   * Table entries per block (ModelInfo.kvLayout.pagesPerBlock; native/src/kv_layout.h): block
   * b of the pool is pages b*pagesPerBlock .. b*pagesPerBlock+pagesPerBlock-1, every layer
   * group kept for the whole context (the benchmark releases nothing behind a window).
   */
  pagesPerBlock = 1,
): StepPlan {
  const S = chunks.length;
  if (S === 0) throw new RangeError('greedyPlan: a step needs at least one sequence');
  let T = 0;
  let B = 0;
  const blocksUsed = chunks.map((c, s) => {
    if (c.tokens.length === 0) throw new RangeError(`greedyPlan: sequence ${s} has no tokens`);
    const lastPosition = c.startPosition + c.tokens.length - 1;
    const needed = Math.floor(lastPosition / blockSize) + 1;
    if (c.blocks.length < needed) {
      throw new RangeError(
        `greedyPlan: sequence ${s} reaches position ${lastPosition} but has ${c.blocks.length} blocks of ${blockSize}`,
      );
    }
    T += c.tokens.length;
    B += needed * pagesPerBlock;
    return needed;
  });

  const tokens = new Int32Array(T);
  const positions = new Int32Array(T);
  const seqTokenOffsets = new Int32Array(S + 1);
  const blockTableOffsets = new Int32Array(S + 1);
  const blockTables = new Int32Array(B);
  const sample = new Uint8Array(S);
  let t = 0;
  let b = 0;
  chunks.forEach((c, s) => {
    seqTokenOffsets[s] = t;
    blockTableOffsets[s] = b;
    for (let i = 0; i < c.tokens.length; i++, t++) {
      tokens[t] = c.tokens[i];
      positions[t] = c.startPosition + i;
    }
    for (let i = 0; i < blocksUsed[s]; i++)
      for (let k = 0; k < pagesPerBlock; k++, b++) blockTables[b] = c.blocks[i] * pagesPerBlock + k;
    sample[s] = c.sample ? 1 : 0;
  });
  seqTokenOffsets[S] = t;
  blockTableOffsets[S] = b;

  return {
    tokens,
    positions,
    seqTokenOffsets,
    blockTableOffsets,
    blockTables,
    sample,
    ...greedySampling(S),
    returnLogits: 'none',
  };
}

/** Hands out KV block ids from a fixed pool; `reset()` frees them all between measures. */
export class BlockPool {
  private next = 0;
  constructor(readonly capacity: number) {}

  take(count: number): number[] {
    if (this.next + count > this.capacity) {
      throw new RangeError(
        `BlockPool: asked for ${count} blocks with ${this.capacity - this.next} of ${this.capacity} left`,
      );
    }
    const ids = Array.from({ length: count }, (_, i) => this.next + i);
    this.next += count;
    return ids;
  }

  reset(): void {
    this.next = 0;
  }
}
