/**
 * How a model is served when it can pool (EngineOptions.pooling): the engine options of
 * engine/pooling/, read by engine/pooling/load.ts and set by `prism serve` / `prism engine`
 * flags (cli/pooling-flags.ts).
 */
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
