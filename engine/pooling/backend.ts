/**
 * What the pooling engine needs of a model: its card (what it serves), the facts gateways
 * report, the budget of one step and how its inputs run. Two kinds: BERT-family encoders
 * (encoder-backend.ts), whose passes the pooling engine's own queue packs (pass-queue.ts), and
 * decoders whose last hidden state or yes/no logits pool (decoder-pooling.ts), whose inputs are
 * requests of the generation engine's intake and scheduler.
 */
import type { PassInput } from './pass-queue.js';
import type { PoolingCard } from './types.js';

/** Runs one request's inputs, packed with other requests' as the runner's scheduler does. */
export interface InputRunner {
  /** One output per input, in order. */
  submit(inputs: readonly PassInput[], signal?: AbortSignal): Promise<Float32Array[]>;
  /** Inputs submitted and not finished yet. */
  readonly waiting: number;
  /** A pass is running. */
  readonly busy: boolean;
  /** Passes run so far. */
  readonly passes: number;
}

export interface PoolingBackend {
  readonly card: PoolingCard;
  readonly vocabSize: number;
  readonly architecture: string;
  /** The most common storage type of the weights ('F32', 'Q8_0', ...). */
  readonly dtype: string;
  readonly contextLength: number;
  /** Rows of the token-type table (a cross-encoder's pairs use types 0 and 1 when it has two). */
  readonly tokenTypes: number;
  /** The most tokens and inputs one step takes. */
  readonly passBudget: { readonly maxTokens: number; readonly maxInputs: number };
  /** Where the engine's requests' inputs run; `maxQueued`: inputs waiting at most. */
  inputRunner(maxQueued: number): InputRunner;
  dispose(): Promise<void> | void;
}
