/**
 * Draft tokens a multi-token (verify) step carries for one sequence (`Sequence.draft`): set
 * by a proposer (speculative decoding, engine/speculative/) before the scheduler runs, and
 * spent when the step that verifies them is processed. The scheduler may place fewer of its tokens
 * than it holds (the step's budget); a `ScheduledSeq` carries the tokens it placed.
 */
export interface Draft {
  /** Proposed tokens, after the sequence's last token. */
  tokens: number[];
  /**
   * A constrained sequence: the allowed-token masks of verified positions 1..tokens.length (the
   * state after each draft token; position 0's is the matcher's own mask). Null when the
   * sequence is unconstrained.
   */
  masks: Int32Array[] | null;
  /**
   * A constrained sequence with jump-forward: the string the grammar forces at positions
   * 0..tokens.length ('' where it allows a choice), so the token sampled after the accepted
   * draft tokens jumps forward from the right state. Null when not asked.
   */
  jumps: string[] | null;
}
