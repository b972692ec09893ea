/**
 * Ollama's `images`: base64 strings (no data: URL, no type) on a chat message or beside
 * `/api/generate`'s prompt. Each is decoded by the shared image path (bounds on bytes and
 * pixels, refusals naming `messages[i].images[j]` or `images[j]`) and placed before its
 * message's text, where Ollama's own prompt builder puts a message's images. A model that
 * takes no images refuses them in the engine, naming the image, as on every other API.
 */
import type { ChatMessage, ContentPart, ImageInput } from '../../engine/api.js';
import { invalid } from '../shared/http-error.js';
import { loadImageParts, type FoundImage } from '../shared/images/image-parts.js';
import type { MediaConfig } from '../shared/images/media-config.js';

/** One message's (or the generate prompt's) images as sent, where they were sent, and its text. */
export interface SentImages {
  readonly images: readonly string[];
  /** `messages[i].images` or `images`. */
  readonly field: string;
  /** The message's text, placed after its images. */
  readonly text: string;
}

/**
 * The decoded images of every list in order, and each list's content parts: its images, then
 * its text when not empty. Lists without images get no parts.
 */
export async function decodeOllamaImages(
  lists: readonly SentImages[],
  media: MediaConfig,
): Promise<{ images: readonly ImageInput[]; parts: (ContentPart[] | undefined)[] }> {
  const found: FoundImage[] = [];
  const keys = lists.map((l) =>
    l.images.map((b64, j) => {
      const field = `${l.field}[${j}]`;
      // The schema made each a string; an empty one is no image.
      if (b64 === '') throw invalid(field, 'must be a base64-encoded image');
      // Bare base64 with no declared type: the decoder reads the format from the bytes.
      const key = { field };
      found.push({ part: key, base64: b64, field });
      return key;
    }),
  );
  const loaded = await loadImageParts(found, media);
  const parts = keys.map((list, k): ContentPart[] | undefined => {
    if (list.length === 0) return undefined;
    const text = lists[k]!.text;
    return [
      ...list.map((key): ContentPart => ({ type: 'image', image: loaded.indexOf(key)! })),
      ...(text !== '' ? [{ type: 'text' as const, text }] : []),
    ];
  });
  return { images: loaded.images, parts };
}

/** The chat messages with their images' parts; only a user message may carry images. */
export async function withChatImages(
  messages: readonly ChatMessage[],
  sent: readonly (readonly string[] | null | undefined)[],
  media: MediaConfig,
): Promise<{ messages: ChatMessage[]; images: readonly ImageInput[] }> {
  sent.forEach((list, i) => {
    if (list && list.length > 0 && messages[i]?.role !== 'user')
      throw invalid(`messages[${i}].images`, 'images are taken in user messages only');
  });
  const lists = messages.map((m, i) => ({
    images: sent[i] ?? [],
    field: `messages[${i}].images`,
    text: m.content,
  }));
  const { images, parts } = await decodeOllamaImages(lists, media);
  return { messages: messages.map((m, i) => (parts[i] ? { ...m, parts: parts[i] } : m)), images };
}
