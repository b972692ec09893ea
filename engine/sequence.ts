/**
 * Per-sequence state, as the scheduler and the block manager see it. One request with
 * best_of = k becomes k sequences: the first prefills the prompt (all but its last token),
 * then forks into k sequences that share the prompt's blocks and each compute the last
 * prompt token themselves, so each samples its first token with its own seed.
 *
 * A beam search's beams are sequences too: the first prefills the prompt, and after each step
 * the request's beams are chosen anew, a beam two continuations keep forked copy-on-write.
 *
 * States: WAITING → RUNNING ⇄ (preempted: back to WAITING, KV dropped, recomputed later) →
 * FINISHED. What a finished sequence reports lives in the output processor (output-processor.ts), not here.
 */
import type { KvSequence } from './block-manager.js';
import type { Draft } from './step-draft.js';

/** What a pooling sequence's step returns (`Sequence.pooled`). */
export interface PooledOutput {
  readonly output: 'pooled' | 'tokens' | 'scores';
  readonly typeIds?: Int32Array;
}

export type SequenceStatus = 'waiting' | 'running' | 'finished';

/** Sampling settings of one sequence, already validated (engine/sampling-params.ts). */
/** Rows placed at prompt positions (native StepPlan's embedRows): row k is at `positions[k]`. */
export interface PlacedRows {
  /** Increasing prompt positions. */
  readonly positions: Int32Array;
  /** [positions × hidden] floats. */
  readonly rows: Float32Array;
  readonly hidden: number;
  /**
   * Prompt position spans [start, end) as pairs, increasing (Gemma 3's images): a span's
   * tokens attend to each other both ways, so a prefill chunk never ends inside one
   * (scheduler.ts) and each step names the spans it computes into (step-plan.ts). Absent: all
   * causal.
   */
  readonly bidirectional?: Int32Array;
}

export interface SequenceSampling {
  readonly temperature: number;
  readonly topK: number;
  readonly topP: number;
  readonly repetitionPenalty: number;
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  readonly seed: bigint;
  /** -1 none, 0 chosen token only, n > 0 also the top n. */
  readonly topLogprobs: number;
  /** Until this many output tokens exist, `endTokens` may not be sampled (min_tokens; default 0). */
  readonly minTokens?: number;
  /** The tokens that would end the output: end-of-sequence and stop token ids. */
  readonly endTokens?: readonly number[];
  /** min-p (0 or absent: off) and typical-p (1 or absent: off), after top-k and top-p. */
  readonly minP?: number;
  readonly typicalP?: number;
  /** logit_bias: `values[i]` added to token `tokens[i]`'s logit (absent: none). */
  readonly logitBias?: { readonly tokens: Int32Array; readonly values: Float32Array };
  /** bad_words as token sequences (engine/bad-words/bad-words.ts); absent: none. */
  readonly badWords?: readonly (readonly number[])[];
}

/** What a sequence is made from; the optional fields default to a fresh base-model sequence. */
export interface SequenceOptions {
  readonly requestId: string;
  /** Choice index within the request (default 0). */
  readonly index?: number;
  readonly prompt: readonly number[];
  readonly sampling: SequenceSampling;
  readonly arrival: number;
  /** Sequences to fork into once the prompt (minus its last token) is computed (default 0: none). */
  readonly forkInto?: number;
  /** Prefix-cache isolation key (default '': the base model). */
  readonly cacheExtra?: string;
  /** Tokens already generated, after the prompt (tests resume a sequence with them). */
  readonly outputs?: readonly number[];
  /** Scheduling priority under the priority policy: lower first (default 0). */
  readonly priority?: number;
  /** Compute every prompt token, taking none from the prefix cache (default false). */
  readonly wholePrompt?: boolean;
}

const U64 = (1n << 64n) - 1n;

/**
 * What the step plan needs of a sequence's sampling constraint: the allowed-token mask of its
 * next sample (one bit per token; null until computed, or on error). Structured output's
 * matcher (engine/structured/grammar-backend.ts) is one.
 */
export interface SampleConstraint {
  readonly mask: Int32Array | null;
}

