/**
 * The ImageEncoder of a vision model's folder on the native core (native.ts: loadVisionModel,
 * preprocessImage, encodeImage): each image preprocessed as its processor does (tiles, grid)
 * off the JS thread, then the tiles of every image in the call — one request's, or several
 * requests' batched — encoded together, at most `tilesPerPass` tiles a pass (the encoder's
 * budget: a pass's activations are bounded whatever the images).
 */
import {
  disposeVisionModel,
  encodeImage,
  loadVisionModel,
  preprocessImage,
  visionInfo,
  type PreprocessedImage,
  type VisionModelHandle,
} from '../../native/native.js';
import { invalidArgument } from '../errors.js';
import type { ImageInput } from '../types.js';
import type { EncodedImage, ImageEncoder } from './image-encoder.js';

/** The native encoder's most tiles a pass (native.ts encodeImage). */
const MAX_TILES_PER_PASS = 256;

export class NativeImageEncoder implements ImageEncoder {
  readonly tokensPerTile: number;
  readonly hidden: number;
  private readonly tileValues: number;

  private constructor(
    private readonly handle: VisionModelHandle,
    private readonly tilesPerPass: number,
  ) {
    const info = visionInfo(handle);
    this.tokensPerTile = info.tokensPerTile;
    this.hidden = info.textHiddenSize;
    this.tileValues = 3 * info.tileSize * info.tileSize;
  }

  static async load(dir: string, threads?: number, tilesPerPass = 64): Promise<NativeImageEncoder> {
    const handle = await loadVisionModel(dir, threads !== undefined ? { threads } : {});
    return new NativeImageEncoder(handle, Math.max(1, Math.min(tilesPerPass, MAX_TILES_PER_PASS)));
  }

  async encode(images: readonly ImageInput[]): Promise<EncodedImage[]> {
    const pre = await Promise.all(images.map((img) => this.preprocess(img)));
    const total = pre.reduce((n, p) => n + p.tileCount, 0);
    const tiles = new Float32Array(total * this.tileValues);
    let at = 0;
    for (const p of pre) {
      tiles.set(p.tiles, at);
      at += p.tiles.length;
    }
    const perTile = this.tokensPerTile * this.hidden;
    const rows = new Float32Array(total * perTile);
    for (let t = 0; t < total; t += this.tilesPerPass) {
      const n = Math.min(this.tilesPerPass, total - t);
      const out = await encodeImage(
        this.handle,
        tiles.subarray(t * this.tileValues, (t + n) * this.tileValues),
        n,
      );
      rows.set(out, t * perTile);
    }
    let tile = 0;
    return pre.map((p) => {
      const embeddings = rows.subarray(tile * perTile, (tile + p.tileCount) * perTile);
      tile += p.tileCount;
      return { rows: p.rows, cols: p.cols, embeddings };
    });
  }

  dispose(): void {
    disposeVisionModel(this.handle);
  }

  /** An image the processor refuses (too large) is the client's error, naming its part. */
  private async preprocess(img: ImageInput): Promise<PreprocessedImage> {
    try {
      return await preprocessImage(this.handle, img.rgb, img.width, img.height);
    } catch (e) {
      throw invalidArgument(img.field || 'images', e instanceof Error ? e.message : String(e));
    }
  }
}
