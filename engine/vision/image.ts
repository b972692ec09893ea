/**
 * Checks of the images a request carries (`ImageInput`, `ContentPart` in engine/types.ts). A
 * gateway fetches and decodes what a client sent (gateways/shared/images/) and hands the engine
 * pixels, never a URL or a file format: a model's own preprocessing would start from these.
 *
 * A prompt that holds images keeps its text as it always did (a chat message's `content`, a
 * text prompt's `text`: the text parts joined, what a text-only path reads) and, beside it,
 * `parts`: its content in order, where an image part names one of the request's `images` by
 * index. The renderer of a vision model reads the parts; nothing else needs to.
 */
import { invalidArgument } from '../errors.js';
import type { ContentPart, ImageInput } from '../types.js';

/**
 * Refuses an image whose pixels do not match its size, and any part naming an image the request
 * lacks (`at`: the field of the part list). gRPC callers reach the engine without a gateway.
 */
export function checkImages(images: readonly ImageInput[], field = 'images'): void {
  images.forEach((img, i) => {
    const at = img.field || `${field}[${i}]`;
    if (!Number.isInteger(img.width) || !Number.isInteger(img.height) || img.width < 1 || img.height < 1)
      throw invalidArgument(at, `width and height must be positive integers, got ${img.width}x${img.height}`);
    if (img.rgb.length !== img.width * img.height * 3)
      throw invalidArgument(
        at,
        `holds ${img.rgb.length} bytes; a ${img.width}x${img.height} RGB image is ${img.width * img.height * 3}`,
      );
  });
}

export function checkPartIndices(parts: readonly ContentPart[], images: number, at: string): void {
  parts.forEach((p, j) => {
    if (p.type === 'image' && (!Number.isInteger(p.image) || p.image < 0 || p.image >= images))
      throw invalidArgument(`${at}[${j}].image`, `names image ${p.image}; the request has ${images}`);
  });
}
