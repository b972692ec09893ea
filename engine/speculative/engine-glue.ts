/**
 * Speculation as the engine core builds it: the speculator with the engine's hooks — how
 * many draft tokens a sequence may take (its request's limits) and structured output's
 * cut of drafts at the first token the grammar refuses.
 */
import type { LiveRequest } from '../live-request.js';
import type { Sequence } from '../sequence.js';
import { checkGrammarDrafts } from './grammar-drafts.js';
import type { Proposer } from './proposer.js';
import { Speculator, type SpeculatorOptions } from './speculator.js';

export interface SpeculationConfig {
  readonly proposer: Proposer;
  readonly options: SpeculatorOptions;
}

export function speculatorFor(
  config: SpeculationConfig,
  requestOf: (seq: Sequence) => LiveRequest | undefined,
  maxSeqLen: number,
  maxBatchSize?: number,
): Speculator {
  return new Speculator(config.proposer, config.options, {
    room: (seq) => draftRoom(seq, requestOf(seq), maxSeqLen),
    ...(maxBatchSize !== undefined ? { slots: maxBatchSize } : {}),
    checkDrafts: checkGrammarDrafts,
  });
}

/** Draft tokens `seq` may take: its request's max tokens and maxSeqLen, less the token sampled after them. */
function draftRoom(seq: Sequence, req: LiveRequest | undefined, maxSeqLen: number): number {
  const c = req?.choices[seq.index];
  if (!req || !c || c.reason !== null) return 0;
  // Split prefill/decode: a prefill-side request ends at its first token. Beam search
  // chooses among one step's candidates. min_tokens: end tokens are suppressed at every
  // position of a step, so a verify step must not reach past the minimum. No drafts.
  if (req.pd?.kind === 'prefill' || req.beams) return 0;
  if (seq.numOutput < (seq.sampling.minTokens ?? 0)) return 0;
  // The request's own cap (numSpeculativeTokens; 0: it does not speculate, so it is not
  // even looked up).
  const cap = req.params.numSpeculativeTokens ?? Infinity;
  return Math.min(req.maxNew - c.tokenIds.length - 1, maxSeqLen - seq.tokens.length - 1, cap);
}
