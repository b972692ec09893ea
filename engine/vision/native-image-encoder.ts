/**
 * The ImageEncoder of a vision model's folder on the native core (native.ts: loadVisionModel,
 * preprocessImage, encodeImage): each image preprocessed as its processor does (tiles, grid)
 * off the JS thread, then the tiles of every image asked for in the same turn of the event
 * loop — one request's, or several requests' that arrived together, batched as vLLM's encoder
 * batches them — encoded together, at most `tilesPerPass` tiles a pass (the encoder's budget:
 * a pass's activations are bounded whatever the images). LLaVA-1.6's tile rows are then packed
 * per image (packImageFeatures: by the image's size, unpadded, image_newline per row).
 */
import {
  type VisionFamily,
  disposeVisionModel,
  encodeImage,
  loadVisionModel,
  packImageFeatures,
  preprocessImage,
  visionInfo,
  type PreprocessedImage,
  type VisionModelHandle,
} from '../../native/native.js';
import { invalidArgument } from '../errors.js';
import type { ImageInput } from '../types.js';
import type { EncodedImage, ImageEncoder } from './image-encoder.js';

export interface NativeImageEncoderOptions {
  readonly threads?: number;
  /** An mmproj GGUF's text model (native.ts VisionLoadOptions.textModel). */
  readonly textModel?: string;
  /** The encoder's budget: most tiles a pass (at most MAX_TILES_PER_PASS). */
  readonly tilesPerPass?: number;
}

/** The native encoder's most tiles a pass (native.ts encodeImage). */
const MAX_TILES_PER_PASS = 256;

export class NativeImageEncoder implements ImageEncoder {
  readonly tokensPerTile: number;
  readonly hidden: number;
  /** Which family's processor and prompt the model takes. */
  readonly family: VisionFamily;
  private readonly tileValues: number;

  private constructor(
    private readonly handle: VisionModelHandle,
    private readonly tilesPerPass: number,
  ) {
    const info = visionInfo(handle);
    this.tokensPerTile = info.tokensPerTile;
    this.hidden = info.textHiddenSize;
    this.family = info.family;
    this.tileValues = 3 * info.tileSize * info.tileSize;
  }

  /**
   * A folder's image side, or an mmproj GGUF's with `textModel` (the GGUF text model whose
   * vocabulary gives the image tokens' ids).
   */
  static async load(path: string, options: NativeImageEncoderOptions = {}): Promise<NativeImageEncoder> {
    const { threads, textModel, tilesPerPass = 64 } = options;
    const handle = await loadVisionModel(path, {
      ...(threads !== undefined ? { threads } : {}),
      ...(textModel !== undefined ? { textModel } : {}),
    });
    return new NativeImageEncoder(handle, Math.max(1, Math.min(tilesPerPass, MAX_TILES_PER_PASS)));
  }

  /** The processor's prompt tokens the text model's vocabulary lacks (an mmproj paired with the wrong GGUF). */
  missingTokens(): string[] {
    const t = visionInfo(this.handle).tokens;
    // LLaVA's processor writes <image> alone; Gemma 3's brackets its soft tokens.
    const written =
      this.family === 'llava' || this.family === 'llava_next'
        ? [t.image]
        : this.family === 'gemma3'
          ? [t.image, t.startOfImage, t.endOfImage]
          : [t.image, t.fakeAroundImage, t.globalImage, ...t.rowCol];
    return written.filter((x) => x.id < 0).map((x) => x.text);
  }

  /** Encoder passes run so far (tests read how calls were batched). */
  passes = 0;
  private pending: { images: readonly ImageInput[]; done: (r: Promise<EncodedImage[]>) => void }[] = [];

  /** Joins the calls of this turn of the event loop into one batch; each gets its images' part. */
  encode(images: readonly ImageInput[]): Promise<EncodedImage[]> {
    return new Promise((resolve) => {
      if (this.pending.length === 0) setImmediate(() => this.flush());
      this.pending.push({ images, done: resolve });
    });
  }

  private flush(): void {
    const calls = this.pending;
    this.pending = [];
    // An image the processor refuses fails its own call only: each call preprocesses apart.
    const pre = calls.map((c) =>
      Promise.all(c.images.map(async (img) => ({ image: img, pre: await this.preprocess(img) }))),
    );
    const batch = Promise.allSettled(pre).then(async (settled) => {
      const ok = settled.map((x) => (x.status === 'fulfilled' ? x.value : []));
      const encoded = await this.encodeAll(ok.flat());
      let at = 0;
      return ok.map((p) => encoded.slice((at += p.length) - p.length, at));
    });
    calls.forEach((c, k) => c.done(pre[k]!.then(() => batch.then((b) => b[k]!))));
  }

  private async encodeAll(
    images: readonly { readonly image: ImageInput; readonly pre: PreprocessedImage }[],
  ): Promise<EncodedImage[]> {
    const pre = images.map((x) => x.pre);
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
      this.passes++;
      rows.set(out, t * perTile);
    }
    let tile = 0;
    const tileRows = pre.map((p) => {
      const embeddings = rows.subarray(tile * perTile, (tile + p.tileCount) * perTile);
      tile += p.tileCount;
      return { rows: p.rows, cols: p.cols, embeddings };
    });
    if (this.family !== 'llava_next') return tileRows;
    return Promise.all(
      tileRows.map(async (e, i) => {
        const { width, height } = images[i]!.image;
        const embeddings = await packImageFeatures(this.handle, e.embeddings, width, height);
        return { ...e, embeddings, imageTokens: embeddings.length / this.hidden };
      }),
    );
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
