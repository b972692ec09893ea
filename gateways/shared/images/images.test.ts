import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { HttpError } from '../http-error.js';
import { decodeImage } from './decode-image.js';
import { readImageUrl } from './image-source.js';
import { loadImageParts } from './image-parts.js';
import { findMarkdownImages } from './markdown-images.js';
import { DEFAULT_MEDIA, mediaFromFlags, type MediaConfig } from './media-config.js';

const F = 'messages[0].content[1].image_url';

/** A 3x2 image whose pixel (x, y) is (40x + 1, 80y + 2, 7), in `format`. */
async function drawn(format: 'png' | 'jpeg' | 'webp' | 'gif', alpha = false): Promise<Buffer> {
  const w = 3,
    h = 2,
    c = alpha ? 4 : 3;
  const px = Buffer.alloc(w * h * c);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      const o = (y * w + x) * c;
      px[o] = 40 * x + 1;
      px[o + 1] = 80 * y + 2;
      px[o + 2] = 7;
      if (alpha) px[o + 3] = x === 0 ? 0 : 255;
    }
  const img = sharp(px, { raw: { width: w, height: h, channels: c } });
  return format === 'png'
    ? img.png().toBuffer()
    : format === 'webp'
      ? img.webp({ lossless: true }).toBuffer()
      : format === 'gif'
        ? img.gif().toBuffer()
        : img.jpeg({ quality: 100 }).toBuffer();
}

const dataUrl = (bytes: Buffer, type = 'image/png') => `data:${type};base64,${bytes.toString('base64')}`;

async function refusal(p: Promise<unknown>, pattern: RegExp, field = F): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof HttpError, String(e));
    assert.equal(e.kind, 'validation');
    assert.equal(e.field, field);
    assert.match(e.message, pattern);
    return true;
  });
}

test('decodes PNG and lossless WebP to the exact RGB pixels; JPEG within its rounding', async () => {
  for (const format of ['png', 'webp'] as const) {
    const img = await decodeImage(await drawn(format), F, DEFAULT_MEDIA);
    assert.equal(img.width, 3);
    assert.equal(img.height, 2);
    assert.equal(img.field, F);
    assert.deepEqual([...img.rgb.subarray(0, 6)], [1, 2, 7, 41, 2, 7], format);
    assert.deepEqual([...img.rgb.subarray(15, 18)], [81, 82, 7], format);
  }
  const jpeg = await decodeImage(await drawn('jpeg'), F, DEFAULT_MEDIA);
  assert.equal(jpeg.rgb.length, 18);
});

test('alpha is flattened onto white (transformers convert_to_rgb); GIF gives its first frame', async () => {
  const img = await decodeImage(await drawn('png', true), F, DEFAULT_MEDIA);
  assert.deepEqual([...img.rgb.subarray(0, 3)], [255, 255, 255]);
  assert.deepEqual([...img.rgb.subarray(3, 6)], [41, 2, 7]);
  const frames = await sharp({ create: { width: 4, height: 8, channels: 3, background: '#ff0000' } })
    .png()
    .toBuffer();
  const gif = await sharp([frames, await sharp(frames).negate().toBuffer()], { join: { animated: true } })
    .gif()
    .toBuffer();
  const first = await decodeImage(gif, F, DEFAULT_MEDIA);
  assert.deepEqual([first.width, first.height], [4, 8]);
  assert.ok(
    first.rgb[0]! > 200 && first.rgb[1]! < 50,
    `first frame red, got ${first.rgb.subarray(0, 3).join(',')}`,
  );
});

test('bounds: pixels from the header before decoding, unsupported formats and broken bytes refused naming the part', async () => {
  const big = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#000' } })
    .png()
    .toBuffer();
  await refusal(
    decodeImage(big, F, { ...DEFAULT_MEDIA, maxImagePixels: 1000 }),
    /64x64 pixels; at most 1000/,
  );
  const tiff = await sharp({ create: { width: 2, height: 2, channels: 3, background: '#000' } })
    .tiff()
    .toBuffer();
  await refusal(decodeImage(tiff, F, DEFAULT_MEDIA), /format 'tiff' is not one of/);
  await refusal(decodeImage(big.subarray(0, 40), F, DEFAULT_MEDIA), /not a decodable image/);
  await refusal(decodeImage(Buffer.from('hello, not an image'), F, DEFAULT_MEDIA), /not a decodable image/);
});

test('data: URLs: base64 of one of four image types, within the byte limit', async () => {
  const png = await drawn('png');
  assert.deepEqual(await readImageUrl(dataUrl(png), F, DEFAULT_MEDIA), png);
  await refusal(readImageUrl(dataUrl(png, 'text/plain'), F, DEFAULT_MEDIA), /type must be one of/);
  await refusal(readImageUrl('data:image/png,rawtext', F, DEFAULT_MEDIA), /must be base64/);
  await refusal(readImageUrl('data:image/png;base64,abc', F, DEFAULT_MEDIA), /not valid base64/);
  await refusal(readImageUrl('data:image/png;base64,ab!d', F, DEFAULT_MEDIA), /not valid base64/);
  await refusal(readImageUrl('data:image/png;base64', F, DEFAULT_MEDIA), /needs a ','/);
  await refusal(readImageUrl('data:image/png;base64,', F, DEFAULT_MEDIA), /empty/);
  await refusal(
    readImageUrl(dataUrl(png), F, { ...DEFAULT_MEDIA, maxImageBytes: 10 }),
    /larger than 10 bytes/,
  );
  await refusal(
    readImageUrl('ftp://x/y.png', F, DEFAULT_MEDIA),
    /must be a data:, file:\/\/ or http\(s\) URL/,
  );
});

