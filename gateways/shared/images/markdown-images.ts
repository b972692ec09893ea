/**
 * TGI's inline images: in a text prompt, `![](URL)` is an image at that place (TGI's router
 * splits `inputs` on the same pattern: empty alt text, the URL up to the first ')'). The rest of
 * the text stays as it is, markdown images with alt text included.
 */
import type { ContentPart } from '../../../engine/api.js';
import type { FoundImage, ImageParts } from './image-parts.js';

const INLINE_IMAGE = /!\[\]\(([^)]*)\)/g;

export interface MarkdownPrompt {
  /** The images, in order (none: the text is the prompt as it is). */
  readonly found: readonly FoundImage[];
  /** The prompt's parts in order, given the loaded images. */
  parts(images: ImageParts): ContentPart[];
}

export function findMarkdownImages(text: string, field: string): MarkdownPrompt {
  const pieces: (string | object)[] = [];
  const found: FoundImage[] = [];
  let at = 0;
  for (const m of text.matchAll(INLINE_IMAGE)) {
    if (m.index > at) pieces.push(text.slice(at, m.index));
    const part = {};
    pieces.push(part);
    found.push({ part, url: m[1]!, field: `${field}.images[${found.length}]` });
    at = m.index + m[0].length;
  }
  if (at < text.length) pieces.push(text.slice(at));
  return {
    found,
    parts: (images) =>
      pieces.map((p) =>
        typeof p === 'string' ? { type: 'text', text: p } : { type: 'image', image: images.indexOf(p)! },
      ),
  };
}
