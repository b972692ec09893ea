/**
 * Images in a request (engine/extension.ts's seam). `check` reads the request's decoded images
 * and the content parts that place them, before any work; the checks of the images' shape run
 * first, so a malformed gRPC request is told what is wrong with it whatever the model. A
 * text-only model (or a vision model whose encoder this engine lacks) refuses a request
 * holding an image with a 400 (501) naming the image's part — it never silently drops one.
 *
 * Images sit in the content parts of chat messages or of a text prompt (TGI's `![](url)`), in
 * order, each once; a token-ids prompt has no parts, so no place for one.
 *
 * For a vision model (Idefics3 / SmolVLM, LLaVA-1.5, LLaVA-1.6, Gemma 3): `promptInput` writes a text prompt's text
 * with the family's placeholder (`<image>`; Gemma 3's `<start_of_image>`) at each image part (the
 * chat template writes the same for a message's image part); `promptText` expands them as text
 * where the family's processor does (Gemma 3); `prepare` encodes the request's images while the prompt is
 * tokenized; `prompt` writes each image's tokens in place of its placeholder (the family's
 * ImagePrompt: idefics3-prompt.ts, llava-prompt.ts, llava-next-prompt.ts, gemma3-prompt.ts) and keeps the encoder's
 * rows for the image-token positions (and Gemma 3's bidirectional spans); `plan` adds a hash of the images' pixels to
 * the prefix-cache key, so the same images and text reuse cached blocks and other images never
 * do; `admit` and `fork` give the sequences the rows, which each step places at the positions
 * it computes (step-plan.ts), a recompute after preemption too.
 */
import { createHash } from 'node:crypto';
import { EngineError, invalidArgument } from '../errors.js';
import type { RequestExtension, RequestPlan } from '../extension.js';
import type { LiveRequest } from '../live-request.js';
import type { EngineTokenizer } from '../prompt.js';
import type { PlacedRows, Sequence } from '../sequence.js';
import type { VisionFamily } from '../../native/native.js';
import type { ContentPart, GenerateRequest, ImageInput, PromptInput } from '../types.js';
import { GEMMA3_PROMPT } from './gemma3-prompt.js';
import { IDEFICS3_PROMPT } from './idefics3-prompt.js';
import type { EncodedImage, ImageEncoder } from './image-encoder.js';
import type { ImagePrompt, ImagePromptFamily } from './image-prompt.js';
import { checkImages, checkPartIndices } from './image.js';
import { LLAVA_NEXT_PROMPT } from './llava-next-prompt.js';
import { LLAVA_PROMPT } from './llava-prompt.js';

/** Each family's prompt side: a new family adds its row. */
const PROMPTS: Record<VisionFamily, ImagePromptFamily> = {
  idefics3: IDEFICS3_PROMPT,
  llava: LLAVA_PROMPT,
  llava_next: LLAVA_NEXT_PROMPT,
  gemma3: GEMMA3_PROMPT,
};

/** What the extension knows of the served model. */
export interface VisionModel {
  readonly modelName: string;
  /** The vision-language family; undefined: a text-only model. */
  readonly vision: VisionFamily | undefined;
  /** The model's image encoder, when this engine has one for it. */
  readonly encoder: ImageEncoder | undefined;
  readonly tokenizer: EngineTokenizer;
  readonly maxInputTokenLen: number;
  /** A step's token budget: an image whose tokens attend both ways (Gemma 3) must fit in one. */
  readonly maxPrefillTokens: number;
}

interface ImagesPart {
  readonly images: readonly ImageInput[];
  encoded?: EncodedImage[];
  hash?: string;
  placed?: PlacedRows;
}

export class VisionInputs implements RequestExtension<ImagesPart> {
  readonly name = 'vision';
  private imagePrompt: Promise<ImagePrompt> | undefined;

  constructor(private readonly model: VisionModel) {}

  check(request: GenerateRequest): ImagesPart | undefined {
    const images = request.images ?? [];
    const prompt = request.prompt;
    const lists = placingParts(prompt);
    for (const { parts, at } of lists) checkPartIndices(parts, images.length, at);
    if (images.length === 0) return undefined;
    checkImages(images);
    const field = images[0]!.field || 'images[0]';
    if (prompt.kind === 'tokens')
      throw invalidArgument(
        field,
        'a token-ids prompt has no place for an image: send it as a part of a text prompt or a chat message',
      );
    const placed = new Set<number>();
    for (const { parts } of lists) for (const p of parts) if (p.type === 'image') placed.add(p.image);
    const unplaced = images.findIndex((_, i) => !placed.has(i));
    if (unplaced >= 0) {
      throw invalidArgument(
        images[unplaced]!.field || `images[${unplaced}]`,
        'no content part of the prompt places this image',
      );
    }
    const { vision, encoder, modelName } = this.model;
    if (vision === undefined)
      throw invalidArgument(
        field,
        `image input is not supported by this model: ${modelName} is a text-only model`,
      );
    if (!encoder)
      throw new EngineError(
        'UNIMPLEMENTED',
        `image input: this engine has no image encoder for ${modelName} (${vision}) yet`,
        field,
      );
    // One image per part, in the order the prompt writes them (the encodings are placed so).
    let next = 0;
    for (const { parts, at } of lists)
      parts.forEach((p, j) => {
        if (p.type !== 'image') return;
        if (p.image !== next)
          throw invalidArgument(
            `${at}[${j}].image`,
            `names image ${p.image} where image ${next} comes next: image parts must name the request images in order, each once`,
          );
        next++;
      });
    return { images };
  }

