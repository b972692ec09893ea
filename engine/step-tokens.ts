/**
 * The tokens a step produced for each sequence, read out of the native result: the draft
 * tokens of the plan the sampler accepted (engine/speculative/ proposes them), then the token
 * it sampled after them. Without drafts that is the one sampled token.
 */
import type { StepOutput } from './runner.js';
import type { ScheduledBatch } from './scheduler.js';

export interface StepToken {
  readonly token: number;
  readonly logprob: number;
  /** Its top alternatives: `topStride` entries of these arrays from `topAt` (-1 ids end them). */
  readonly topStride: number;
  readonly topIds: Int32Array;
  readonly topValues: Float32Array;
  readonly topAt: number;
}

export class StepTokens {
  /** Per item: its first slot in the result's accepted* arrays. */
  private readonly slots: number[] = [];

  constructor(
    private readonly batch: ScheduledBatch,
    private readonly out: StepOutput,
  ) {
    let slot = 0;
    for (const item of batch.items) {
      this.slots.push(slot);
      slot += item.draft?.length ?? 0;
    }
  }

  /** Draft tokens of item `k` the sampler accepted. */
  accepted(k: number): number {
    const d = this.batch.items[k].draft?.length ?? 0;
    return d > 0 ? Math.min(d, this.out.numAccepted?.[k] ?? 0) : 0;
  }

  /** Item `k`'s tokens in order: accepted draft tokens, then the sampled one. */
  of(k: number): StepToken[] {
    const out = this.out;
    const stride = out.topLogprobsStride;
    const produced: StepToken[] = [];
    const draft = this.batch.items[k].draft ?? [];
    const a = this.accepted(k);
    for (let i = 0; i < a; i++) {
      const slot = this.slots[k] + i;
      produced.push({
        token: draft[i],
        logprob: out.acceptedLogprobs?.[slot] ?? NaN,
        topIds: out.acceptedTopLogprobIds ?? new Int32Array(0),
        topValues: out.acceptedTopLogprobValues ?? new Float32Array(0),
        topStride: stride,
        topAt: slot * stride,
      });
    }
    produced.push({
      token: out.tokens[k],
      logprob: out.logprobs[k],
      topIds: out.topLogprobIds,
      topValues: out.topLogprobValues,
      topStride: stride,
      topAt: k * stride,
    });
    return produced;
  }
}
