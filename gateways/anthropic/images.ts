/**
 * Anthropic's image blocks, `{"type":"image","source":{...}}`, found in a request's messages for
 * shared/images/ to decode: a `base64` source (`media_type` one of image/jpeg, image/png,
 * image/gif, image/webp, and `data`, which must hold an image of that type) or a `url` source,
 * read by the shared image path as OpenAI's `image_url` is (http(s) only with --image-fetch,
 * file:// only under --allowed-local-media-path, data: URLs). The Files API's `file` source is
 * refused: this server keeps no files. Images belong to user messages, in their own blocks and
 * in the content of their tool_result blocks. Every refusal is a 400 naming the field.
 */
import { invalid, notSupported } from '../shared/http-error.js';
import type { FoundImage } from '../shared/images/image-parts.js';
import { onlyFields, stringField, type Block } from './blocks.js';

const MEDIA_TYPES: readonly string[] = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

/**
 * `transformations.oversized_image`: 'downsize' (Anthropic's default) is what the model's
 * processor does to every image larger than its own size; 'error' would need that size here.
 */
function checkTransformations(value: unknown, at: string): void {
  if (value === undefined || value === null) return;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid(at, 'must be an object');
  for (const [key, v] of Object.entries(value)) {
    if (key !== 'oversized_image') throw invalid(`${at}.${key}`, 'is not a known field');
    if (v === 'error')
      throw notSupported(
        `${at}.oversized_image`,
        "'error' (the model's image processor scales every image to its own size)",
      );
    if (v !== 'downsize') throw invalid(`${at}.oversized_image`, "must be 'downsize' or 'error'");
  }
}

function isBlock(b: unknown): b is Block {
  return b !== null && typeof b === 'object' && !Array.isArray(b);
}

/** One image block (`at`: its path) as the image the shared path reads, checked field by field. */
function imageOf(block: Block, at: string): FoundImage {
  onlyFields(block, ['source', 'transformations'], at);
  checkTransformations(block.transformations, `${at}.transformations`);
  const source: unknown = block.source;
  const src = `${at}.source`;
  if (source === undefined) throw invalid(src, 'is required');
  if (!isBlock(source)) throw invalid(src, 'must be an object');
  switch (source.type) {
    case 'base64': {
      onlyFields(source, ['media_type', 'data'], src);
      const mediaType = stringField(source, 'media_type', src);
      if (!MEDIA_TYPES.includes(mediaType))
        throw invalid(`${src}.media_type`, `must be one of ${MEDIA_TYPES.join(', ')}; got '${mediaType}'`);
      const data = stringField(source, 'data', src);
      if (data === '') throw invalid(`${src}.data`, 'must be base64-encoded image data');
      // Anthropic's API refuses data of another type than the one it is said to be: the
      // decoder checks what it finds against `media_type`.
      return {
        part: block,
        base64: data,
        field: `${src}.data`,
        declared: { mediaType, field: `${src}.media_type` },
      };
    }
    case 'url':
      onlyFields(source, ['url'], src);
      return { part: block, url: stringField(source, 'url', src), field: `${src}.url` };
    case 'file':
      throw notSupported(`${src}.type`, "image source 'file' (the Files API)");
    default:
      throw invalid(
        `${src}.type`,
        `unknown image source type ${JSON.stringify(source.type)} (one of 'base64', 'url')`,
      );
  }
}

/** An image block outside a user message: refused where it stands. */
export function imageMisplaced(at: string): never {
  throw invalid(
    `${at}.type`,
    'image blocks belong to user messages (their content, or the content of a tool_result)',
  );
}

/**
 * The request's image blocks in the order the engine's messages place them (request.ts): for
 * each message, the images of its tool_result blocks first (those become tool messages ahead
 * of the turn), then its own.
 */
export function findMessageImages(
  messages: readonly { role: string; content: string | readonly Block[] }[],
): FoundImage[] {
  const found: FoundImage[] = [];
  messages.forEach((m, i) => {
    if (typeof m.content === 'string') return;
    const at = `messages[${i}].content`;
    const own: FoundImage[] = [];
    m.content.forEach((block, j) => {
      const b = `${at}[${j}]`;
      if (block.type === 'image') {
        if (m.role !== 'user') imageMisplaced(b);
        own.push(imageOf(block, b));
      } else if (block.type === 'tool_result' && m.role === 'user') {
        if (!Array.isArray(block.content)) return;
        (block.content as unknown[]).forEach((inner, k) => {
          if (isBlock(inner) && inner.type === 'image') found.push(imageOf(inner, `${b}.content[${k}]`));
        });
      }
    });
    found.push(...own);
  });
  return found;
}
