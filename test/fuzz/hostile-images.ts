/**
 * Hostile image parts for the image fuzz test (test/gateways-images.test.ts): truncated and
 * bit-flipped files of every accepted format, headers claiming huge sizes, decompression bombs
 * (a few kilobytes that would inflate to hundreds of megapixels), wrong or unsupported types,
 * bad base64, URLs the server must not follow, and malformed part shapes. Each is a value for
 * an OpenAI `image_url` field; every one must be refused with a 4xx naming the part.
 */
import { crc32, deflateSync } from 'node:zlib';
import sharp from 'sharp';

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
  return Buffer.concat([head, data, crc]);
}

/** A valid PNG header claiming width × height 8-bit RGB, with `rows` rows of zeros deflated (a bomb when the claim is huge). */
function pngClaiming(width: number, height: number, rows: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const raw = Buffer.alloc(Math.min(rows, height) * (1 + width * 3));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A GIF whose logical screen and only image claim 65535 × 65535 pixels. */
function gifClaimingHuge(): Buffer {
  const b = Buffer.from('GIF89a', 'latin1');
  const screen = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00]);
  const image = Buffer.from([
    0x2c, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
  ]);
  return Buffer.concat([b, screen, image]);
}

export interface HostileKit {
  readonly valid: Record<'png' | 'jpeg' | 'webp' | 'gif', Buffer>;
  readonly bombs: readonly Buffer[];
  readonly tiff: Buffer;
}

export async function hostileKit(): Promise<HostileKit> {
  const base = sharp({ create: { width: 48, height: 32, channels: 3, background: '#3a7' } });
  const [png, jpeg, webp, gif, tiff] = await Promise.all([
    base.clone().png().toBuffer(),
    base.clone().jpeg().toBuffer(),
    base.clone().webp().toBuffer(),
    base.clone().gif().toBuffer(),
    base.clone().tiff().toBuffer(),
  ]);
  return {
    valid: { png, jpeg, webp, gif },
    // 20000 × 20000 (400 Mpx) and 100000 × 100000 in a few kilobytes; 65535² as a GIF.
    bombs: [pngClaiming(20000, 20000, 64), pngClaiming(100000, 100000, 4), gifClaimingHuge()],
    tiff,
  };
}

const TYPES = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif' } as const;
const b64 = (b: Buffer) => b.toString('base64');

/** The `image_url` value of hostile case `i` (a string URL, an object, or a malformed shape). */
export function hostileImageUrl(kit: HostileKit, rand: () => number, i: number): unknown {
  const formats = Object.keys(TYPES) as (keyof typeof TYPES)[];
  const format = formats[Math.floor(rand() * formats.length)]!;
  const file = kit.valid[format];
  const url = (bytes: Buffer, type: string = TYPES[format]) => ({ url: `data:${type};base64,${b64(bytes)}` });
  switch (i % 10) {
    case 0: // truncated at a random length (the header or the data cut)
      return url(file.subarray(0, 1 + Math.floor(rand() * (file.length - 2))));
    case 1: {
      // bytes flipped across the file (headers included, so the decoder meets garbage)
      const bad = Buffer.from(file);
      for (let k = 0; k < 24; k++)
        bad[Math.floor(rand() * Math.min(bad.length, 64))] ^= 1 + Math.floor(rand() * 255);
      bad.fill(0xff, 0, 4);
      return url(bad);
    }
    case 2: // huge dimensions / decompression bombs
      return url(kit.bombs[Math.floor(rand() * kit.bombs.length)]!, 'image/png');
    case 3: // wrong MIME types
      return [
        url(file, 'text/plain'),
        url(file, 'application/pdf'),
        url(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"/>'), 'image/svg+xml'),
        url(kit.tiff, 'image/tiff'),
        url(kit.tiff, 'image/png'),
        url(file, ''),
      ][Math.floor(rand() * 6)];
    case 4: {
      // bad base64: stray characters, wrong length, url-safe alphabet, no base64 marker
      const text = b64(file);
      const cut = Math.floor(rand() * text.length);
      return [
        { url: `data:${TYPES[format]};base64,${text.slice(0, cut)}!${text.slice(cut)}` },
        {
          url: `data:${TYPES[format]};base64,${text.slice(0, text.length - 1 - (text.length % 4 === 0 ? 0 : 1))}`,
        },
        { url: `data:${TYPES[format]};base64,${text.replace(/\+/g, '-').replace(/\//g, '_')}-_` },
        { url: `data:${TYPES[format]},${text}` },
        { url: `data:${TYPES[format]};base64,` },
        { url: `data:${TYPES[format]};base64` },
      ][Math.floor(rand() * 6)];
    }
    case 5: // random bytes declared as an image
      return url(
        Buffer.from(Array.from({ length: 16 + Math.floor(rand() * 400) }, () => Math.floor(rand() * 256))),
      );
    case 6: // sources the server must not read
      return [
        { url: 'file:///etc/passwd' },
        { url: 'http://127.0.0.1:1/x.png' },
        { url: 'https://localhost/a.png' },
        { url: 'ftp://example.invalid/a.png' },
        { url: 'javascript:alert(1)' },
        { url: '/etc/hosts' },
      ][Math.floor(rand() * 6)];
    case 7: // malformed shapes
      return [42, null, {}, { url: 7 }, { url: ['x'] }, true][Math.floor(rand() * 6)];
    case 8: // a detail this server does not take, on a valid image
      return { ...url(file), detail: rand() < 0.5 ? 'high' : 'low' };
    default: {
      // a valid header followed by a truncated or zero-filled body of a claimed large size
      const claimed = pngClaiming(1000 + Math.floor(rand() * 3000), 1000 + Math.floor(rand() * 3000), 2);
      return url(claimed.subarray(0, claimed.length - Math.floor(rand() * 12)), 'image/png');
    }
  }
}
