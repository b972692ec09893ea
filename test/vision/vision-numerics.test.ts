/**
 * The vision side of smolvlm-tiny (scripts/vision_fixtures.py) against transformers in float
 * (test/vision/vision_reference.py features), on images this test draws — a gradient, shapes,
 * smooth noise like a photograph's, a small and a square one — encoded as PNG or JPEG and
 * decoded as the gateways decode them (gateways/shared/images/decode-image.ts), so both sides
 * start from the same pixels. Their aspect ratios split them into different tile grids.
 *
 * - preprocessImage: the tile grid equals the processor's, and the tiles its pixel_values:
 *   all but at most one image to the byte (max |diff| <= 1e-6), none off by more than one
 *   uint8 level (1/127.5) — where Pillow 13's pass order differs (vision/pil_resample.h);
 * - encodeImage on the reference's own pixel_values: relative error (‖prism − ref‖ / ‖ref‖
 *   over each image's rows) at most 1e-4;
 * - preprocessImage then encodeImage from the decoded pixels: within 1e-4 of transformers'
 *   features where the tiles are exact (2e-2 where a tile is off by a level);
 * - bad inputs are refused naming the field.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { projectRoot } from '../../engine/default-model.js';
import { decodeImage } from '../../gateways/shared/images/decode-image.js';
import { DEFAULT_MEDIA } from '../../gateways/shared/images/media-config.js';
import * as native from '../../native/native.js';
import { fixture, pythonCommand } from '../fixtures.js';

interface Drawn {
  readonly label: string;
  readonly width: number;
  readonly height: number;
  readonly format: 'png' | 'jpeg';
  readonly pixel: (x: number, y: number) => [number, number, number];
}

/** A deterministic value noise (hashed lattice, smoothly interpolated): photograph-like texture. */
function smoothNoise(x: number, y: number, cell: number, seed: number): number {
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

const DRAWN: readonly Drawn[] = [
  {
    label: 'gradient 300x100 PNG',
    width: 300,
    height: 100,
    format: 'png',
    pixel: (x, y) => [Math.floor((x * 255) / 299), Math.floor((y * 255) / 99), (x + 2 * y) % 256],
  },
  {
    label: 'shapes 97x211 PNG',
    width: 97,
    height: 211,
    format: 'png',
    pixel: (x, y) => {
      const inCircle = (x - 48) ** 2 + (y - 60) ** 2 < 35 ** 2;
      const inRect = x > 10 && x < 80 && y > 120 && y < 190;
      const stripe = Math.floor(y / 7) % 2 === 0;
      return inCircle
        ? [230, 40, 30]
        : inRect
          ? [20, 60, stripe ? 240 : 120]
          : [250, 250, stripe ? 235 : 250];
    },
  },
  {
    label: 'noise 640x480 JPEG',
    width: 640,
    height: 480,
    format: 'jpeg',
    pixel: (x, y) =>
      [0, 1, 2].map((c) => {
        const v =
          0.6 * smoothNoise(x, y, 40, c) +
          0.3 * smoothNoise(x, y, 9, c + 7) +
          0.1 * smoothNoise(x, y, 2, c + 3);
        return Math.round(v * 255);
      }) as [number, number, number],
  },
  {
    label: 'small 23x31 PNG',
    width: 23,
    height: 31,
    format: 'png',
    pixel: (x, y) => [(x * 11) % 256, (y * 7) % 256, ((x ^ y) * 5) % 256],
  },
  {
    label: 'square 128x128 JPEG',
    width: 128,
    height: 128,
    format: 'jpeg',
    pixel: (x, y) => [
      Math.round(255 * smoothNoise(x, y, 16, 11)),
      (x * 2) % 256,
      Math.round(255 * smoothNoise(x, y, 5, 12)),
    ],
  },
];

interface ReferenceImage {
  readonly tiles: number;
  readonly rows: number;
  readonly cols: number;
  readonly featureRows: number;
  readonly pixels: Float32Array;
  readonly features: Float32Array;
}

let dir: string;
let work: string;
let vision: native.VisionModelHandle;
let images: { label: string; width: number; height: number; rgb: Uint8Array }[];
let refs: ReferenceImage[];

const floats = (path: string): Float32Array => {
  const b = readFileSync(path);
  return new Float32Array(b.buffer, b.byteOffset, b.length / 4);
};

before(async () => {
  dir = fixture('smolvlm-tiny').path;
  work = mkdtempSync(join(tmpdir(), 'prism-vision-'));
  images = [];
  for (const d of DRAWN) {
    const raw = Buffer.alloc(d.width * d.height * 3);
    for (let y = 0; y < d.height; y++)
      for (let x = 0; x < d.width; x++) raw.set(d.pixel(x, y), (y * d.width + x) * 3);
    const img = sharp(raw, { raw: { width: d.width, height: d.height, channels: 3 } });
    const encoded = await (d.format === 'png' ? img.png() : img.jpeg({ quality: 90 })).toBuffer();
    const decoded = await decodeImage(encoded, d.label, DEFAULT_MEDIA);
    images.push({ label: d.label, width: decoded.width, height: decoded.height, rgb: decoded.rgb });
  }
  const request = {
    images: images.map((im, i) => {
      const path = join(work, `${i}.rgb`);
      writeFileSync(path, im.rgb);
      return { rgb: path, width: im.width, height: im.height };
    }),
  };
  writeFileSync(join(work, 'request.json'), JSON.stringify(request));
  execFileSync(
    pythonCommand(),
    [
      join(projectRoot(), 'test', 'vision', 'vision_reference.py'),
      'features',
      dir,
      join(work, 'request.json'),
      work,
    ],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, HF_HUB_OFFLINE: '1', TQDM_DISABLE: '1' },
    },
  );
  const meta = JSON.parse(readFileSync(join(work, 'reference.json'), 'utf8')) as {
    images: Omit<ReferenceImage, 'pixels' | 'features'>[];
  };
  refs = meta.images.map((m, i) => ({
    ...m,
    pixels: floats(join(work, `${i}.pixels.f32`)),
    features: floats(join(work, `${i}.features.f32`)),
  }));
  vision = await native.loadVisionModel(dir, { threads: 2 });
});

