/**
 * Idefics3's (SmolVLM's) image tokens, as its processor (transformers' Idefics3Processor)
 * writes them in place of each `<image>` of the rendered chat: for a split image of rows ×
 * cols tiles, per tile `<fake_token_around_image><row_r_col_c>` and `image_seq_len` ×
 * `<image>`, a newline after each row of tiles, then `\n<fake_token_around_image><global-img>`
 * and the global image's `<image>` tokens, closed by `<fake_token_around_image>`; an image
 * too small to split gets only the global form, without the leading newline. Done on token
 * ids: the tokenizer splits text at these added tokens, so the ids of the expanded text are
 * the ids of the pieces between them — a single newline between two rows, and the last row's
 * newline with the global image's as one `\n\n` piece (one token in SmolLM2's vocabulary).
 */
import { invalidArgument } from '../errors.js';

/** The processor's fixed token strings (Idefics3Processor's own, not the tokenizer's). */
export const IDEFICS3_TOKENS = {
  fake: '<fake_token_around_image>',
  image: '<image>',
  global: '<global-img>',
  rowCol: (r: number, c: number) => `<row_${r}_col_${c}>`,
} as const;

/** Token ids the expansion writes. */
export interface Idefics3TokenIds {
  readonly fake: number;
  readonly image: number;
  readonly global: number;
  readonly newline: number;
  /** `\n\n`, as the tokenizer writes it between the last row of tiles and the global image. */
  readonly newlines: readonly number[];
  /** `<row_r_col_c>` (1-based r, c) for r, c up to what the tokenizer has. */
  rowCol(r: number, c: number): number;
}

/** One image's tokens for its grid (rows × cols tiles, 0 × 0: global image only). */
function imageTokens(rows: number, cols: number, seqLen: number, ids: Idefics3TokenIds): number[] {
  const out: number[] = [];
  const run = () => {
    for (let i = 0; i < seqLen; i++) out.push(ids.image);
  };
  if (rows > 0 && cols > 0) {
    for (let r = 1; r <= rows; r++) {
      for (let c = 1; c <= cols; c++) {
        out.push(ids.fake, ids.rowCol(r, c));
        run();
      }
      if (r < rows) out.push(ids.newline);
    }
    out.push(...ids.newlines);
  }
  out.push(ids.fake, ids.global);
  run();
  out.push(ids.fake);
  return out;
}

/**
 * The prompt with each image's one `<image>` placeholder (in order) replaced by its tokens,
 * and the positions of every image token in it (the rows' places). The placeholder count must
 * be the image count: a text that holds `<image>` itself, or a truncation that cut one, is refused.
 */
export function expandImages(
  prompt: readonly number[],
  grids: readonly { readonly rows: number; readonly cols: number }[],
  seqLen: number,
  ids: Idefics3TokenIds,
): { ids: number[]; positions: Int32Array } {
  const at: number[] = [];
  prompt.forEach((t, i) => t === ids.image && at.push(i));
  if (at.length !== grids.length)
    throw invalidArgument(
      'prompt',
      `holds ${at.length} image placeholder tokens (${IDEFICS3_TOKENS.image}) for ${grids.length} images: ` +
        `the text may not contain ${IDEFICS3_TOKENS.image}, and a truncation may not cut an image`,
    );
  const out: number[] = [];
  let from = 0;
  at.forEach((p, k) => {
    out.push(...prompt.slice(from, p), ...imageTokens(grids[k]!.rows, grids[k]!.cols, seqLen, ids));
    from = p + 1;
  });
  out.push(...prompt.slice(from));
  const positions: number[] = [];
  out.forEach((t, i) => t === ids.image && positions.push(i));
  return { ids: out, positions: Int32Array.from(positions) };
}
