/**
 * What the engine benchmark asks of each engine under test. Both halves (Prism's native
 * core and llama.cpp through node-llama-cpp) implement this, so the driver in
 * bench/engine.ts runs the same measures on the same token ids for both.
 *
 * Measures (all greedy, so the work per token is the same whatever is generated):
 *  - decodeSingle: prefill `prompt`, which samples the first new token, then time the
 *    `newTokens - 1` decode steps that produce tokens 2..newTokens (prefill excluded).
 *  - decodeAggregate: the same for many sequences at once: every prompt prefilled (not
 *    timed), then batched decode steps of one token per sequence, timed until every
 *    sequence has `newTokens` tokens.
 *  - prefill: one prompt evaluated from an empty cache up to its first sampled token
 *    (time to first token), so both engines also compute the output head for one row.
 */
export type TokenIds = readonly number[];

export interface DecodeTiming {
  /** Tokens produced by the timed decode steps (summed over sequences). */
  readonly decodedTokens: number;
  readonly decodeMs: number;
  /** Every generated token, per sequence (first one included), to check the run did real work. */
  readonly generated: readonly TokenIds[];
}

export interface PrefillTiming {
  readonly promptTokens: number;
  readonly prefillMs: number;
  readonly firstToken: number;
}

export interface BenchEngine {
  /** Short label for tables: 'prism' or 'llama.cpp'. */
  readonly name: string;
  /** Free-form details printed under the table (threads, ISA, KV layout, build). */
  describe(): Record<string, string | number | boolean>;
  decodeSingle(prompt: TokenIds, newTokens: number): Promise<DecodeTiming>;
  decodeAggregate(prompts: readonly TokenIds[], newTokens: number): Promise<DecodeTiming>;
  prefill(prompt: TokenIds): Promise<PrefillTiming>;
  /** Greedy continuation, stopping early at any of `stopTokens` (not included). */
  greedy(prompt: TokenIds, maxTokens: number, stopTokens: ReadonlySet<number>): Promise<number[]>;
  dispose(): Promise<void>;
}
