/**
 * The image side of llava-tiny (scripts/llava_fixtures.py) against transformers in float
 * (test/vision/llava_reference.py features), on images this test draws — landscape, portrait,
 * smaller than the crop, a large photograph-like one and a square — encoded as PNG or JPEG and
 * decoded as the gateways decode them, so both sides start from the same pixels.
 *
 * - preprocessImage: one 64 x 64 crop equal to CLIPImageProcessor's pixel_values (bicubic
 *   shortest-edge resize, center crop): every image within one uint8 level (Pillow 13's pass
 *   order, vision/pil_resample.h), all but at most one to the byte;
 * - encodeImage on the reference's own pixel_values: relative error ≤ 1e-4 against
 *   get_image_features (CLIP cut at vision_feature_layer -2, the class row dropped, the MLP
 *   projector), one image a pass and all in one pass;
 * - the mmproj GGUF (F16 patch embedding and projector matrices, as llama.cpp's converter
 *   writes them; ggml's tanh GELU) gives the same rows within 1e-2;
 * - 'full' and another vision_feature_layer on the same weights match transformers too;
 * - every config value (and mmproj key) the loaders do not implement is refused naming it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/** llava_reference.py's reference.json entry for an image. */
interface LlavaMeta {
  readonly featureRows: number;
  readonly imageTokens: number;
}

const folder = (): string => fixture('llava-tiny').path;
let work: string;
let vision: native.VisionModelHandle;
let images: DecodedImage[];
let refs: FeaturesReference<LlavaMeta>[];

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'prism-llava-'));
  images = await numericsImages(SHAPES, NOISE);
  refs = featuresReference<LlavaMeta>('llava_reference.py', folder(), images, work);
  vision = await native.loadVisionModel(folder(), { threads: 2 });
});

after(() => {
  if (vision) native.disposeVisionModel(vision);
  rmSync(work, { recursive: true, force: true });
});

test('visionInfo: the LLaVA family, one 64-pixel crop of 64 image tokens, the <image> id', () => {
  const info = native.visionInfo(vision);
  assert.equal(info.family, 'llava');
  assert.equal(info.architecture, 'llava');
  assert.deepEqual(
    [
      info.tileSize,
      info.patchSize,
      info.tokensPerTile,
      info.textHiddenSize,
      info.maxTiles,
      info.visionHiddenSize,
    ],
    [64, 8, 64, 128, 1, 64],
  );
  assert.equal(info.processor.resample, 'bicubic');
  assert.equal(info.processor.imageSeqLen, 64);
  assert.equal(info.tokens.image.id, 49152);
  // LlavaProcessor writes as many <image> tokens as the model gives rows.
  for (const r of refs) assert.equal(r.imageTokens, r.featureRows);
  assert.ok(refs.every((r) => r.featureRows === 64));
});

test("preprocessImage equals transformers' CLIPImageProcessor (PIL backend) within rounding", async () => {
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
    // One uint8 level after normalising is 1 / (255 · std), at most 1 / (255 · 0.2613).
    assert.ok(maxDiff <= 1 / (255 * 0.2613) + 1e-6, `${im.label}: pixel_values max |diff| ${maxDiff}`);
    exact += maxDiff <= 1e-6 ? 1 : 0;
  }
  process.stderr.write(`  ${exact} of ${images.length} images equal to the byte\n`);
  assert.ok(exact >= images.length - 1, `only ${exact} of ${images.length} images are exact`);
});

test("encodeImage: image features within 1e-4 relative error of transformers' get_image_features", async () => {
  let worst = 0;
  for (const [i, im] of images.entries()) {
    const ref = refs[i]!;
    const rel = relError(await native.encodeImage(vision, ref.pixels, 1), ref.features);
    worst = Math.max(worst, rel);
    process.stderr.write(`  ${im.label}: features relative error ${rel.toExponential(3)}\n`);
    assert.ok(rel <= 1e-4, `${im.label}: relative error ${rel}`);
  }
  const rel = await onePassError(vision, refs, refs.length); // one tile an image
  process.stderr.write(
    `  all images in one pass: relative error ${rel.toExponential(3)} (worst single ${worst.toExponential(3)})\n`,
  );
  assert.ok(rel <= 1e-4);
});

test('preprocessImage then encodeImage: from decoded pixels to rows against transformers', async () => {
  for (const [i, im] of images.entries()) {
    const { rel, exact } = await pixelsToRows(vision, im, refs[i]!);
    process.stderr.write(`  ${im.label}: pixels to rows relative error ${rel.toExponential(3)}\n`);
    assert.ok(rel <= (exact ? 1e-4 : 2e-2), `${im.label}: relative error ${rel}`);
  }
});

