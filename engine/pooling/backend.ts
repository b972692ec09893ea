/**
 * What the pooling engine needs of a model: its card (what it serves), the facts gateways
 * report, the budget of one step and the generation engine its inputs run on. Two kinds:
 * BERT-family encoders (encoder-backend.ts: an engine over the encoder's runner, no KV) and
 * decoders whose last hidden state or yes/no logits pool (decoder-pooling.ts: the model's own
 * generation engine). Either way each input is a request of that engine's intake and scheduler
 * (core-inputs.ts).
 */
import type { PooledOutput } from '../sequence.js';
import type { EngineStatus } from '../types.js';
import type { PoolingCard } from './types.js';

/** What one input computes: the pooled vector, every token's state, or the classifier's (or yes/no) logits. */
export type PassOutput = PooledOutput['output'];

/** One tokenized input, as the engine runs it. */
export interface PassInput extends PooledOutput {
  readonly ids: Int32Array;
}

/** How a request's inputs are scheduled. */
export interface SubmitOptions {
  readonly signal?: AbortSignal | undefined;
  /** Scheduling priority under the priority policy (lower first); absent: 0. */
  readonly priority?: number | undefined;
}

/** Runs one request's inputs, packed with other requests' by the engine's scheduler. */
export interface InputRunner {
  /** One output per input, in order. */
  submit(inputs: readonly PassInput[], options?: SubmitOptions): Promise<Float32Array[]>;
  /** Passes that returned states so far (an encoder's steps, a decoder's state passes). */
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
  /** Where the engine's requests' inputs run. */
  readonly inputs: InputRunner;
  /** The engine its inputs run on: its scheduler's queues and KV pool. */
  status(): Promise<EngineStatus>;
  dispose(): Promise<void> | void;
}
