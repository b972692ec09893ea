/**
 * One step's proposal for one sequence (`Sequence.draft`), from the speculator's `propose`
 * until the step that verifies it is processed. The scheduler may place fewer of its tokens
 * than it holds (the step's budget); a `ScheduledSeq` carries the tokens it placed.
 */
export interface Draft {
  /** Proposed tokens, after the sequence's last token. */
  tokens: number[];
  /**
   * Structured output: the allowed-token masks of verified positions 1..tokens.length (the
   * state after each draft token; position 0's is the matcher's own mask). Null when the
   * sequence is unconstrained.
   */
  masks: Int32Array[] | null;
  /**
   * Structured output with jump-forward: the string the grammar forces at positions
   * 0..tokens.length ('' where it allows a choice), so the token sampled after the accepted
   * draft tokens jumps forward from the right state. Null when not asked.
   */
  jumps: string[] | null;
}
