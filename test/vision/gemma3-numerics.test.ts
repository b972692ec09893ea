/**
 * The image side of gemma3-vision-tiny (scripts/gemma3_vision_fixtures.py) against
 * transformers in float (test/vision/gemma3_reference.py features), on the numerics tests'
 * drawn images decoded as the gateways decode them:
 *
 * - preprocessImage: one 112 x 112 image equal to Gemma3ImageProcessor's pixel_values
 *   (bilinear resize to the square, mean / std 0.5) within one uint8 level;
 * - encodeImage on the reference's own pixel_values: relative error ≤ 1e-4 against
 *   get_image_features (SigLIP, post LayerNorm, 2 x 2 average pooling to 16 rows, Gemma's
 *   RMSNorm with 1 + w, the input projection), one image a pass and all in one pass;
 * - the mmproj GGUF (llama.cpp's names; the norm stored as 1 + w, the input projection in F16
 *   as the converter forces it) gives the same rows to the F16 rounding;
 * - what the loaders do not implement (pan-and-scan, the pooled head, a pooling that does not
 *   divide the grid, a prompt length other than the rows) is refused naming its field.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { projectRoot } from '../../engine/default-model.js';
import * as native from '../../native/native.js';
import { fixture, pythonCommand } from '../fixtures.js';
import { numericsImages, smoothNoise, type DecodedImage, type DrawnImage } from './drawn-images.js';
import { editedFolder } from './edited-folder.js';
import { featuresReference, onePassError, pixelDiff, pixelsToRows, relError } from './features-reference.js';
import type { FeaturesReference } from './features-reference.js';

const FEATURES_BOUND = 1e-4;
/** The mmproj's F16 input projection (llama.cpp's converter forces it): 2.5e-4 measured. */
const MMPROJ_BOUND = 2e-3;

const SHAPES: DrawnImage = {
  label: 'shapes 150x90',
  width: 150,
  height: 90,
  pixel: (x, y) =>
    (x - 70) ** 2 + (y - 40) ** 2 < 30 ** 2 ? [240, 200, 20] : x % 16 < 8 ? [10, 30, 200] : [240, 240, 240],
};

const NOISE: DrawnImage = {
  label: 'noise 320x240',
  width: 320,
  height: 240,
  pixel: (x, y) => [0, 1, 2].map((c) => Math.round(255 * smoothNoise(x, y, 20, c + 3))),
};

const folder = (): string => fixture('gemma3-vision-tiny').path;
let work: string;
let vision: native.VisionModelHandle;
let images: DecodedImage[];
let refs: FeaturesReference<{ readonly featureRows: number }>[];

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'prism-gemma3v-'));
  images = await numericsImages(SHAPES, NOISE);
  refs = featuresReference('gemma3_reference.py', folder(), images, work);
  vision = await native.loadVisionModel(folder(), { threads: 2 });
});

after(() => {
  if (vision) native.disposeVisionModel(vision);
  rmSync(work, { recursive: true, force: true });
});

test('visionInfo: the Gemma 3 family, one 112-pixel image of 16 rows, the three image tokens', () => {
  const info = native.visionInfo(vision);
  assert.equal(info.family, 'gemma3');
  assert.equal(info.architecture, 'gemma3');
  assert.deepEqual(
    [
      info.tileSize,
      info.patchSize,
      info.tokensPerTile,
      info.textHiddenSize,
      info.maxTiles,
      info.visionHiddenSize,
    ],
    [112, 14, 16, 64, 1, 64],
  );
  assert.equal(info.processor.resample, 'bilinear');
  assert.equal(info.processor.imageSeqLen, 16);
  assert.deepEqual(
    [info.tokens.startOfImage, info.tokens.image, info.tokens.endOfImage],
    [
      { text: '<start_of_image>', id: 49152 },
      { text: '<image_soft_token>', id: 49154 },
      { text: '<end_of_image>', id: 49153 },
    ],
  );
  assert.ok(refs.every((r) => r.featureRows === 16));
});

test("preprocessImage equals transformers' Gemma3ImageProcessor (PIL backend) within one uint8 level", async () => {
  let exact = 0;
  for (const [i, im] of images.entries()) {
    const ref = refs[i]!;
    const got = await native.preprocessImage(vision, im.rgb, im.width, im.height);
    assert.deepEqual([got.tileCount, got.rows, got.cols], [1, 0, 0], im.label);
    assert.equal(got.tiles.length, ref.pixels.length, im.label);
    const { maxDiff, differing } = pixelDiff(got.tiles, ref.pixels);
    process.stderr.write(
      `  ${im.label}: pixel_values max |diff| ${maxDiff} (${differing} of ${ref.pixels.length} differ)\n`,
    );
    assert.ok(maxDiff <= 1 / (255 * 0.5) + 1e-6, `${im.label}: pixel_values max |diff| ${maxDiff}`);
    exact += maxDiff <= 1e-6 ? 1 : 0;
  }
  process.stderr.write(`  ${exact} of ${images.length} images equal to the byte\n`);
  assert.ok(exact >= images.length - 1, `only ${exact} of ${images.length} images are exact`);
});

