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
import { EngineError, invalidArgument } from '../errors.js';
import type { EngineTokenizer } from '../prompt.js';
import type { ImagePrompt, ImagePromptFamily } from './image-prompt.js';

/** The processor's fixed token strings (Idefics3Processor's own, not the tokenizer's). */
const IDEFICS3_TOKENS = {
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

async function resolveTokenIds(tok: EngineTokenizer): Promise<Idefics3TokenIds> {
  const one = async (text: string): Promise<number> => {
    const ids = await tok.encodeAsync(text, { addSpecialTokens: false });
    if (ids.length !== 1)
      throw new EngineError(
        'INTERNAL',
        `the tokenizer has no single token for ${JSON.stringify(text)} (Idefics3 needs it)`,
      );
    return ids[0]!;
  };
  const [fake, image, global, newline] = await Promise.all(
    [IDEFICS3_TOKENS.fake, IDEFICS3_TOKENS.image, IDEFICS3_TOKENS.global, '\n'].map(one),
  );
  const newlines = await tok.encodeAsync('\n\n', { addSpecialTokens: false });
  // The grid tokens a split image may use (SmolVLM's tokenizer has them up to 6 x 6).
  const grid = new Map<string, number>();
  for (let r = 1; r <= 6; r++)
    for (let c = 1; c <= 6; c++) grid.set(`${r},${c}`, await one(IDEFICS3_TOKENS.rowCol(r, c)));
  return {
    fake: fake!,
    image: image!,
    global: global!,
    newline: newline!,
    newlines,
    rowCol(r, c) {
      const id = grid.get(`${r},${c}`);
      if (id === undefined)
        throw invalidArgument('images', `a ${r}x${c} tile grid is more than the tokenizer's 6 x 6`);
      return id;
    },
  };
}

/** Idefics3's side of the prompt seam (image-prompt.ts). */
export const IDEFICS3_PROMPT: ImagePromptFamily = {
  placeholder: IDEFICS3_TOKENS.image,
  async load(tok: EngineTokenizer): Promise<ImagePrompt> {
    const ids = await resolveTokenIds(tok);
    return { expand: (prompt, images, tokensPerTile) => expandImages(prompt, images, tokensPerTile, ids) };
  },
};
