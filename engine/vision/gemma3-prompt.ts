/**
 * Gemma 3's image tokens, as transformers' Gemma3Processor writes them: each `<start_of_image>`
 * of the prompt text (Gemma 3's chat template writes it for an image part) becomes its
 * full_image_sequence, "\n\n<start_of_image>" + mm_tokens_per_image x `<image_soft_token>` +
 * "<end_of_image>\n\n" (`tokensPerImage`: the native loader checks the folder's
 * image_seq_length is mm_tokens_per_image). The processor expands the text and then tokenizes
 * it, and the newlines merge with the text around them ("user\n" + "\n\n" is one token in a
 * vocabulary with "\n\n\n"), so the expansion is done on the text too (`expandText`, before
 * tokenizing) and `expand` only finds each image's run of soft tokens in the ids: the encoder's
 * rows go there, and each run — the tokens Gemma3Processor marks with token_type_ids 1 — is one
 * bidirectional span (an image's tokens attend to each other both ways).
 */
import { EngineError, invalidArgument } from '../errors.js';
import type { EngineTokenizer } from '../prompt.js';
import type { EncodedImage } from './image-encoder.js';
import type { ImagePrompt, ImagePromptFamily } from './image-prompt.js';

export const GEMMA3_TOKENS = {
  start: '<start_of_image>',
  end: '<end_of_image>',
  soft: '<image_soft_token>',
} as const;

/** Gemma3Processor's full_image_sequence in place of every `<start_of_image>` of `text`. */
export function expandGemma3Text(text: string, tokensPerImage: number): string {
  const { start, end, soft } = GEMMA3_TOKENS;
  return text.split(start).join(`\n\n${start}${soft.repeat(tokensPerImage)}${end}\n\n`);
}

/**
 * Each image's soft tokens in the expanded prompt: `<start_of_image>`, exactly
 * `tokensPerImage` soft tokens, `<end_of_image>`, once per image; their positions, and each
 * run's span [start, end).
 */
export function findGemma3Images(
  prompt: readonly number[],
  images: readonly EncodedImage[],
  tokensPerImage: number,
  ids: { readonly start: number; readonly end: number; readonly soft: number },
): { ids: number[]; positions: Int32Array; bidirectional: Int32Array } {
  const starts = prompt.flatMap((t, i) => (t === ids.start ? [i] : []));
  const softs = prompt.reduce((n, t) => n + (t === ids.soft ? 1 : 0), 0);
  const whole = starts.every(
    (i) =>
      prompt[i + tokensPerImage + 1] === ids.end &&
      prompt.slice(i + 1, i + tokensPerImage + 1).every((t) => t === ids.soft),
  );
  if (starts.length !== images.length || softs !== starts.length * tokensPerImage || !whole)
    throw invalidArgument(
      'prompt',
      `holds ${starts.length} images' tokens (${GEMMA3_TOKENS.start}) for ${images.length} images: the text may not ` +
        `contain ${GEMMA3_TOKENS.start}, ${GEMMA3_TOKENS.soft} or ${GEMMA3_TOKENS.end}, and a truncation may not cut an image`,
    );
  const positions: number[] = [];
  const spans: number[] = [];
  for (const i of starts) {
    spans.push(i + 1, i + 1 + tokensPerImage);
    for (let k = 1; k <= tokensPerImage; k++) positions.push(i + k);
  }
  return { ids: [...prompt], positions: Int32Array.from(positions), bidirectional: Int32Array.from(spans) };
}

export const GEMMA3_PROMPT: ImagePromptFamily = {
  placeholder: GEMMA3_TOKENS.start,
  expandText: expandGemma3Text,
  async load(tok: EngineTokenizer): Promise<ImagePrompt> {
    const one = async (text: string): Promise<number> => {
      const ids = await tok.encodeAsync(text, { addSpecialTokens: false });
      if (ids.length !== 1)
        throw new EngineError('INTERNAL', `the tokenizer has no single token for ${text} (Gemma 3 needs it)`);
      return ids[0];
    };
    const [start, end, soft] = await Promise.all(
      [GEMMA3_TOKENS.start, GEMMA3_TOKENS.end, GEMMA3_TOKENS.soft].map(one),
    );
    return {
      expand: (prompt, images, tokensPerTile) => {
        for (const [i, e] of images.entries())
          if (e.rows * e.cols > 0)
            throw new EngineError(
              'INTERNAL',
              `image ${i}: Gemma 3 takes one crop, the encoder gave ${e.rows}x${e.cols}`,
            );
        return findGemma3Images(prompt, images, tokensPerTile, { start, end, soft });
      },
    };
  },
};
