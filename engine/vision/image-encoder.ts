/**
 * What the engine needs of a vision model's image encoder (native/src/vision/ behind
 * native.ts for a model that has one): a request's decoded images in, per image its tile grid
 * and the embedding rows its image tokens take, in prompt order. The rows replace the image
 * tokens' table rows in prefill (native StepPlan `embedRows`).
 */
import type { ImageInput } from '../types.js';

export interface EncodedImage {
  /** Tile grid of the split image (0 × 0: too small to split, only the global image). */
  readonly rows: number;
  readonly cols: number;
  /**
   * [(rows × cols + 1) × tokensPerTile × hidden]: the tiles' rows, the global image's last; for a
   * family that packs them (LLaVA-1.6), [imageTokens × hidden] in the prompt's order.
   */
  readonly embeddings: Float32Array;
  /** The image's token count when it is not tiles × tokensPerTile (LLaVA-1.6: its size decides it). */
  readonly imageTokens?: number;
}

export interface ImageEncoder {
  /** Image tokens of one tile (Idefics3's image_seq_len). */
  readonly tokensPerTile: number;
  /** The text model's hidden size: the width of a row. */
  readonly hidden: number;
  /** Encodes several images at once (one request's, or several requests' batched). */
  encode(images: readonly ImageInput[]): Promise<EncodedImage[]>;
}
