/**
 * The image side of llava-next-tiny (scripts/llava_next_fixtures.py: LLaVA-1.6, anyres
 * pinpoints of 1x2, 2x1, 2x2, 1x3 and 3x1 tiles of 32 pixels) against transformers in float
 * (test/vision/llava_reference.py features), on drawn images of many aspects — landscape,
 * portrait, smaller than a tile, photograph-like, square, very wide, very tall — encoded as PNG
 * or JPEG and decoded as the gateways decode them, so both sides start from the same pixels.
 *
 * - preprocessImage: the base tile and the grid's tiles equal LlavaNextImageProcessor's
 *   pixel_values (best pinpoint, aspect-keeping bicubic resize, zero padding centred, split,
 *   then CLIPImageProcessor's steps per tile), all images but one to the byte (that one a few
 *   uint8 levels off where Pillow 13's resize pass order is not matched, pil_resample.h);
 * - encodeImage then packImageFeatures on the reference's own pixel_values: relative error ≤ 1e-4
 *   against get_image_features' packed rows (unpadded grid, image_newline per row), and the
 *   row count equal to the <image> tokens LlavaNextProcessor writes for that image;
 * - every config value the loader does not implement is refused naming it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { decodeImage } from '../../gateways/shared/images/decode-image.js';
import { DEFAULT_MEDIA } from '../../gateways/shared/images/media-config.js';
import * as native from '../../native/native.js';
import { fixture } from '../fixtures.js';
import { drawnRgb, numericsImages, smoothNoise, type DecodedImage, type DrawnImage } from './drawn-images.js';
import { editedFolder } from './edited-folder.js';
import { featuresReference, pixelDiff, relError, type FeaturesReference } from './features-reference.js';

const SHAPES: DrawnImage = {
  label: 'shapes 97x211',
  width: 97,
  height: 211,
  pixel: (x, y) =>
    (x - 48) ** 2 + (y - 100) ** 2 < 35 ** 2
      ? [230, 40, 30]
      : Math.floor(y / 7) % 2 === 0
        ? [20, 60, 240]
        : [250, 250, 235],
};

const NOISE: DrawnImage = {
  label: 'noise 640x480',
  width: 640,
  height: 480,
  pixel: (x, y) =>
    [0, 1, 2].map((c) =>
      Math.round(255 * (0.7 * smoothNoise(x, y, 40, c) + 0.3 * smoothNoise(x, y, 6, c + 5))),
    ),
};

/** Aspects past every pinpoint's, so most of the grid is padding that unpad_image cuts. */
const EXTRA: readonly DrawnImage[] = [
  {
    label: 'wide 250x41',
    width: 250,
    height: 41,
    pixel: (x, y) => [(x * 3) % 256, (y * 9) % 256, Math.round(255 * smoothNoise(x, y, 9, 3))],
  },
  {
    label: 'tall 37x150',
    width: 37,
    height: 150,
    pixel: (x, y) => [Math.round(255 * smoothNoise(x, y, 7, 4)), (x * 7) % 256, (y * 2) % 256],
  },
];

/** llava_reference.py's reference.json entry for an image. */
interface Meta {
  readonly featureRows: number;
  readonly imageTokens: number;
  readonly tiles: number;
}

const folder = (): string => fixture('llava-next-tiny').path;
let work: string;
let vision: native.VisionModelHandle;
let images: DecodedImage[];
let refs: FeaturesReference<Meta>[];

async function decoded(d: DrawnImage): Promise<DecodedImage> {
  const png = await sharp(Buffer.from(drawnRgb(d)), {
    raw: { width: d.width, height: d.height, channels: 3 },
  })
    .png()
    .toBuffer();
  const img = await decodeImage(png, d.label, DEFAULT_MEDIA);
  return { label: `${d.label} PNG`, width: img.width, height: img.height, rgb: img.rgb };
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'prism-llava-next-'));
  images = [...(await numericsImages(SHAPES, NOISE)), ...(await Promise.all(EXTRA.map(decoded)))];
  refs = featuresReference<Meta>('llava_reference.py', folder(), images, work);
  vision = await native.loadVisionModel(folder(), { threads: 2 });
});

after(() => {
  if (vision) native.disposeVisionModel(vision);
  rmSync(work, { recursive: true, force: true });
});