test("the mmproj GGUF gives the folder's rows (its F16 matrices' rounding apart)", async () => {
  const mm = await native.loadVisionModel(fixture('mmproj-llava-tiny-f32').path, {
    threads: 2,
    textModel: fixture('llava-tiny-f32').path,
  });
  try {
    const info = native.visionInfo(mm);
    assert.equal(info.family, 'llava');
    assert.equal(info.tokens.image.id, 49152);
    assert.equal(info.tokensPerTile, 64);
    for (const [i, im] of images.entries()) {
      const pre = await native.preprocessImage(mm, im.rgb, im.width, im.height);
      const folderPre = await native.preprocessImage(vision, im.rgb, im.width, im.height);
      assert.deepEqual(pre.tiles, folderPre.tiles, `${im.label}: the mmproj's preprocessing is the folder's`);
      const rel = relError(await native.encodeImage(mm, refs[i]!.pixels, 1), refs[i]!.features);
      process.stderr.write(`  ${im.label}: mmproj features relative error ${rel.toExponential(3)}\n`);
      assert.ok(rel <= 1e-2, `${im.label}: relative error ${rel}`);
    }
  } finally {
    native.disposeVisionModel(mm);
  }
});

/** A copy of the folder (weights linked) with config.json or a processor file edited. */
const edited = (file: string, edit: (json: Record<string, unknown>) => void): string =>
  editedFolder(folder(), work, file, edit);

test("'full' keeps the class row and vision_feature_layer -1 runs every layer: still transformers' features", async () => {
  // The same weights with other config values, both sides reading the edited folder; edited
  // as text (a JSON round trip would turn config.json's 1.0 into 1, which transformers refuses).
  const dir = edited('processor_config.json', (j) => (j['vision_feature_select_strategy'] = 'full'));
  const config = readFileSync(join(dir, 'config.json'), 'utf8');
  const changed = config
    .replace('"vision_feature_select_strategy": "default"', '"vision_feature_select_strategy": "full"')
    .replace('"vision_feature_layer": -2', '"vision_feature_layer": -1');
  assert.equal(changed.match(/"full"|-1\b/g)?.length, 2, 'both config values edited');
  writeFileSync(join(dir, 'config.json'), changed);
  const fullRefs = featuresReference<LlavaMeta>(
    'llava_reference.py',
    dir,
    images,
    mkdtempSync(join(work, 'full-')),
  );
  const full = await native.loadVisionModel(dir, { threads: 2 });
  try {
    assert.equal(native.visionInfo(full).tokensPerTile, 65);
    for (const [i, im] of images.entries()) {
      assert.deepEqual([fullRefs[i]!.featureRows, fullRefs[i]!.imageTokens], [65, 65], im.label);
      const rel = relError(await native.encodeImage(full, refs[i]!.pixels, 1), fullRefs[i]!.features);
      process.stderr.write(
        `  ${im.label}: 'full', layer -1: features relative error ${rel.toExponential(3)}\n`,
      );
      assert.ok(rel <= 1e-4, `${im.label}: relative error ${rel}`);
    }
    // Other rows than the default's: the class row and the last layer are really used.
    assert.ok(
      relError((await native.encodeImage(full, refs[0]!.pixels, 1)).subarray(128), refs[0]!.features) > 1e-2,
    );
  } finally {
    native.disposeVisionModel(full);
  }
});

const vc = (j: Record<string, unknown>): Record<string, unknown> =>
  j['vision_config'] as Record<string, unknown>;
