/**
 * LLaVA-1.6's image tokens, as transformers' LlavaNextProcessor writes them: each `<image>` of
 * the rendered chat becomes `<image>` repeated once per image row — the base tile's patches,
 * then the anyres grid's patch rows left after unpadding, each closed by image_newline
 * (`_get_number_of_features`, less the class token for 'default'). The count depends on the
 * image's size, so it is the one the native packer gave the image (native.ts
 * packImageFeatures, EncodedImage.imageTokens), which the tests hold to the processor's.
 */
import { EngineError } from '../errors.js';
import type { EngineTokenizer } from '../prompt.js';
import type { ImagePrompt, ImagePromptFamily } from './image-prompt.js';
import { expandLlavaImages, llavaImageId } from './llava-prompt.js';

export const LLAVA_NEXT_PROMPT: ImagePromptFamily = {
  placeholder: '<image>',
  async load(tok: EngineTokenizer): Promise<ImagePrompt> {
    const imageId = await llavaImageId(tok);
    return {
      expand: (prompt, images) => {
        const counts = images.map((e, i) => {
          if (e.imageTokens === undefined)
            throw new EngineError('INTERNAL', `image ${i}: LLaVA-1.6's encoder gave no packed row count`);
          return e.imageTokens;
        });
        return expandLlavaImages(prompt, images, counts, imageId);
      },
    };
  },
};