test('visionInfo: the LLaVA-1.6 family, 32-pixel tiles of 16 rows, the pinpoints, the <image> id', () => {
  const info = native.visionInfo(vision);
  assert.equal(info.family, 'llava_next');
  assert.equal(info.architecture, 'llava_next');
  assert.deepEqual(
    [
      info.tileSize,
      info.patchSize,
      info.tokensPerTile,
      info.textHiddenSize,
      info.maxTiles,
      info.visionHiddenSize,
    ],
    [32, 8, 16, 128, 5, 48],
  );
  assert.deepEqual(info.processor.gridPinpoints, [
    [32, 64],
    [64, 32],
    [64, 64],
    [32, 96],
    [96, 32],
  ]);
  assert.equal(info.processor.resample, 'bicubic');
  assert.equal(info.tokens.image.id, 49152);
});

test("preprocessImage equals transformers' LlavaNextImageProcessor (PIL backend) within rounding", async () => {
  let exact = 0;
  for (const [i, im] of images.entries()) {
    const ref = refs[i]!;
    const got = await native.preprocessImage(vision, im.rgb, im.width, im.height);
    assert.equal(got.tileCount, ref.tiles, `${im.label}: tiles`);
    assert.equal(got.tileCount, 1 + got.rows * got.cols, im.label);
    assert.equal(got.tiles.length, ref.pixels.length, im.label);
    const { maxDiff, differing } = pixelDiff(got.tiles, ref.pixels);
    process.stderr.write(
      `  ${im.label}: ${got.rows}x${got.cols} grid + base, pixel_values max |diff| ${maxDiff} ` +
        `(${differing} of ${ref.pixels.length} differ)\n`,
    );
    // One uint8 level after normalising is 1 / (255 · std), at most 1 / (255 · 0.2613). When
    // both axes shrink, Pillow 13's pass order is matched only about 3 times in 4
    // (vision/pil_resample.h): a wrong order is off by a few levels at strong edges (the
    // striped 97x211 image's 32x70 resize into its pinpoint: 6 levels).
    assert.ok(maxDiff <= 8 / (255 * 0.2613) + 1e-6, `${im.label}: pixel_values max |diff| ${maxDiff}`);
    exact += maxDiff <= 1e-6 ? 1 : 0;
  }
  process.stderr.write(`  ${exact} of ${images.length} images equal to the byte\n`);
  assert.ok(exact >= images.length - 1, `only ${exact} of ${images.length} images are exact`);
  // The images choose different grids (wide, tall, square and 1 x 3 ones among them).
  assert.ok(new Set(refs.map((r) => r.tiles)).size >= 3);
});

test("encodeImage + packImageFeatures: within 1e-4 of transformers' packed image features, as many rows as <image> tokens", async () => {
  let worst = 0;
  for (const [i, im] of images.entries()) {
    const ref = refs[i]!;
    const rows = await native.encodeImage(vision, ref.pixels, ref.tiles);
    const packed = await native.packImageFeatures(vision, rows, im.width, im.height);
    const count = packed.length / 128;
    assert.equal(ref.imageTokens, ref.featureRows, `${im.label}: the processor's count is the model's`);
    assert.equal(count, ref.featureRows, `${im.label}: packed rows`);
    const rel = relError(packed, ref.features);
    worst = Math.max(worst, rel);
    process.stderr.write(
      `  ${im.label}: ${count} rows (${ref.tiles} tiles of 16), features relative error ${rel.toExponential(3)}\n`,
    );
    assert.ok(rel <= 1e-4, `${im.label}: relative error ${rel}`);
  }
  process.stderr.write(`  worst relative error ${worst.toExponential(3)}\n`);
  // Unpadding cut rows somewhere: an image with fewer rows than its grid's patches alone.
  assert.ok(refs.some((r) => r.featureRows < 16 + (r.tiles - 1) * 16));
});

test('preprocessImage, encodeImage, packImageFeatures from decoded pixels: rows against transformers', async () => {
  for (const [i, im] of images.entries()) {
    const pre = await native.preprocessImage(vision, im.rgb, im.width, im.height);
    const rows = await native.encodeImage(vision, pre.tiles, pre.tileCount);
    const packed = await native.packImageFeatures(vision, rows, im.width, im.height);
    const exact = pre.tiles.every((v, k) => Math.abs(v - refs[i]!.pixels[k]!) <= 1e-6);
    const rel = relError(packed, refs[i]!.features);
    process.stderr.write(`  ${im.label}: pixels to rows relative error ${rel.toExponential(3)}\n`);
    assert.ok(rel <= (exact ? 1e-4 : 2e-2), `${im.label}: relative error ${rel}`);
  }
});

