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

/** The media type the first bytes of base64 image data show (undefined: none of the four). */
function sniffedType(base64: string): string | undefined {
  const head = Buffer.from(base64.replace(/\s+/g, '').slice(0, 16), 'base64');
  const ascii = (from: number, to: number) => head.subarray(from, to).toString('latin1');
  if (head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return 'image/png';
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
  if (ascii(0, 4) === 'GIF8') return 'image/gif';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  return undefined;
}

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

/** One image block (`at`: its path) as the image the shared path reads, checked field by field. */
function imageOf(block: Block, at: string): FoundImage {
  onlyFields(block, ['source', 'transformations'], at);
  checkTransformations(block.transformations, `${at}.transformations`);
  const source = block.source as Block | undefined;
  const src = `${at}.source`;
  if (source === undefined) throw invalid(src, 'is required');
  if (source === null || typeof source !== 'object' || Array.isArray(source))
    throw invalid(src, 'must be an object');
  switch (source.type) {
    case 'base64': {
      onlyFields(source, ['media_type', 'data'], src);
      const mediaType = stringField(source, 'media_type', src);
      if (!MEDIA_TYPES.includes(mediaType))
        throw invalid(`${src}.media_type`, `must be one of ${MEDIA_TYPES.join(', ')}; got '${mediaType}'`);
      const data = stringField(source, 'data', src);
      if (data === '') throw invalid(`${src}.data`, 'must be base64-encoded image data');
      // Anthropic's API refuses data of another type than the one it is said to be.
      const sniffed = sniffedType(data);
      if (sniffed !== undefined && sniffed !== mediaType)
        throw invalid(`${src}.media_type`, `is '${mediaType}', but the data holds an ${sniffed} image`);
      return { part: block, base64: data, field: `${src}.data` };
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

function isBlock(b: unknown): b is Block {
  return b !== null && typeof b === 'object' && !Array.isArray(b);
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
