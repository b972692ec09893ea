/**
 * What the engine needs from a grammar library, as one interface: compile a constraint, and
 * for each sequence a matcher that takes tokens, gives the mask of the tokens allowed next,
 * rolls back, and says what the grammar forces (jump-forward). The engine
 * (structured-extension.ts, step-plan.ts) depends on this, not on a library; xgrammar on its
 * own thread (grammar-service.ts over grammar-worker.ts) is the one implementation.
 *
 * The shape follows SGLang's `BaseGrammarBackend` / `BaseGrammarObject` (compile; per request
 * `accept_token`, `fill_vocab_mask`, `rollback`, `try_jump_forward`), with one difference that
 * is Prism's design: the library runs on its own thread, so a matcher's answers are
 * asynchronous. `accept` queues tokens and returns at once; the next mask (and whether the
 * document ended, and the forced string) arrives later, and `pending` resolves when it is
 * there — the engine overlaps that wait with the forward pass (README.md, step 3).
 */
import type { GrammarConstraint } from './constraint.js';
import type { SampleConstraint, Sequence } from '../sequence.js';

/** A compiled grammar, named by its cache key (the constraint's canonical text). */
export interface CompiledGrammarRef {
  readonly key: string;
  /** Compile time in ms (0 when it came from the cache). */
  readonly ms: number;
  readonly cached: boolean;
  /**
   * The grammar accepts more than the constraint (a JSON Schema with keywords no grammar
   * enforces, schema/prepare.ts): each finished document must pass `checkDocument`.
   */
  readonly checked: boolean;
}

/** One sequence's position in a compiled grammar. */
export interface GrammarMatcher extends SampleConstraint {
  /** The compiled grammar it walks. */
  readonly key: string;
  /** Jump-forward asked for: the matcher reports the string the grammar forces (`jump`). */
  readonly jumpForward: boolean;
  /** Allowed tokens for the next sample, one bit per token (null until computed, or on error). */
  readonly mask: Int32Array | null;
  /** The grammar took a stop token: the document is complete. */
  readonly terminated: boolean;
  /** Why the matcher failed (a refused token, a dead end, the library failing); null if fine. */
  readonly error: string | null;
  /** What the grammar forces from the state `mask` is for ('' when it allows a choice). */
  readonly jump: string;
  /** Resolves once `mask`/`terminated`/`error`/`jump` describe the state after every call so far. */
  readonly pending: Promise<void>;
  /** Advances by these tokens, in order (a sampled one, then any appended without sampling). */
  accept(tokens: readonly number[]): void;
  /**
   * Undoes the last `n` accepted tokens (speculative decoding, after the verifier refuses a
   * draft suffix); the mask becomes that of the earlier state again.
   */
  rollback(n: number): void;
  /** Copies the mask into row `row` of `out` (rows of `mask.length` words); false without one. */
  fillMask(out: Int32Array, row: number): boolean;
  /**
   * Speculative decoding: how many of `tokens` (draft tokens after the current state) the
   * grammar takes in a row, with the state after each one taken; the matcher itself does not
   * move. Queued behind the matcher's earlier calls.
   */
  checkDraft(tokens: readonly number[]): Promise<DraftCheck>;
}

/** What a matcher says of a draft (`GrammarMatcher.checkDraft`). */
export interface DraftCheck {
  /** Draft tokens taken in a row (never one that completes the document: the model samples that). */
  readonly taken: number;
  /** The allowed-token mask after each token taken (`taken` of them). */
  readonly masks: readonly Int32Array[];
  /** The forced string (jump-forward) before the first token and after each one taken. */
  readonly jumps: readonly string[];
}

export interface GrammarBackend {
  /** Compiles `c` (or finds it compiled); `field` names the request field in its errors. */
  compile(c: GrammarConstraint, field?: string): Promise<CompiledGrammarRef>;
  /** A matcher at the grammar's start; its first mask arrives in `pending`. */
  createMatcher(key: string, jumpForward: boolean): GrammarMatcher;
  /**
   * Null when `text`, a finished document of the compiled grammar `key`, satisfies its
   * constraint (always, where the grammar is exact); else why it does not.
   */
  checkDocument(key: string, text: string): Promise<string | null>;
  /** Null when the JSON `text` satisfies the JSON Schema `schema` (text); else why not. */
  checkJson(schema: string, text: string): Promise<string | null>;
  /** Lets go of a matcher. */
  free(m: GrammarMatcher): void;
  /** Set when the backend can serve no more calls (its thread died); a fresh one is made. */
  readonly dead: Error | null;
  close(): Promise<void>;
}

/**
 * The matcher of `seq`, or null when it is unconstrained. Only the structured-output
 * extension sets `Sequence.grammar`, and always to one of its matchers (the core sees it as a
 * SampleConstraint: the mask its step plan reads).
 */
export function matcherOf(seq: Sequence): GrammarMatcher | null {
  return seq.grammar as GrammarMatcher | null;
}
