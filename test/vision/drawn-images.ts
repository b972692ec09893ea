/**
 * Images the vision tests draw pixel by pixel: their raw RGB, and the numerics tests' set of
 * them encoded as PNG or JPEG and decoded as the gateways decode them
 * (gateways/shared/images/decode-image.ts), so a test and its Python reference start from the
 * same pixels.
 */
import sharp from 'sharp';
import { decodeImage } from '../../gateways/shared/images/decode-image.js';
import { DEFAULT_MEDIA } from '../../gateways/shared/images/media-config.js';

export interface DrawnImage {
  readonly label: string;
  readonly width: number;
  readonly height: number;
  /** The [r, g, b] bytes at (x, y). */
  readonly pixel: (x: number, y: number) => readonly number[];
}

export interface DecodedImage {
  readonly label: string;
  readonly width: number;
  readonly height: number;
  readonly rgb: Uint8Array;
}

/** A deterministic value noise (hashed lattice, smoothly interpolated): photograph-like texture. */
export function smoothNoise(x: number, y: number, cell: number, seed: number): number {
  const h = (i: number, j: number): number => {
    let v = (i * 374761393 + j * 668265263 + seed * 982451653) | 0;
    v = Math.imul(v ^ (v >>> 13), 1274126177);
    return ((v ^ (v >>> 16)) >>> 0) / 4294967295;
  };
  const fx = x / cell,
    fy = y / cell;
  const i = Math.floor(fx),
    j = Math.floor(fy);
  const s = (t: number): number => t * t * (3 - 2 * t);
  const u = s(fx - i),
    v = s(fy - j);
  return (h(i, j) * (1 - u) + h(i + 1, j) * u) * (1 - v) + (h(i, j + 1) * (1 - u) + h(i + 1, j + 1) * u) * v;
}

/** 300 x 100: red across, green down, blue a ramp that wraps along x + 2y. */
export const GRADIENT: DrawnImage = {
  label: 'gradient 300x100',
  width: 300,
  height: 100,
  pixel: (x, y) => [Math.floor((x * 255) / 299), Math.floor((y * 255) / 99), (x + 2 * y) % 256],
};

/** 90 x 200: a red disc of radius 30 centred at (45, discY), a blue block below blockTop
 * (x in 21..69), the rest off-white. */
export function shapes90x200(discY: number, blockTop: number): DrawnImage {
  return {
    label: 'shapes 90x200',
    width: 90,
    height: 200,
    pixel: (x, y) => {
      if ((x - 45) ** 2 + (y - discY) ** 2 < 900) return [220, 30, 40];
      if (y > blockTop && x > 20 && x < 70) return [20, 40, 200];
      return [240, 240, 230];
    },
  };
}

/** 23 x 31: smaller than any tile or crop. */
const SMALL: DrawnImage = {
  label: 'small 23x31',
  width: 23,
  height: 31,
  pixel: (x, y) => [(x * 11) % 256, (y * 7) % 256, ((x ^ y) * 5) % 256],
};

/** 128 x 128: noise in red and blue, a ramp in green. */
const SQUARE: DrawnImage = {
  label: 'square 128x128',
  width: 128,
  height: 128,
  pixel: (x, y) => [
    Math.round(255 * smoothNoise(x, y, 16, 11)),
    (x * 2) % 256,
    Math.round(255 * smoothNoise(x, y, 5, 12)),
  ],
};

/** The drawn image's width × height × 3 bytes, row-major. */
export function drawnRgb(drawn: DrawnImage): Uint8Array {
  const rgb = new Uint8Array(drawn.width * drawn.height * 3);
  for (let y = 0; y < drawn.height; y++)
    for (let x = 0; x < drawn.width; x++) rgb.set(drawn.pixel(x, y), (y * drawn.width + x) * 3);
  return rgb;
}

/**
 * The numerics tests' images, in this order: GRADIENT as a PNG, the test's own `shapes` as a
 * PNG and photograph-like `noise` as a JPEG, a small PNG and a square JPEG (quality 90), each
 * decoded as the gateways decode a client's image; labelled with their format, e.g.
 * 'gradient 300x100 PNG'.
 */
export async function numericsImages(shapes: DrawnImage, noise: DrawnImage): Promise<DecodedImage[]> {
  const drawings = [
    [GRADIENT, 'png'],
    [shapes, 'png'],
    [noise, 'jpeg'],
    [SMALL, 'png'],
    [SQUARE, 'jpeg'],
  ] as const;
  const images: DecodedImage[] = [];
  for (const [d, format] of drawings) {
    const label = `${d.label} ${format.toUpperCase()}`;
    const img = sharp(Buffer.from(drawnRgb(d)), { raw: { width: d.width, height: d.height, channels: 3 } });
    const encoded = await (format === 'png' ? img.png() : img.jpeg({ quality: 90 })).toBuffer();
    const decoded = await decodeImage(encoded, label, DEFAULT_MEDIA);
    images.push({ label, width: decoded.width, height: decoded.height, rgb: decoded.rgb });
  }
  return images;
}