  /** A text prompt's text with the processor's `<image>` at each image part; other prompts as they are. */
  promptInput(prompt: PromptInput): PromptInput {
    if (prompt.kind !== 'text' || !prompt.parts) return prompt;
    const placeholder = PROMPTS[this.model.vision ?? 'idefics3'].placeholder;
    const text = prompt.parts.map((p) => (p.type === 'text' ? p.text : placeholder)).join('');
    return {
      kind: 'text',
      text: this.promptText(text),
      ...(prompt.addSpecialTokens !== undefined ? { addSpecialTokens: prompt.addSpecialTokens } : {}),
    };
  }

  /** A rendered prompt's text with the family's text-level expansion (Gemma 3's), else as it is. */
  promptText(text: string): string {
    const family = this.model.vision && PROMPTS[this.model.vision];
    return family?.expandText && this.model.encoder
      ? family.expandText(text, this.model.encoder.tokensPerTile)
      : text;
  }

  async prepare(part: ImagesPart): Promise<void> {
    const encoder = this.model.encoder!;
    part.hash = imagesHash(part.images);
    const encoded = await encoder.encode(part.images);
    encoded.forEach((e, i) => {
      const tiles = e.rows * e.cols > 0 ? e.rows * e.cols + 1 : 1;
      const rows = e.imageTokens ?? tiles * encoder.tokensPerTile;
      if (e.embeddings.length !== rows * encoder.hidden)
        throw new EngineError(
          'INTERNAL',
          `image encoder: image ${i} (${e.rows}x${e.cols} tiles) gave ${e.embeddings.length} values, ` +
            `expected ${rows} rows x ${encoder.hidden}`,
        );
    });
    part.encoded = encoded;
    await this.loadPrompt();
  }

  prompt(ids: readonly number[], part: ImagesPart): number[] {
    const encoder = this.model.encoder!;
    const encoded = part.encoded!;
    const out = this.resolvedPrompt!.expand(ids, encoded, encoder.tokensPerTile);
    const max = this.model.maxInputTokenLen;
    if (out.ids.length > max)
      throw invalidArgument(
        'prompt',
        `the input has ${out.ids.length} tokens with its images' ${out.positions.length} image tokens, more than ` +
          `maxInputTokenLen (${max}); send fewer or smaller images`,
      );
    const rows = new Float32Array(out.positions.length * encoder.hidden);
    let at = 0;
    for (const e of encoded) {
      rows.set(e.embeddings, at);
      at += e.embeddings.length;
    }
    const spans = out.bidirectional;
    for (let k = 0; spans && k < spans.length; k += 2)
      if (spans[k + 1] - spans[k] > this.model.maxPrefillTokens)
        throw invalidArgument(
          'images',
          `an image takes ${spans[k + 1] - spans[k]} tokens that must be computed in one step, more than ` +
            `maxPrefillTokens (${this.model.maxPrefillTokens}); raise maxPrefillTokens`,
        );
    part.placed = {
      positions: out.positions,
      rows,
      hidden: encoder.hidden,
      ...(spans ? { bidirectional: spans } : {}),
    };
    part.encoded = undefined;
    return out.ids;
  }

  plan(plan: RequestPlan, part: ImagesPart | undefined): void {
    // The images' identity joins the adapter's in the key of every block of the prompt.
    if (part?.hash) plan.cacheExtra = `${plan.cacheExtra}\0images:${part.hash}`;
  }

  admit(_req: LiveRequest, seq: Sequence, part: ImagesPart | undefined): void {
    if (part?.placed) seq.placed = part.placed;
  }

  fork(parent: Sequence, child: Sequence): void {
    child.placed = parent.placed;
  }

  /** The family's prompt expansion, its token ids resolved in this tokenizer once. */
  private resolvedPrompt: ImagePrompt | undefined;
  private loadPrompt(): Promise<ImagePrompt> {
    this.imagePrompt ??= PROMPTS[this.model.vision!]
      .load(this.model.tokenizer)
      .then((p) => (this.resolvedPrompt = p));
    return this.imagePrompt;
  }
}

/** The part lists of a prompt that may place images, each with its field, in prompt order. */
function placingParts(prompt: PromptInput): { parts: readonly ContentPart[]; at: string }[] {
  if (prompt.kind === 'chat')
    return prompt.messages.flatMap((m, i) =>
      m.parts ? [{ parts: m.parts, at: `prompt.chat.messages[${i}].parts` }] : [],
    );
  if (prompt.kind === 'text' && prompt.parts) return [{ parts: prompt.parts, at: 'prompt.text.parts' }];
  return [];
}

/** sha256 over each image's size and pixels: the prefix-cache identity of a request's images. */
function imagesHash(images: readonly ImageInput[]): string {
  const h = createHash('sha256');
  for (const img of images) {
    h.update(`${img.width}x${img.height}\0`);
    h.update(img.rgb);
  }
  return h.digest('hex');
}
