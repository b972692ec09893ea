/**
 * A request's image parts, fetched and decoded together: each family finds its parts (OpenAI
 * chat's `image_url`, Responses' `input_image`, TGI's `![](url)`, Ollama's `images`,
 * Anthropic's `image` blocks, MindIE's `image_url` inputs) and hands them here with the
 * field each came from; the result gives the engine's `images` and, for each part object, its
 * index there. The per-request limits (count, pixels together) are checked here, once.
 */
import type { ContentPart, ImageInput } from '../../../engine/api.js';
import { invalid } from '../http-error.js';
import { decodeImage, type DeclaredType } from './decode-image.js';
import { base64Bytes, readImageUrl } from './image-source.js';
import type { MediaConfig } from './media-config.js';

/**
 * One image part a family found: its object in the body, the field naming it, and its URL
 * (`url`: data:, file:// or http(s)) or its bare base64 text (`base64`: Anthropic's `data`, Ollama's `images`).
 * `declared`: a media type the client stated that the bytes must hold (Anthropic's
 * `media_type`), checked against what the decoder finds.
 */
export type FoundImage = {
  readonly part: object;
  readonly field: string;
  readonly declared?: DeclaredType;
} & ({ readonly url: string } | { readonly base64: string });

async function imageBytes(f: FoundImage, media: MediaConfig): Promise<Buffer> {
  if ('base64' in f) return base64Bytes(f.base64, f.field, media.maxImageBytes);
  return readImageUrl(f.url, f.field, media);
}

export interface ImageParts {
  readonly images: readonly ImageInput[];
  /** The image of a part object found earlier. */
  indexOf(part: object): number | undefined;
}

export const NO_IMAGES: ImageParts = { images: [], indexOf: () => undefined };

export async function loadImageParts(found: readonly FoundImage[], media: MediaConfig): Promise<ImageParts> {
  if (found.length === 0) return NO_IMAGES;
  if (found.length > media.maxImages)
    throw invalid(found[media.maxImages]!.field, `at most ${media.maxImages} images per request`);
  const images = await Promise.all(
    found.map(async (f) => decodeImage(await imageBytes(f, media), f.field, media, f.declared)),
  );
  let pixels = 0;
  for (const img of images) {
    pixels += img.width * img.height;
    if (pixels > media.maxRequestPixels)
      throw invalid(
        img.field,
        `the request's images hold more than ${media.maxRequestPixels} pixels together`,
      );
  }
  const index = new Map(found.map((f, i) => [f.part, i]));
  return { images, indexOf: (part) => index.get(part) };
}

/** A content list's parts as the engine's, given each part's text or image (undefined: neither). */
export function contentParts(
  parts: readonly object[],
  images: ImageParts,
  textOf: (part: object, j: number) => string,
): ContentPart[] {
  return parts.map((p, j) => {
    const image = images.indexOf(p);
    return image !== undefined ? { type: 'image', image } : { type: 'text', text: textOf(p, j) };
  });
}

/** The text parts joined: what a prompt holding images says without them (its `content` / `text`). */
export function partsText(parts: readonly ContentPart[]): string {
  return parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
}
