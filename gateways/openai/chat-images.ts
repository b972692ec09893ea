/**
 * OpenAI chat's image parts, `{"type":"image_url","image_url":{"url":...,"detail":...}}` (vLLM
 * also takes `image_url` as the URL string itself), found in a request's messages for
 * shared/images/ to fetch and decode.
 */
import type { FoundImage } from '../shared/images/image-parts.js';
import { invalid, notSupported } from '../shared/http-error.js';

/** The schema of one content part: text or image_url (any other type is refused by name in toMessages). */
export const contentPartSchema = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { type: 'string' },
    text: { type: 'string' },
    // Its shape is checked where it is read (imageUrlOf), so an error names the part itself.
    image_url: {},
  },
};

export interface ContentPartBody {
  type: string;
  text?: string;
  image_url?: unknown;
}

/**
 * `detail` asks OpenAI's models for a resolution; a model here sees an image at its processor's
 * own, so only 'auto' (the default) is taken (chat's and Responses' image parts).
 */
export function checkImageDetail(detail: string | undefined | null, field: string): void {
  if (detail != null && detail !== 'auto')
    throw notSupported(
      field,
      `detail '${detail}' (images are taken at the model's own resolution; send 'auto')`,
    );
}

function imageUrlOf(part: ContentPartBody, field: string): string {
  const v = part.image_url;
  if (v === undefined) throw invalid(field, "is required in an 'image_url' part");
  if (typeof v === 'string') return v;
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw invalid(field, 'must be an object {url, detail?} or a URL string');
  const { url, detail } = v as { url?: unknown; detail?: unknown };
  if (typeof url !== 'string') throw invalid(`${field}.url`, 'must be a string');
  if (detail !== undefined && typeof detail !== 'string')
    throw invalid(`${field}.detail`, 'must be a string');
  checkImageDetail(detail, `${field}.detail`);
  return url;
}

export function findChatImages(messages: readonly { content?: unknown }[]): FoundImage[] {
  const found: FoundImage[] = [];
  messages.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    (m.content as ContentPartBody[]).forEach((part, j) => {
      if (part.type !== 'image_url') return;
      const field = `messages[${i}].content[${j}].image_url`;
      found.push({ part, url: imageUrlOf(part, field), field });
    });
  });
  return found;
}