test(`encodeImage: image features within ${FEATURES_BOUND} relative error of transformers' get_image_features`, async () => {
  let worst = 0;
  for (const [i, im] of images.entries()) {
    const rel = relError(await native.encodeImage(vision, refs[i]!.pixels, 1), refs[i]!.features);
    worst = Math.max(worst, rel);
    process.stderr.write(`  ${im.label}: features relative error ${rel.toExponential(3)}\n`);
    assert.ok(rel <= FEATURES_BOUND, `${im.label}: relative error ${rel}`);
  }
  const rel = await onePassError(vision, refs, refs.length);
  process.stderr.write(
    `  all images in one pass: relative error ${rel.toExponential(3)} (worst single ${worst.toExponential(3)})\n`,
  );
  assert.ok(rel <= FEATURES_BOUND);
  // Images differ: rows of one are not another's (the test can tell a wrong row from a right one).
  assert.ok(relError(await native.encodeImage(vision, refs[0]!.pixels, 1), refs[1]!.features) > 0.1);
});

test('preprocessImage then encodeImage: from decoded pixels to rows against transformers', async () => {
  for (const [i, im] of images.entries()) {
    const { rel, exact } = await pixelsToRows(vision, im, refs[i]!);
    process.stderr.write(`  ${im.label}: pixels to rows relative error ${rel.toExponential(3)}\n`);
    assert.ok(rel <= (exact ? FEATURES_BOUND : 2e-2), `${im.label}: relative error ${rel}`);
  }
});

test("the mmproj GGUF (llama.cpp's names, the norm as 1 + w, an F16 projection) gives the folder's rows", async () => {
  const mm = await native.loadVisionModel(fixture('mmproj-gemma3-vision-tiny-f32').path, {
    threads: 2,
    textModel: fixture('gemma3-vision-tiny-f32').path,
  });
  try {
    const info = native.visionInfo(mm);
    assert.equal(info.family, 'gemma3');
    assert.deepEqual([info.tokensPerTile, info.textHiddenSize], [16, 64]);
    assert.deepEqual(
      [info.tokens.startOfImage.id, info.tokens.image.id, info.tokens.endOfImage.id],
      [49152, 49154, 49153],
    );
    for (const [i, im] of images.entries()) {
      const pre = await native.preprocessImage(mm, im.rgb, im.width, im.height);
      const folderPre = await native.preprocessImage(vision, im.rgb, im.width, im.height);
      assert.deepEqual(pre.tiles, folderPre.tiles, `${im.label}: the mmproj's preprocessing is the folder's`);
      const rel = relError(await native.encodeImage(mm, refs[i]!.pixels, 1), refs[i]!.features);
      process.stderr.write(`  ${im.label}: mmproj features relative error ${rel.toExponential(3)}\n`);
      assert.ok(rel <= MMPROJ_BOUND, `${im.label}: relative error ${rel}`);
    }
  } finally {
    native.disposeVisionModel(mm);
  }
});

const vc = (j: Record<string, unknown>): Record<string, unknown> =>
  j['vision_config'] as Record<string, unknown>;
for (const [what, file, edit, rule] of [
  [
    'pan-and-scan',
    'preprocessor_config.json',
    (j) => (j['do_pan_and_scan'] = true),
    /'do_pan_and_scan': true is unsupported/,
  ],
  [
    'another resize',
    'preprocessor_config.json',
    (j) => (j['size'] = { height: 96, width: 112 }),
    /'size' 96x112 differs/,
  ],
  ['the pooled head', 'config.json', (j) => (vc(j)['vision_use_head'] = true), /vision_use_head/],
  [
    'a pooling that does not divide the grid',
    'config.json',
    (j) => (j['mm_tokens_per_image'] = 9),
    /mm_tokens_per_image 9/,
  ],
  [
    'a token count that is not a square',
    'config.json',
    (j) => (j['mm_tokens_per_image'] = 15),
    /mm_tokens_per_image 15/,
  ],
  [
    'another image_seq_length',
    'processor_config.json',
    (j) => (j['image_seq_length'] = 17),
    /image_seq_length 17 differs/,
  ],
  [
    'another boi id than the tokenizer',
    'config.json',
    (j) => (j['boi_token_index'] = 7),
    /<start_of_image> id 49152 differs/,
  ],
  [
    'another vision model',
    'config.json',
    (j) => (vc(j)['model_type'] = 'clip_vision_model'),
    /vision_config.model_type/,
  ],
] as const satisfies readonly (readonly [string, string, (j: Record<string, unknown>) => void, RegExp])[]) {
  test(`a folder with ${what} is refused naming the field`, async () => {
    await assert.rejects(native.loadVisionModel(editedFolder(folder(), work, file, edit)), rule);
  });
}

test('an mmproj with a pooling that does not divide the grid, or of another projector type, is refused naming it', async () => {
  const edit = (key: string, value: string): string => {
    const path = join(work, `edited-${key}.gguf`);
    execFileSync(pythonCommand(), [
      join(projectRoot(), 'test', 'vision', 'gguf_edit.py'),
      fixture('mmproj-gemma3-vision-tiny-f32').path,
      path,
      key,
      value,
    ]);
    return path;
  };
  await assert.rejects(
    native.loadVisionModel(edit('clip.vision.projector.scale_factor', '3')),
    /clip.vision.projector.scale_factor 3 does not divide the 8 patches per side/,
  );
  await assert.rejects(
    native.loadVisionModel(edit('clip.projector_type', '"gemma3n"')),
    /clip.projector_type 'gemma3n' is not a projector Prism reads \(idefics3, mlp, gemma3 are\)/,
  );
});

test("the folder's text model: a gemma3_text decoder under language_model, its vision family gemma3", async () => {
  const model = await native.loadModel(folder());
  try {
    const info = native.modelInfo(model);
    assert.equal(info.architecture, 'gemma3');
    assert.equal(info.vision, 'gemma3');
    assert.equal(info.hiddenSize, 64);
  } finally {
    native.disposeModel(model);
  }
});
