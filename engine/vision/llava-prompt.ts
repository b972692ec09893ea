/**
 * LLaVA-1.5's image tokens, as transformers' LlavaProcessor writes them: each `<image>` of the
 * rendered chat becomes `<image>` repeated once per image feature — (crop / patch_size)² +
 * num_additional_image_tokens, less the class token for 'default' (576 for LLaVA-1.5-7B; the
 * native loader checks the folder's processor_config.json gives the encoder's row count, which
 * is `tokensPerTile` here). Nothing else around it: the chat template writes `<image>\n`.
 */
import { EngineError, invalidArgument } from '../errors.js';
import type { EngineTokenizer } from '../prompt.js';
import type { EncodedImage } from './image-encoder.js';
import type { ImagePrompt, ImagePromptFamily } from './image-prompt.js';

const IMAGE = '<image>';

/** `tokensPerImage`: one count for every image, or each image's own (LLaVA-1.6's, by its size). */
export function expandLlavaImages(
  prompt: readonly number[],
  images: readonly EncodedImage[],
  tokensPerImage: number | readonly number[],
  imageId: number,
): { ids: number[]; positions: Int32Array } {
  const at = prompt.flatMap((t, i) => (t === imageId ? [i] : []));
  if (at.length !== images.length)
    throw invalidArgument(
      'prompt',
      `holds ${at.length} image placeholder tokens (${IMAGE}) for ${images.length} images: ` +
        `the text may not contain ${IMAGE}, and a truncation may not cut an image`,
    );
  const ids: number[] = [];
  const positions: number[] = [];
  let image = 0;
  prompt.forEach((t) => {
    if (t !== imageId) return void ids.push(t);
    const count = typeof tokensPerImage === 'number' ? tokensPerImage : tokensPerImage[image]!;
    image++;
    for (let k = 0; k < count; k++) {
      positions.push(ids.length);
      ids.push(imageId);
    }
  });
  return { ids, positions: Int32Array.from(positions) };
}

/** The tokenizer's one id for `<image>` (LLaVA-1.5's and LLaVA-1.6's placeholder). */
export async function llavaImageId(tok: EngineTokenizer): Promise<number> {
  const ids = await tok.encodeAsync(IMAGE, { addSpecialTokens: false });
  if (ids.length !== 1)
    throw new EngineError('INTERNAL', `the tokenizer has no single token for ${IMAGE} (LLaVA needs it)`);
  return ids[0]!;
}

export const LLAVA_PROMPT: ImagePromptFamily = {
  placeholder: IMAGE,
  async load(tok: EngineTokenizer): Promise<ImagePrompt> {
    const imageId = await llavaImageId(tok);
    return {
      expand: (prompt, images, tokensPerTile) => {
        for (const [i, e] of images.entries())
          if (e.rows * e.cols > 0)
            throw new EngineError(
              'INTERNAL',
              `image ${i}: LLaVA-1.5 takes one tile, the encoder gave ${e.rows}x${e.cols}`,
            );
        return expandLlavaImages(prompt, images, tokensPerTile, imageId);
      },
    };
  },
};