test("packImageFeatures refuses rows unlike the image size's tiles, and a LLaVA-1.5 model", async () => {
  const im = images[0]!;
  const pre = await native.preprocessImage(vision, im.rgb, im.width, im.height);
  const rows = await native.encodeImage(vision, pre.tiles, pre.tileCount);
  await assert.rejects(
    native.packImageFeatures(vision, rows.subarray(128), im.width, im.height),
    /rows holds/,
  );
  const v15 = await native.loadVisionModel(fixture('llava-tiny').path, { threads: 1 });
  try {
    await assert.rejects(native.packImageFeatures(v15, rows, im.width, im.height), /LLaVA-1.6 packs them/);
  } finally {
    native.disposeVisionModel(v15);
  }
});

const edited = (file: string, edit: (json: Record<string, unknown>) => void): string =>
  editedFolder(folder(), work, file, edit);

for (const [what, file, edit, rule] of [
  [
    "the 'full' select strategy",
    'config.json',
    (j) => (j['vision_feature_select_strategy'] = 'full'),
    /'vision_feature_select_strategy' 'full' is unsupported for llava_next/,
  ],
  [
    'another select strategy',
    'config.json',
    (j) => (j['vision_feature_select_strategy'] = 'cls'),
    /'vision_feature_select_strategy' 'cls'/,
  ],
  [
    'a list of feature layers',
    'config.json',
    (j) => (j['vision_feature_layer'] = [-2, -1]),
    /'vision_feature_layer' as a list/,
  ],
  [
    'pinpoints not a multiple of the tile',
    'config.json',
    (j) => (j['image_grid_pinpoints'] = [[32, 48]]),
    /'image_grid_pinpoints' must be a list of 1 to 64 \[height, width\] pairs .* multiple of the tile 32/,
  ],
  [
    'pinpoints that are not pairs',
    'config.json',
    (j) => (j['image_grid_pinpoints'] = [32, 64]),
    /'image_grid_pinpoints' must be a list/,
  ],
  [
    'empty pinpoints',
    'config.json',
    (j) => (j['image_grid_pinpoints'] = []),
    /'image_grid_pinpoints' must be a list/,
  ],
  [
    "the processor's pinpoints unlike the model's",
    'preprocessor_config.json',
    (j) => (j['image_grid_pinpoints'] = [[64, 64]]),
    /'image_grid_pinpoints' differs from config.json's/,
  ],
  [
    'a CLIP image processor',
    'preprocessor_config.json',
    (j) => (j['image_processor_type'] = 'CLIPImageProcessor'),
    /image_processor_type 'CLIPImageProcessor' is unsupported \(LlavaNextImageProcessor is\)/,
  ],
  [
    "a processor patch_size unlike the encoder's",
    'processor_config.json',
    (j) => (j['patch_size'] = 16),
    /patch_size 16/,
  ],
  [
    'a crop unlike the encoder',
    'preprocessor_config.json',
    (j) => (j['crop_size'] = { height: 16, width: 16 }),
    /'crop_size' 16x16/,
  ],
] as const satisfies readonly (readonly [
  string,
  string,
  (j: Record<string, unknown>) => unknown,
  RegExp,
])[]) {
  test(`a LLaVA-1.6 folder with ${what} is refused naming the field`, async () => {
    await assert.rejects(native.loadVisionModel(edited(file, edit)), rule);
  });
}

test("the folder's text model: a Llama or Mistral under language_model, the llava_next family; another text model is refused", async () => {
  const model = await native.loadModel(folder());
  try {
    const info = native.modelInfo(model);
    assert.equal(info.vision, 'llava_next');
    assert.equal(info.hiddenSize, 128);
  } finally {
    native.disposeModel(model);
  }
  // llava-v1.6-mistral's text_config: a Mistral, its window MistralConfig's 4096 when absent.
  const mistral = edited('config.json', (j) => {
    const t = j['text_config'] as Record<string, unknown>;
    t['model_type'] = 'mistral';
    delete t['sliding_window'];
  });
  const m = await native.loadModel(mistral);
  try {
    const info = native.modelInfo(m);
    assert.equal(info.vision, 'llava_next');
    assert.deepEqual(info.layerWindows, [4096, 4096]);
  } finally {
    native.disposeModel(m);
  }
  const dir = edited(
    'config.json',
    (j) => ((j['text_config'] as Record<string, unknown>)['model_type'] = 'qwen2'),
  );
  await assert.rejects(
    native.loadModel(dir),
    /LLaVA-1.6 text_config.model_type 'qwen2' is unsupported \(llama, mistral are\)/,
  );
});
