/**
 * Which images the playground attaches: what a model's `/v1/models` card says it takes, and
 * the files refused before anything is read (the types and byte limit the server itself holds
 * to, gateways/shared/images/media-config.ts). No DOM here, so Node tests it directly.
 */

/** The `data:` URL types the server decodes. */
export const IMAGE_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];

/** The server's default `--max-image-bytes`, for a card that names no `max_image_bytes`. */
export const DEFAULT_MAX_IMAGE_BYTES = 20 * 1024 * 1024;

/** Images the server takes in one request, the conversation's earlier ones included. */
export const MAX_IMAGES = 16;

/** A `GET /v1/models` entry as the playground reads it. */
export interface ModelCard {
  id: string;
  parent?: string | null;
  input_modalities?: string[];
  max_image_bytes?: number;
}

/** The largest image the model's server takes, in bytes; null when the model takes no images. */
export function imageLimit(card: ModelCard | undefined): number | null {
  if (!card?.input_modalities?.includes('image')) return null;
  const max = card.max_image_bytes;
  return typeof max === 'number' && max > 0 ? max : DEFAULT_MAX_IMAGE_BYTES;
}

/** 20 MiB, 512 KiB, 900 bytes. */
export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${+(n / (1024 * 1024)).toFixed(1)} MiB`;
  if (n >= 1024) return `${+(n / 1024).toFixed(1)} KiB`;
  return `${n} bytes`;
}

/** Why this file cannot be attached (the message names it), or null when it can. */
export function imageRefusal(
  file: { name: string; type: string; size: number },
  maxBytes: number,
): string | null {
  if (!IMAGE_TYPES.includes(file.type))
    return `${file.name}: not a PNG, JPEG, WebP or GIF image (${file.type || 'unknown type'})`;
  if (file.size > maxBytes)
    return `${file.name}: ${formatBytes(file.size)} is over the server's limit of ${formatBytes(maxBytes)} per image`;
  return null;
}
