/**
 * Test-only: the sampling settings of a plain greedy sequence (argmax, no penalties, seed 0,
 * the chosen token's logprob reported), for tests that build `Sequence`s by hand.
 */
import type { SequenceSampling } from '../sequence.js';

export const GREEDY_SAMPLING: SequenceSampling = {
  temperature: 0,
  topK: 0,
  topP: 1,
  repetitionPenalty: 1,
  presencePenalty: 0,
  frequencyPenalty: 0,
  seed: 0n,
  topLogprobs: 0,
};
