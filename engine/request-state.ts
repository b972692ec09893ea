/**
 * Per-sequence state, as the scheduler and the block manager see it. One request with
 * best_of = k becomes k sequences: the first prefills the prompt (all but its last token),
 * then forks into k sequences that share the prompt's blocks and each compute the last
 * prompt token themselves, so each samples its first token with its own seed.
 *
 * States: WAITING → RUNNING ⇄ (preempted: back to WAITING, KV dropped, recomputed later) →
 * FINISHED. What a finished sequence reports lives in the engine core, not here.
 */
import type { KvSequence } from './block-manager.js';
import type { GrammarMatcher } from './structured/grammar-backend.js';

export type SequenceStatus = 'waiting' | 'running' | 'finished';

/** Sampling settings of one sequence, already validated (engine/sampling-params.ts). */
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
   * Structured output: this sequence's matcher. It depends only on the sampled tokens, which
   * preemption and recompute keep, so it needs no restoring when the KV is recomputed.
   */
  grammar: GrammarMatcher | null = null;

  constructor(
    /** Request it belongs to, and its choice index. */
    readonly requestId: string,
    public index: number,
    prompt: readonly number[],
    readonly sampling: SequenceSampling,
    readonly arrival: number,
    forkInto = 0,
    readonly cacheExtra = '',
    outputs: readonly number[] = [],
  ) {
    this.tokens = [...prompt, ...outputs];
    this.promptLen = prompt.length;
    this.forkInto = forkInto;
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