let dir: string;
let server: Server;
let base: string;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'prism-media-'));
  writeFileSync(join(dir, 'a.png'), await drawn('png'));
  symlinkSync('/etc/hostname', join(dir, 'escape.png'));
  const png = await drawn('png');
  server = createServer((req, res) => {
    if (req.url === '/a.png') res.end(png);
    else if (req.url === '/big') res.end(Buffer.alloc(5000));
    else if (req.url === '/slow') setTimeout(() => res.end(png), 2000);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

test('file:// URLs only under --allowed-local-media-path (links resolved first)', async () => {
  const url = pathToFileURL(join(dir, 'a.png')).href;
  await refusal(readImageUrl(url, F, DEFAULT_MEDIA), /without --allowed-local-media-path/);
  const media = mediaFromFlags({ 'allowed-local-media-path': dir });
  assert.equal((await readImageUrl(url, F, media)).length, (await drawn('png')).length);
  await refusal(readImageUrl(pathToFileURL(join(dir, 'escape.png')).href, F, media), /outside/);
  await refusal(readImageUrl('file:///etc/hostname', F, media), /outside/);
  await refusal(readImageUrl(pathToFileURL(join(dir, 'none.png')).href, F, media), /no readable local file/);
  assert.throws(
    () => mediaFromFlags({ 'allowed-local-media-path': join(dir, 'nope') }),
    /--allowed-local-media-path/,
  );
});

test('http(s) URLs only with --image-fetch, within the byte and time limits', async () => {
  await refusal(readImageUrl(`${base}/a.png`, F, DEFAULT_MEDIA), /only with --image-fetch/);
  const media: MediaConfig = {
    ...DEFAULT_MEDIA,
    fetchRemote: true,
    fetchTimeoutMs: 500,
    maxImageBytes: 1000,
  };
  assert.deepEqual(await readImageUrl(`${base}/a.png`, F, media), await drawn('png'));
  await refusal(readImageUrl(`${base}/big`, F, media), /larger than 1000 bytes/);
  await refusal(readImageUrl(`${base}/slow`, F, media), /longer than 500 ms/);
  await refusal(readImageUrl(`${base}/missing`, F, media), /HTTP 404/);
});

test("a family's bare base64 field: the same bytes as its data: URL, refused naming the field", async () => {
  const png = await drawn('png');
  const b64 = png.toString('base64');
  const parts = await loadImageParts([{ part: {}, base64: b64, field: 'src.data' }], DEFAULT_MEDIA);
  const viaUrl = await loadImageParts([{ part: {}, url: dataUrl(png), field: 'src.data' }], DEFAULT_MEDIA);
  assert.deepEqual(parts.images, viaUrl.images);
  await refusal(
    loadImageParts([{ part: {}, base64: 'ab!d', field: 'src.data' }], DEFAULT_MEDIA),
    /^src\.data: is not valid base64$/,
    'src.data',
  );
  await refusal(
    loadImageParts([{ part: {}, base64: b64, field: 'src.data' }], { ...DEFAULT_MEDIA, maxImageBytes: 10 }),
    /larger than 10 bytes/,
    'src.data',
  );
});

test('per request: at most maxImages images and maxRequestPixels pixels together', async () => {
  const url = dataUrl(await drawn('png'));
  const found = [0, 1, 2].map((i) => ({ part: {}, url, field: `p${i}` }));
  const parts = await loadImageParts(found, DEFAULT_MEDIA);
  assert.equal(parts.images.length, 3);
  assert.equal(parts.indexOf(found[2]!.part), 2);
  await refusal(loadImageParts(found, { ...DEFAULT_MEDIA, maxImages: 2 }), /at most 2 images/, 'p2');
  await refusal(
    loadImageParts(found, { ...DEFAULT_MEDIA, maxRequestPixels: 13 }),
    /more than 13 pixels/,
    'p2',
  );
});

test("TGI's ![](url): images at their places, other text (alt text included) kept", () => {
  const m = findMarkdownImages('a ![](u1) b ![x](u2) ![](u3)', 'inputs');
  assert.deepEqual(
    m.found.map((f) => ['url' in f ? f.url : f.base64, f.field]),
    [
      ['u1', 'inputs.images[0]'],
      ['u3', 'inputs.images[1]'],
    ],
  );
  const parts = m.parts({ images: [], indexOf: (p) => m.found.findIndex((f) => f.part === p) });
  assert.deepEqual(parts, [
    { type: 'text', text: 'a ' },
    { type: 'image', image: 0 },
    { type: 'text', text: ' b ![x](u2) ' },
    { type: 'image', image: 1 },
  ]);
  assert.equal(findMarkdownImages('no images', 'inputs').found.length, 0);
});
