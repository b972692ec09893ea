/**
 * What the pooling engine needs of a model: its card (what it serves), the facts gateways
 * report, the budget of one pass and the pass itself. Two kinds: BERT-family encoders
 * (encoder-backend.ts) and decoders whose last hidden state or yes/no logits pool
 * (decoder-backend.ts).
 */
import type { PassInput } from './pass-queue.js';
import type { PoolingCard } from './types.js';

export interface PoolingBackend {
  readonly card: PoolingCard;
  readonly vocabSize: number;
  readonly architecture: string;
  /** The most common storage type of the weights ('F32', 'Q8_0', ...). */
  readonly dtype: string;
  readonly contextLength: number;
  /** Rows of the token-type table (a cross-encoder's pairs use types 0 and 1 when it has two). */
  readonly tokenTypes: number;
  readonly passBudget: { readonly maxTokens: number; readonly maxInputs: number };
  /** One pass over inputs that all ask for the same output; one output per input. */
  run(inputs: readonly PassInput[]): Promise<Float32Array[]>;
  dispose(): void;
}
