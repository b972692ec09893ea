/**
 * Encoded image bytes → the engine's `ImageInput` (8-bit RGB), with sharp (libvips): PNG, JPEG,
 * WebP and GIF (its first frame). As transformers' `load_image` and `convert_to_rgb` do, the
 * EXIF orientation is applied, alpha is flattened onto white and grey becomes RGB. The size is
 * checked from the header before a pixel is decoded (and sharp's `limitInputPixels` holds it
 * again), so a decompression bomb costs a header read. Anything the decoder refuses is a 400
 * naming the part.
 */
import sharp, { type Metadata } from 'sharp';
import type { ImageInput } from '../../../engine/api.js';
import { invalid } from '../http-error.js';
import type { MediaConfig } from './media-config.js';

const FORMATS: ReadonlySet<string> = new Set(['png', 'jpeg', 'webp', 'gif']);

/** The decoder's words, on one short line (its messages can span lines). */
function reason(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  return text.split('\n')[0]!.slice(0, 160);
}

/** A media type the client stated for an image (`image/png`, ...) and the field it stated it in. */
export interface DeclaredType {
  readonly mediaType: string;
  readonly field: string;
}

/**
 * `declared`: the type the bytes must hold (Anthropic's `media_type`); another format than it
 * is a 400 naming the field that declared it.
 */
export async function decodeImage(
  bytes: Buffer,
  field: string,
  media: MediaConfig,
  declared?: DeclaredType,
): Promise<ImageInput> {
  const options = { limitInputPixels: media.maxImagePixels, failOn: 'error', pages: 1 } as const;
  let meta: Metadata;
  try {
    // The header alone (no pixel limit here, so an oversized image is told its size below).
    meta = await sharp(bytes, { ...options, limitInputPixels: false }).metadata();
  } catch (e) {
    throw invalid(field, `is not a decodable image (${reason(e)})`);
  }
  if (!FORMATS.has(meta.format))
    throw invalid(field, `image format '${meta.format}' is not one of png, jpeg, webp, gif`);
  if (declared !== undefined && declared.mediaType !== `image/${meta.format}`)
    throw invalid(
      declared.field,
      `is '${declared.mediaType}', but the data holds an image/${meta.format} image`,
    );
  const { width, height } = meta;
  if (!(width > 0 && height > 0)) throw invalid(field, 'the image has no size');
  const pageHeight = meta.pageHeight ?? height;
  if (width * pageHeight > media.maxImagePixels)
    throw invalid(
      field,
      `the image is ${width}x${pageHeight} pixels; at most ${media.maxImagePixels} are taken`,
    );
  try {
    const { data, info } = await sharp(bytes, options)
      .rotate()
      .flatten({ background: '#ffffff' })
      .toColourspace('srgb')
      .removeAlpha()
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 3 || data.length !== info.width * info.height * 3)
      throw new Error(`decoded to ${info.channels} channels`);
    return {
      width: info.width,
      height: info.height,
      rgb: new Uint8Array(data.buffer, data.byteOffset, data.length),
      field,
    };
  } catch (e) {
    throw invalid(field, `is not a decodable image (${reason(e)})`);
  }
}
