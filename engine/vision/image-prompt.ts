/**
 * A vision-language family's prompt side (the seam a new family plugs into): the text its
 * processor expects where an image goes, and the expansion of each such placeholder token
 * into the image's tokens — Idefics3's tile grid (idefics3-prompt.ts), LLaVA's run of
 * `<image>` tokens (llava-prompt.ts), Gemma 3's bracketed soft tokens (gemma3-prompt.ts). Done on token ids, after the prompt is tokenized, with
 * the ids resolved once per tokenizer.
 */
import type { EngineTokenizer } from '../prompt.js';
import type { EncodedImage } from './image-encoder.js';

export interface ImagePrompt {
  /**
   * The prompt with each image's one placeholder (in order) replaced by its tokens, and the
   * positions of every image token in it (where the encoder's rows go, in order); for a family
   * whose image tokens attend both ways (Gemma 3), the spans [start, end) of those positions.
   */
  expand(
    prompt: readonly number[],
    images: readonly EncodedImage[],
    tokensPerTile: number,
  ): { ids: number[]; positions: Int32Array; bidirectional?: Int32Array };
}

export interface ImagePromptFamily {
  /** The processor's placeholder text (what the chat template writes for an image part). */
  readonly placeholder: string;
  /**
   * A family whose processor expands its placeholders in the text, before tokenizing (Gemma 3):
   * the prompt text with each placeholder expanded; `expand` then finds the image tokens.
   */
  readonly expandText?: (text: string, tokensPerImage: number) => string;
  /** Resolves the family's token ids in this tokenizer (each must be one added token). */
  load(tokenizer: EngineTokenizer): Promise<ImagePrompt>;
}
