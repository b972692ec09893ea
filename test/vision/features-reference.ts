/**
 * transformers' image features for the numerics tests: decoded images handed to a `features`
 * reference script (test/vision/vision_reference.py, llava_reference.py, gemma3_reference.py) and what it wrote read
 * back; and how the tests measure Prism's rows against it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../engine/default-model.js';
import * as native from '../../native/native.js';
import { pythonCommand } from '../fixtures.js';
import type { DecodedImage } from './drawn-images.js';

/** One image's reference: its reference.json entry (`Meta`), pixel_values and feature rows. */
export type FeaturesReference<Meta> = Meta & {
  readonly pixels: Float32Array;
  readonly features: Float32Array;
};

const floats = (path: string): Float32Array => {
  const b = readFileSync(path);
  return new Float32Array(b.buffer, b.byteOffset, b.length / 4);
};

/**
 * `test/vision/<script> features folder REQUEST out`, REQUEST (and the RGB it names) the
 * images written into `out`; then per image what the script wrote there.
 */
export function featuresReference<Meta extends object>(
  script: 'vision_reference.py' | 'llava_reference.py' | 'gemma3_reference.py',
  folder: string,
  images: readonly DecodedImage[],
  out: string,
): FeaturesReference<Meta>[] {
  const request = join(out, 'request.json');
  writeFileSync(
    request,
    JSON.stringify({
      images: images.map((im, i) => {
        const path = join(out, `${i}.rgb`);
        writeFileSync(path, im.rgb);
        return { rgb: path, width: im.width, height: im.height };
      }),
    }),
  );
  execFileSync(
    pythonCommand(),
    [join(projectRoot(), 'test', 'vision', script), 'features', folder, request, out],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, HF_HUB_OFFLINE: '1', TQDM_DISABLE: '1' },
    },
  );
  const meta = JSON.parse(readFileSync(join(out, 'reference.json'), 'utf8')) as { images: Meta[] };
  return meta.images.map((m, i) => ({
    ...m,
    pixels: floats(join(out, `${i}.pixels.f32`)),
    features: floats(join(out, `${i}.features.f32`)),
  }));
}

/** How far preprocessImage's tiles are from the reference's pixel_values: the largest
 * |difference| and how many values differ at all. */
export function pixelDiff(tiles: Float32Array, pixels: Float32Array): { maxDiff: number; differing: number } {
  let maxDiff = 0,
    differing = 0;
  for (let k = 0; k < pixels.length; k++) {
    const d = Math.abs(tiles[k]! - pixels[k]!);
    if (d > 0) differing++;
    maxDiff = Math.max(maxDiff, d);
  }
  return { maxDiff, differing };
}

/** ‖got − ref‖ / ‖ref‖, over arrays of one length. */
export function relError(got: Float32Array, ref: Float32Array): number {
  assert.equal(got.length, ref.length);
  let num = 0,
    den = 0;
  for (let k = 0; k < ref.length; k++) {
    num += (got[k]! - ref[k]!) ** 2;
    den += ref[k]! ** 2;
  }
  return Math.sqrt(num / den);
}

/**
 * preprocessImage then encodeImage on an image's decoded pixels: the rows' relative error
 * against the reference's features, and whether the tiles equal its pixel_values (each value
 * within 1e-6).
 */
export async function pixelsToRows(
  vision: native.VisionModelHandle,
  image: DecodedImage,
  ref: FeaturesReference<object>,
): Promise<{ rel: number; exact: boolean }> {
  const pre = await native.preprocessImage(vision, image.rgb, image.width, image.height);
  const rel = relError(await native.encodeImage(vision, pre.tiles, pre.tileCount), ref.features);
  const exact = pre.tiles.every((v, k) => Math.abs(v - ref.pixels[k]!) <= 1e-6);
  return { rel, exact };
}

/**
 * Every image's reference pixel_values encoded in one pass (`tiles` tiles in all): the rows'
 * relative error against all the references' features, in order.
 */
export async function onePassError(
  vision: native.VisionModelHandle,
  refs: readonly FeaturesReference<object>[],
  tiles: number,
): Promise<number> {
  const all = new Float32Array(refs.reduce((n, r) => n + r.pixels.length, 0));
  let at = 0;
  for (const r of refs) {
    all.set(r.pixels, at);
    at += r.pixels.length;
  }
  const batched = await native.encodeImage(vision, all, tiles);
  return relError(batched, Float32Array.from(refs.flatMap((r) => [...r.features])));
}