after(() => {
  if (vision) native.disposeVisionModel(vision);
  rmSync(work, { recursive: true, force: true });
});

test('visionInfo: the tiles, tokens and processor parameters of the fixture', () => {
  const info = native.visionInfo(vision);
  assert.equal(info.architecture, 'idefics3');
  assert.deepEqual(
    [info.tileSize, info.patchSize, info.tokensPerTile, info.scaleFactor, info.textHiddenSize, info.maxTiles],
    [64, 8, 16, 2, 128, 17],
  );
  assert.equal(info.processor.longestEdge, 256);
  assert.equal(info.processor.resample, 'lanczos');
  assert.equal(info.processor.imageSeqLen, 16);
  assert.deepEqual(
    [info.tokens.image.id, info.tokens.fakeAroundImage.id, info.tokens.globalImage.id],
    [49190, 49189, 49152],
  );
  assert.equal(info.tokens.rowCol[0]!.text, '<row_1_col_1>');
  assert.equal(info.tokens.rowCol[0]!.id, 49153);
  assert.equal(info.tokens.rowCol[35]!.id, 49188);
});

test("preprocessImage equals transformers' Idefics3ImageProcessor (PIL backend) tile for tile", async () => {
  const grids = new Set<string>();
  let exact = 0;
  for (const [i, im] of images.entries()) {
    const ref = refs[i]!;
    const got = await native.preprocessImage(vision, im.rgb, im.width, im.height);
    assert.deepEqual([got.tileCount, got.rows, got.cols], [ref.tiles, ref.rows, ref.cols], im.label);
    assert.equal(got.tiles.length, ref.pixels.length, im.label);
    let maxDiff = 0,
      differing = 0;
    for (let k = 0; k < ref.pixels.length; k++) {
      const d = Math.abs(got.tiles[k]! - ref.pixels[k]!);
      if (d > 0) differing++;
      maxDiff = Math.max(maxDiff, d);
    }
    process.stderr.write(
      `  ${im.label}: ${got.rows}x${got.cols} + global = ${got.tileCount} tiles, pixel_values max |diff| ${maxDiff} (${differing} of ${ref.pixels.length} differ)\n`,
    );
    // One uint8 level is 1/127.5 after normalising: the few cases where Pillow 13 orders its
    // passes otherwise than pil_resample.cc (see there) differ by that at edges.
    assert.ok(maxDiff <= 1 / 127.5 + 1e-6, `${im.label}: pixel_values max |diff| ${maxDiff}`);
    exact += maxDiff <= 1e-6 ? 1 : 0;
    grids.add(`${got.rows}x${got.cols}`);
  }
  process.stderr.write(`  ${exact} of ${images.length} images equal to the byte\n`);
  assert.ok(exact >= images.length - 1, `only ${exact} of ${images.length} images are exact`);
  assert.ok(
    grids.size >= 4,
    `the drawn images should split into several grids, got ${[...grids].join(', ')}`,
  );
});

