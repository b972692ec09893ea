/**
 * Pooling requests (embeddings, token embeddings, scores, classification) as the engine takes
 * them from every gateway family and the Embed RPC: one shape, checked in one place
 * (engine/pooling/validate.ts). Nothing is decoded and no KV is kept past the request.
 */
import type { HistogramSnapshot } from '../types.js';

/** One input: text (tokenized by the model's tokenizer), token ids as given, or a text pair. */
export type PoolingInput =
  | { readonly text: string }
  | { readonly ids: readonly number[] }
  | { readonly pair: readonly [string, string] };

/**
 * embed: one vector per input (the model's pooling). tokens: every token's last hidden
 * state (TEI's embed_all, vLLM's token_embed). score: one relevance score per pair, from a
 * cross-encoder or a reranking decoder, or for an embedder the cosine of the pair's two
 * embeddings (vLLM's /score). classify: the classifier's label scores per input.
 */
export type PoolingTask = 'embed' | 'tokens' | 'score' | 'classify';

export interface PoolingRequest {
  readonly requestId?: string;
  readonly task: PoolingTask;
  readonly inputs: readonly PoolingInput[];
  /** The request's own name of its inputs, for errors ('input', 'inputs', 'documents'...); default 'input'. */
  readonly inputField?: string;
  /**
   * An input longer than the model's limit: cut to at most `maxTokens` (default: the model's
   * limit), keeping the start ('right': the end is cut, TEI's default) or the end ('left',
   * vLLM's truncate_prompt_tokens). Absent: such an input is refused, naming it.
   */
  readonly truncate?: { readonly direction: 'left' | 'right'; readonly maxTokens?: number };
  /** L2-normalise vectors (embed); default: the model's own (a Normalize module). */
  readonly normalize?: boolean;
  /** Matryoshka: keep the first `dimensions` values (then normalise); only for models trained so. */
  readonly dimensions?: number;
  /** Add the tokenizer's special tokens ([CLS] .. [SEP], a decoder's EOS); default true. */
  readonly addSpecialTokens?: boolean;
  /**
   * score / classify: apply the model's activation (sigmoid for one label, softmax for several:
   * sentence-transformers' CrossEncoder default); false returns the raw logits (TEI raw_scores).
   */
  readonly activation?: boolean;
}

export interface PoolingResult {
  /**
   * Per input: the vector (embed), [tokens × hidden] row-major (tokens), one score (score) or
   * one value per label (classify).
   */
  readonly outputs: readonly Float32Array[];
  /** Tokens each input ran as (after truncation, special tokens included). */
  readonly tokenCounts: readonly number[];
  readonly promptTokens: number;
  /** classify: the labels, in output order. */
  readonly labels?: readonly string[];
}

/** What a pooling model serves, for gateways to route and describe it (EngineInfo.pooling). */
export interface PoolingCard {
  readonly tasks: readonly PoolingTask[];
  /** 'mean', 'cls', 'lasttoken', ...: the pooling's modes joined with '+'; '' for a scorer. */
  readonly pooling: string;
  /** Values per embedding (before any Matryoshka cut). */
  readonly dimensions: number;
  /** Whether embeddings are normalised unless a request says otherwise. */
  readonly normalize: boolean;
  /** Matryoshka dimensions the model accepts (empty: `dimensions` is refused; [0]: any up to its width). */
  readonly matryoshka: readonly number[];
  /** Longest input in tokens (special tokens included). */
  readonly maxInputTokens: number;
  /** classify / score: the classifier's labels. */
  readonly labels: readonly string[];
}

/** What the pooling requests of an engine add up to (EngineStatus.pooling). */
export interface PoolingStats {
  readonly requests: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly inputs: number;
  readonly promptTokens: number;
  readonly passes: number;
  /** Request latency in seconds. */
  readonly latency: HistogramSnapshot;
}

export interface PoolingOptions {
  /**
   * 'auto' (default): what the files say. 'embed' / 'score': serve the model as an embedder
   * (last-token pooling for a decoder without sentence-transformers files) or as a reranker
   * (a decoder: Qwen3-Reranker's yes/no scoring). 'generate': a decoder that generates, even
   * when its folder carries a pooling.
   */
  readonly task?: 'auto' | 'generate' | 'embed' | 'score';
  /** Matryoshka widths to accept in requests' `dimensions`; 'any' for every width; default: config.json's. */
  readonly matryoshkaDimensions?: readonly number[] | 'any';
  /** Qwen3-Reranker's instruction (default: its model card's web-search one). */
  readonly rerankInstruction?: string;
}
