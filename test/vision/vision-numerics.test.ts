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
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as native from '../../native/native.js';
import { fixture } from '../fixtures.js';
import { numericsImages, smoothNoise, type DecodedImage, type DrawnImage } from './drawn-images.js';
import { featuresReference, onePassError, pixelDiff, pixelsToRows, relError } from './features-reference.js';
import type { FeaturesReference } from './features-reference.js';

const SHAPES: DrawnImage = {
  label: 'shapes 97x211',
  width: 97,
  height: 211,
  pixel: (x, y) => {
    const inCircle = (x - 48) ** 2 + (y - 60) ** 2 < 35 ** 2;
    const inRect = x > 10 && x < 80 && y > 120 && y < 190;
    const stripe = Math.floor(y / 7) % 2 === 0;
    return inCircle ? [230, 40, 30] : inRect ? [20, 60, stripe ? 240 : 120] : [250, 250, stripe ? 235 : 250];
  },
};

const NOISE: DrawnImage = {
  label: 'noise 640x480',
  width: 640,
  height: 480,
  pixel: (x, y) =>
    [0, 1, 2].map((c) => {
      const v =
        0.6 * smoothNoise(x, y, 40, c) +
        0.3 * smoothNoise(x, y, 9, c + 7) +
        0.1 * smoothNoise(x, y, 2, c + 3);
      return Math.round(v * 255);
    }),
};

/** vision_reference.py's reference.json entry for an image. */
interface SmolVlmMeta {
  readonly tiles: number;
  readonly rows: number;
  readonly cols: number;
  readonly featureRows: number;
}

let dir: string;
let work: string;
let vision: native.VisionModelHandle;
let images: DecodedImage[];
let refs: FeaturesReference<SmolVlmMeta>[];

before(async () => {
  dir = fixture('smolvlm-tiny').path;
  work = mkdtempSync(join(tmpdir(), 'prism-vision-'));
  images = await numericsImages(SHAPES, NOISE);
  refs = featuresReference<SmolVlmMeta>('vision_reference.py', dir, images, work);
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
    const { maxDiff, differing } = pixelDiff(got.tiles, ref.pixels);
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
    const rel = relError(got, ref.features);
    worst = Math.max(worst, rel);
    process.stderr.write(
      `  ${im.label}: ${ref.tiles} tiles, features relative error ${rel.toExponential(3)}\n`,
    );
    assert.ok(rel <= 1e-4, `${im.label}: relative error ${rel}`);
  }
  // All images' tiles in one pass give the same rows as one image at a time.
  const rel = await onePassError(
    vision,
    refs,
    refs.reduce((n, r) => n + r.tiles, 0),
  );
  process.stderr.write(
    `  all images in one pass: relative error ${rel.toExponential(3)} (worst single ${worst.toExponential(3)})\n`,
  );
  assert.ok(rel <= 1e-4);
});

test('preprocessImage then encodeImage: the pipeline from pixels to rows against transformers', async () => {
  for (const [i, im] of images.entries()) {
    const { rel, exact } = await pixelsToRows(vision, im, refs[i]!);
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