test("encodeImage: image features within 1e-4 relative error of transformers' get_image_features", async () => {
  const info = native.visionInfo(vision);
  let worst = 0;
  for (const [i, im] of images.entries()) {
    const ref = refs[i]!;
    const got = await native.encodeImage(vision, ref.pixels, ref.tiles);
    assert.equal(got.length, ref.tiles * info.tokensPerTile * info.textHiddenSize, im.label);
    assert.equal(ref.featureRows, ref.tiles * info.tokensPerTile, im.label);
    let num = 0,
      den = 0;
    for (let k = 0; k < got.length; k++) {
      num += (got[k]! - ref.features[k]!) ** 2;
      den += ref.features[k]! ** 2;
    }
    const rel = Math.sqrt(num / den);
    worst = Math.max(worst, rel);
    process.stderr.write(
      `  ${im.label}: ${ref.tiles} tiles, features relative error ${rel.toExponential(3)}\n`,
    );
    assert.ok(rel <= 1e-4, `${im.label}: relative error ${rel}`);
  }
  // All images' tiles in one pass give the same rows as one image at a time.
  const all = new Float32Array(refs.reduce((n, r) => n + r.pixels.length, 0));
  let at = 0;
  for (const r of refs) {
    all.set(r.pixels, at);
    at += r.pixels.length;
  }
  const batched = await native.encodeImage(
    vision,
    all,
    refs.reduce((n, r) => n + r.tiles, 0),
  );
  let num = 0,
    den = 0,
    off = 0;
  for (const r of refs) {
    for (let k = 0; k < r.features.length; k++) {
      num += (batched[off + k]! - r.features[k]!) ** 2;
      den += r.features[k]! ** 2;
    }
    off += r.features.length;
  }
  process.stderr.write(
    `  all images in one pass: relative error ${Math.sqrt(num / den).toExponential(3)} (worst single ${worst.toExponential(3)})\n`,
  );
  assert.ok(Math.sqrt(num / den) <= 1e-4);
});

test('preprocessImage then encodeImage: the pipeline from pixels to rows against transformers', async () => {
  for (const [i, im] of images.entries()) {
    const ref = refs[i]!;
    const pre = await native.preprocessImage(vision, im.rgb, im.width, im.height);
    const got = await native.encodeImage(vision, pre.tiles, pre.tileCount);
    let num = 0,
      den = 0;
    for (let k = 0; k < got.length; k++) {
      num += (got[k]! - ref.features[k]!) ** 2;
      den += ref.features[k]! ** 2;
    }
    const rel = Math.sqrt(num / den);
    const exact = pre.tiles.every((v, k) => Math.abs(v - ref.pixels[k]!) <= 1e-6);
    process.stderr.write(
      `  ${im.label}: pixels to rows relative error ${rel.toExponential(3)}${exact ? '' : ' (tiles off by a level)'}\n`,
    );
    assert.ok(rel <= (exact ? 1e-4 : 2e-2), `${im.label}: relative error ${rel}`);
  }
});

test('bad inputs are refused naming the field and the rule', async () => {
  const rgb = new Uint8Array(10 * 10 * 3);
  await assert.rejects(
    native.preprocessImage(vision, rgb, 10, 11),
    /image: rgb holds 300 bytes, not width x height x 3 = 330/,
  );
  await assert.rejects(native.preprocessImage(vision, rgb, 0, 10), /width/);
  // An extreme aspect ratio is no error: 20000x1 -> 256x1 -> 256x64, one row of 4 tiles + global.
  const thin = await native.preprocessImage(vision, new Uint8Array(3 * 20000), 20000, 1);
  assert.deepEqual([thin.tileCount, thin.rows, thin.cols], [5, 1, 4]);
  await assert.rejects(
    native.preprocessImage(vision, new Float32Array(300) as unknown as Uint8Array, 10, 10),
    /rgb must be a Uint8Array/,
  );
  await assert.rejects(
    native.encodeImage(vision, new Float32Array(5), 1),
    /tiles holds 5 values, not n x 3 x 64 x 64 = 12288/,
  );
  await assert.rejects(native.encodeImage(vision, new Float32Array(12288), 0), /n/);
  const nan = new Float32Array(12288);
  nan[7] = NaN;
  await assert.rejects(native.encodeImage(vision, nan, 1), /tiles\[7\] is not a finite number/);
  await assert.rejects(
    native.loadVisionModel(fixture('qwen3-f32').path),
    /model_type 'qwen3' is not a vision-language model/,
  );
  assert.equal(native.isVisionModel(dir), true);
  assert.equal(native.isVisionModel(fixture('qwen3-f32').path), false);
});
