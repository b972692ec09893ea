/**
 * Images in a request (engine/extension.ts's seam): `check` reads the request's decoded images
 * and the content parts that place them, before any work. The engine has no vision encoder yet
 * for any model it loads, so a request holding an image is refused here with a 400 naming the
 * image's part (`messages[0].content[1].image_url`) — a text-only model never silently drops an
 * image. The checks of the images' shape run first, so a malformed gRPC request is told what is
 * wrong with it whatever the model.
 */
import { invalidArgument } from '../errors.js';
import type { RequestExtension } from '../extension.js';
import type { ContentPart, GenerateRequest } from '../types.js';
import { checkImages, checkPartIndices } from './image.js';

export class VisionInputs implements RequestExtension<never> {
  readonly name = 'vision';

  constructor(private readonly modelName: string) {}

  check(request: GenerateRequest): undefined {
    const images = request.images ?? [];
    const prompt = request.prompt;
    const placed = new Set<number>();
    const place = (parts: readonly ContentPart[] | undefined, at: string): void => {
      if (!parts) return;
      checkPartIndices(parts, images.length, at);
      for (const p of parts) if (p.type === 'image') placed.add(p.image);
    };
    if (prompt.kind === 'chat')
      prompt.messages.forEach((m, i) => place(m.parts, `prompt.chat.messages[${i}].parts`));
    else if (prompt.kind === 'text') place(prompt.parts, 'prompt.text.parts');
    if (images.length === 0) return undefined;
    checkImages(images);
    const unplaced = images.findIndex((_, i) => !placed.has(i));
    if (unplaced >= 0) {
      throw invalidArgument(
        images[unplaced]!.field || `images[${unplaced}]`,
        'no content part of the prompt places this image',
      );
    }
    throw invalidArgument(
      images[0]!.field || 'images[0]',
      `image input is not supported by this model: ${this.modelName} is a text-only model`,
    );
  }
}
