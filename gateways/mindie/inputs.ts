/**
 * /infer's `inputs` as a list: `{"type":"text","text":...}` and `{"type":"image_url",
 * "image_url":...}` items. Text alone is the raw prompt, the items' texts joined, as before. A
 * list holding an image is one user chat message, its items in order as its parts (rendered by
 * the model's chat template with the generation prompt, the prompt OpenAI chat gives the same
 * parts): MindIE's multimodal input builders likewise make the texts a user turn. `image_url`
 * is a string, read by the shared image path (gateways/shared/images/): a data:, file:// or
 * http(s) URL, or an absolute local path as MindIE takes it, read as a file:// URL (so only
 * under --allowed-local-media-path). A model that takes no images refuses them in the engine,
 * naming `inputs[i].image_url`.
 */
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ImageInput, PromptInput } from '../../engine/api.js';
import { invalid } from '../shared/http-error.js';
import { contentParts, loadImageParts, partsText, type FoundImage } from '../shared/images/image-parts.js';
import type { MediaConfig } from '../shared/images/media-config.js';

export interface InputItem {
  type: 'text' | 'image_url';
  text?: string;
  image_url?: unknown;
}

/** The schema of one item (its fields checked in inputsPrompt, naming the item). */
export const inputItemSchema = {
  type: 'object',
  required: ['type'],
  properties: { type: { enum: ['text', 'image_url'] }, text: { type: 'string' }, image_url: {} },
};

function imageUrlOf(item: InputItem, field: string): string {
  const v = item.image_url;
  if (typeof v !== 'string' || v === '')
    throw invalid(field, 'must be a URL (data:, file://, http(s)) or an absolute local path');
  return isAbsolute(v) && !v.startsWith('//') ? pathToFileURL(v).href : v;
}

/** The list checked: a text prompt when it holds no image, else its images for imagesPrompt. */
export function checkInputs(items: readonly InputItem[]): PromptInput | { readonly found: FoundImage[] } {
  const found: FoundImage[] = [];
  items.forEach((item, i) => {
    // A field of the other kind of item would be dropped unread: refused instead.
    const other = item.type === 'text' ? 'image_url' : 'text';
    if (item[other] !== undefined)
      throw invalid(`inputs[${i}].${other}`, `is not a field of a '${item.type}' item`);
    if (item.type === 'text') {
      if (typeof item.text !== 'string') throw invalid(`inputs[${i}].text`, 'must be a string');
    } else {
      const field = `inputs[${i}].image_url`;
      found.push({ part: item, url: imageUrlOf(item, field), field });
    }
  });
  if (found.length > 0) return { found };
  const text = items.map((item) => item.text!).join('');
  if (text === '') throw invalid('inputs', 'must hold some text');
  return { kind: 'text', text };
}

/** A list holding images (checkInputs' `found`) as one user message and its decoded images. */
export async function imagesPrompt(
  items: readonly InputItem[],
  found: readonly FoundImage[],
  media: MediaConfig,
): Promise<{ prompt: PromptInput; images: readonly ImageInput[] }> {
  const images = await loadImageParts(found, media);
  const parts = contentParts(items, images, (p) => (p as InputItem).text!);
  return {
    prompt: { kind: 'chat', messages: [{ role: 'user', content: partsText(parts), parts }] },
    images: images.images,
  };
}
