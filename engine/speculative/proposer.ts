/**
 * What a speculative proposer is: given sequences (their verified tokens so far) and how many
 * tokens each may propose, it proposes that many or fewer. The engine verifies every proposal
 * with the target model (the native sampler), so a proposer can only change speed, never the
 * output. Built: the n-gram lookup (ngram.ts), layer skipping (layer-skip.ts) and a draft
 * model (draft-model.ts).
 */
import type { Sequence } from '../sequence.js';

/** The proposers `prism serve --speculative` and plugin_params name. */
export type SpeculativeMethod = 'ngram' | 'draft' | 'layer-skip';

export interface DraftAsk {
  readonly seq: Sequence;
  /** Most tokens to propose (>= 1). */
  readonly k: number;
  /**
   * How many of the sequence's last tokens structured output's jump-forward appended (the
   * grammar forced them; the model chose none of them). Absent: 0.
   */
  readonly forced?: number;
  /** The sequence's output is under a grammar (structured output, tools). Absent: false. */
  readonly constrained?: boolean;
}

export interface Proposer {
  readonly method: SpeculativeMethod;
  /**
   * Proposals cost a model pass. A free one (a lookup) is asked even for sequences that will
   * not be given draft slots, so the adaptive k can score what it would have proposed.
   */
  readonly costly: boolean;
  /**
   * A costly proposer's price of one draft step (one token for every sequence asked, batched)
   * relative to a one-token step of the served model; the adaptive k weighs it. Default 0.
   */
  readonly draftStepCost?: number;
  /** One list per ask, in order, each at most `k` long (greedy proposals: one token each). */
  propose(asks: readonly DraftAsk[]): number[][] | Promise<number[][]>;
  /** Forgets a finished sequence's state (its index, its draft KV). */
  release(seq: Sequence): void;
  close(): void | Promise<void>;
}