for (const [what, file, edit, rule] of [
  [
    'a list of feature layers',
    'config.json',
    (j) => (j['vision_feature_layer'] = [-2, -1]),
    /'vision_feature_layer' as a list/,
  ],
  [
    'a feature layer past the encoder',
    'config.json',
    (j) => (j['vision_feature_layer'] = 7),
    /vision_feature_layer/,
  ],
  [
    'another select strategy',
    'config.json',
    (j) => (j['vision_feature_select_strategy'] = 'cls'),
    /'vision_feature_select_strategy' 'cls'/,
  ],
  [
    'LLaVA-1.6 tiling',
    'config.json',
    (j) => (j['image_grid_pinpoints'] = [[64, 128]]),
    /'image_grid_pinpoints'/,
  ],
  [
    'another projector activation',
    'config.json',
    (j) => (j['projector_hidden_act'] = 'relu'),
    /'projector_hidden_act' 'relu'/,
  ],
  [
    'a SigLIP tower',
    'config.json',
    (j) => (vc(j)['model_type'] = 'siglip_vision_model'),
    /vision_config.model_type 'siglip_vision_model'/,
  ],
  [
    'another encoder activation',
    'config.json',
    (j) => (vc(j)['hidden_act'] = 'silu'),
    /vision_config.hidden_act 'silu'/,
  ],
  [
    'a crop unlike the encoder',
    'preprocessor_config.json',
    (j) => (j['crop_size'] = { height: 48, width: 48 }),
    /'crop_size' 48x48/,
  ],
  [
    'a fixed-size resize',
    'preprocessor_config.json',
    (j) => (j['size'] = { height: 64, width: 64 }),
    /'size' must be \{"shortest_edge": N\}/,
  ],
  [
    'no center crop',
    'preprocessor_config.json',
    (j) => (j['do_center_crop'] = false),
    /'do_center_crop': false/,
  ],
  [
    'another image processor',
    'preprocessor_config.json',
    (j) => (j['image_processor_type'] = 'SiglipImageProcessor'),
    /image_processor_type 'SiglipImageProcessor'/,
  ],
  [
    'a token count unlike the rows',
    'processor_config.json',
    (j) => (j['num_additional_image_tokens'] = 0),
    /num_additional_image_tokens 0 .* write 63 image tokens; the encoder gives 64/,
  ],
] as const satisfies readonly (readonly [
  string,
  string,
  (j: Record<string, unknown>) => unknown,
  RegExp,
])[]) {
  test(`a folder with ${what} is refused naming the field`, async () => {
    await assert.rejects(native.loadVisionModel(edited(file, edit)), rule);
  });
}

test('an mmproj missing a key, or of another projector type, is refused naming it', async () => {
  // The GGUF's metadata keys are edited in place in a copy: same length, another meaning.
  const bytes = readFileSync(fixture('mmproj-llava-tiny-f32').path);
  for (const [from, to, rule] of [
    ['clip.vision.image_size', 'clip.vision.image_sizf', /clip.vision.image_size/],
    ['clip.projector_type', 'clip.projector_typf', /is not a projector Prism reads/],
  ] as const) {
    const copy = Buffer.from(bytes);
    const at = copy.indexOf(from);
    assert.ok(at > 0, from);
    copy.write(to, at, 'latin1');
    const path = join(work, `edited-${to}.gguf`);
    writeFileSync(path, copy);
    await assert.rejects(native.loadVisionModel(path), rule);
  }
});

test('an mmproj with stacked feature layers or LLaVA-1.6 keys is refused naming the key', async () => {
  for (const [key, value, rule] of [
    ['clip.vision.feature_layer', '[1,2]', /clip.vision.feature_layer must hold one layer/],
    [
      'clip.vision.feature_layer',
      '[7]',
      /clip.vision.feature_layer must be an integer in \[0, block_count 2\]/,
    ],
    [
      'clip.vision.image_grid_pinpoints',
      '[64,128,128,64]',
      /'clip.vision.image_grid_pinpoints' \(LLaVA-1.6 anyres tiling\)/,
    ],
    ['clip.use_silu', 'true', /clip.use_silu is unsupported/],
  ] as const) {
    const path = join(work, `edited-${key}-${value.length}.gguf`);
    execFileSync(pythonCommand(), [
      join(projectRoot(), 'test', 'vision', 'gguf_edit.py'),
      fixture('mmproj-llava-tiny-f32').path,
      path,
      key,
      value,
    ]);
    await assert.rejects(native.loadVisionModel(path), rule, `${key} ${value}`);
  }
});

test("the folder's text model: its decoder is a Llama under language_model; a text_config without sizes takes LlamaConfig's", async () => {
  const model = await native.loadModel(folder());
  try {
    const info = native.modelInfo(model);
    assert.equal(info.vision, 'llava');
    assert.equal(info.hiddenSize, 128);
  } finally {
    native.disposeModel(model);
  }
  // llava-hf's text_config writes only what differs from LlamaConfig: hidden_size 4096 then,
  // which this fixture's 128-wide weights do not have (a default that was not filled in would
  // say the key is missing instead).
  const dir = edited(
    'config.json',
    (j) => delete (j['text_config'] as Record<string, unknown>)['hidden_size'],
  );
  await assert.rejects(native.loadModel(dir), /4096/);
});