export class Sequence implements KvSequence {
  status: SequenceStatus = 'waiting';
  numComputed = 0;
  blockTable: number[] = [];
  blockKeys: string[] = [];
  cowPending = false;
  /** Prompt + generated tokens. */
  readonly tokens: number[];
  /** The prompt length (the tokens before it were given, the ones after sampled). */
  readonly promptLen: number;
  /** Tokens sampled so far; also the sampler's counter for this sequence's seed. */
  get numOutput(): number {
    return this.tokens.length - this.promptLen;
  }
  /** Sequences to fork into once the prompt (minus its last token) is computed; 0 = no fork. */
  forkInto: number;
  /** Prompt tokens that came from the prefix cache at first admission. */
  cachedPromptTokens = -1;
  /** Set by cancel(): the engine drops the sequence at the next step boundary. */
  aborted = false;
  /** A step that includes this sequence is running in native (its blocks must not be freed). */
  inFlight = false;
  /** Native LoRA slot of its adapter, -1 = base model (cacheExtra carries the adapter's identity). */
  adapterSlot = -1;
  /** Its adapter's load generation, 0 = base model; the scheduler picks the slot from it. */
  adapterGeneration = 0;
  /**
   * A constraint on what this sequence samples (structured output's matcher, set by that
   * extension): the step plan reads only its mask. It depends only on the sampled tokens,
   * which preemption and recompute keep, so it needs no restoring when the KV is recomputed.
   */
  grammar: SampleConstraint | null = null;
  /**
   * This step's draft tokens (a proposer's, engine/speculative/), set before the scheduler
   * runs and spent when the step is processed. Never part of `tokens` until verified.
   */
  draft: Draft | null = null;
  /**
   * Prompt logprobs asked for (engine/prompt-logprobs/ sets it): the step plan has the native
   * step score each of its prompt rows at the next prompt token, with `top` alternatives.
   */
  promptScores: { readonly top: number } | null = null;
  /**
   * What a pooling sequence's step computes instead of a sample (engine/pooling/ sets it, an
   * encoder's runner reads it): the pooled vector, every token's state or the classifier's
   * scores, with a pair's token types (0 for the first text, 1 for the second).
   */
  pooled: PooledOutput | null = null;
  /**
   * Embedding rows placed at prompt positions instead of their tokens' table rows (an image's
   * encoder output, engine/vision/ sets it): the step plan places the rows of the positions
   * each step computes, so a recompute after preemption places them again.
   */
  placed: PlacedRows | null = null;

  /** Request it belongs to. */
  readonly requestId: string;
  /** Its choice index within the request (a fork's is its parent's + i). */
  readonly index: number;
  readonly sampling: SequenceSampling;
  /** When its request arrived (ms, performance.now()). */
  readonly arrival: number;
  /** Prefix-cache isolation key (its adapter's identity); '' for the base model. */
  readonly cacheExtra: string;
  /** Its request's scheduling priority (lower first, under the priority policy). */
  readonly priority: number;
  readonly wholePrompt: boolean;

  constructor(o: SequenceOptions) {
    this.requestId = o.requestId;
    this.index = o.index ?? 0;
    this.tokens = [...o.prompt, ...(o.outputs ?? [])];
    this.promptLen = o.prompt.length;
    this.sampling = o.sampling;
    this.arrival = o.arrival;
    this.forkInto = o.forkInto ?? 0;
    this.cacheExtra = o.cacheExtra ?? '';
    this.priority = o.priority ?? 0;
    this.wholePrompt = o.wholePrompt ?? false;
  }

  /**
   * A beam of a beam search (engine/beam/): its next token is chosen across its request's
   * beams after each step, not sampled, so the step's sampled token is not appended.
   */
  beam = false;
  /** Running slots held for the beams a beam search's first sequence will fork into. */
  reservedSlots = 0;

  /** Slots beyond its own that this sequence's future forks will take (best_of, beams). */
  get extraSlots(): number {
    return Math.max(0, this.forkInto - 1) + this.reservedSlots;
  }

  /**
   * The `i`-th sequence a best_of fork makes of this one: the same prompt, adapter and cached
   * prefix, its own seed (this one's + i, wrapping at 64 bits) and choice index.
   */
  forkChild(i: number): Sequence {
    const child = new Sequence({
      requestId: this.requestId,
      index: this.index + i,
      prompt: this.tokens.slice(0, this.promptLen),
      sampling: { ...this.sampling, seed: (this.sampling.seed + BigInt(i)) & U64 },
      arrival: this.arrival,
      cacheExtra: this.cacheExtra,
      priority: this.priority,
    });
    child.cachedPromptTokens = this.cachedPromptTokens;
    child.adapterSlot = this.adapterSlot;
    child.adapterGeneration = this.adapterGeneration;
    return child;
  }

  /** A second beam with this one's tokens so far (its KV blocks are shared by the scheduler). */
  forkBeam(): Sequence {
    const child = new Sequence({
      requestId: this.requestId,
      index: this.index,
      prompt: this.tokens.slice(0, this.promptLen),
      outputs: this.tokens.slice(this.promptLen),
      sampling: this.sampling,
      arrival: this.arrival,
      cacheExtra: this.cacheExtra,
      priority: this.priority,
    });
    child.cachedPromptTokens = this.cachedPromptTokens;
    child.adapterSlot = this.adapterSlot;
    child.adapterGeneration = this.adapterGeneration;
    child.beam = true;
    return child;
  }

  /** Where this sequence's computation stops before it may sample: one token short of the prompt while a fork is pending. */
  get computeTarget(): number {
    return this.forkInto > 1 ? this.promptLen - 1 : this.tokens.length;
  }

  /** Tokens still to compute before the next sample (or fork). */
  get numPending(): number {
    return this.computeTarget - this.numComputed;
  }

  /** True while its prompt is not computed yet (prefill, possibly chunked). */
  get inPrefill(): boolean {
    return this.numComputed < this.tokens.length - 1;
  }
}
