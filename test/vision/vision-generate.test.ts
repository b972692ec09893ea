/**
 * SmolVLM end to end on the smolvlm-tiny fixture against transformers' Idefics3 in float
 * (test/vision/generate_reference.py), from the same pixels: the engine's own native image
 * encoder (loadEngine on the folder), its prompt expansion and placed rows. Asserts the prompt
 * ids are the processor's, teacher-forced top-1 over every prompt position ≥ 99% (the engine's
 * prompt logprobs' best token against the reference's argmax), every prompt token's logprob
 * within 2e-2 of the reference's (about 5x the ~4e-3 measured, an F16 KV cache's), and the
 * greedy output equal. The two images' references score the question after them further apart
 * than that bound, so an engine that dropped the image rows would fail. The same holds for a
 * text prompt through the real server: TGI's `/generate` with `![](data:image/png;base64,…)`
 * in `inputs` gets the prompt ids, prompt scores and greedy tokens transformers' processor and
 * model give that text with `<image>` in the markdown's place.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { EngineCore } from '../../engine/engine-core.js';
import { loadEngine } from '../../engine/load-engine.js';
import { NativeImageEncoder } from '../../engine/vision/native-image-encoder.js';
import sharp from 'sharp';
import { fixture } from '../fixtures.js';
import { postJson, startHarness } from '../gateways-harness.js';
import { drawnRgb, GRADIENT, shapes90x200, type DrawnImage } from './drawn-images.js';
import {
  ENGINE_OPTIONS,
  finish,
  generateReference,
  imageChatRequest,
  promptAgreement,
} from './image-chat.js';

const MAX_NEW = 8;
const TEXT = 'What is in this image? Answer in one sentence.';

/** Drawn images: a gradient split 2 x 4, and a tall one split 4 x 2 with shapes on it. */
const IMAGES: readonly DrawnImage[] = [GRADIENT, shapes90x200(60, 130)];

const LOGPROB_BOUND = 2e-2;
/** The question and the generation prompt after the image: the same tokens in both prompts. */
const QUESTION_TOKENS = 12;
/** Each image's reference logprobs of those tokens. */
const tails: number[][] = [];

let engine: EngineCore;
let work: string;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'prism-vision-generate-'));
  engine = await loadEngine(fixture('smolvlm-tiny').path, ENGINE_OPTIONS);
});
after(async () => {
  await engine.close();
  rmSync(work, { recursive: true, force: true });
});

/** transformers' run on the image and `text` as a chat (the template's) or as the text prompt itself. */
const reference = (drawn: DrawnImage, rgb: Uint8Array, text: string, form: 'chat' | 'text') =>
  generateReference(fixture('smolvlm-tiny').path, work, drawn, rgb, text, MAX_NEW, form);

test("two requests' images asked for together are encoded in one pass, each as alone", async () => {
  const encoder = await NativeImageEncoder.load(fixture('smolvlm-tiny').path, { threads: 2 });
  try {
    const [a, b] = IMAGES.map((d) => ({
      width: d.width,
      height: d.height,
      rgb: drawnRgb(d),
      field: d.label,
    }));
    const alone = [...(await encoder.encode([a!])), ...(await encoder.encode([b!]))];
    assert.equal(encoder.passes, 2);
    const together = await Promise.all([encoder.encode([a!]), encoder.encode([b!])]);
    assert.equal(encoder.passes, 3);
    assert.deepEqual(together.flat(), alone);
  } finally {
    encoder.dispose();
  }
});

for (const drawn of IMAGES) {
  test(`greedy and teacher-forced top-1 equal transformers': ${drawn.label}`, async () => {
    const rgb = drawnRgb(drawn);
    const ref = reference(drawn, rgb, TEXT, 'chat');
    const f = await finish(engine, imageChatRequest({ ...drawn, rgb }, TEXT, MAX_NEW));
    assert.ok(f.promptLogprobs);
    assert.deepEqual(
      f.promptLogprobs.map((p) => p.tokenId),
      ref.ids,
    );
    // Position i's best token predicts token i + 1: the reference's argmax at i - 1. The
    // prompt tokens' logprobs: the image's rows are in every one after its first token (a
    // random model's peaked top-1 alone says little).
    const { top1: rate, maxError: err } = promptAgreement(f.promptLogprobs, ref);
    console.log(
      `# vision ${drawn.label}: ${ref.ids.length} prompt tokens, teacher-forced top-1 ${(100 * rate).toFixed(2)}%`,
    );
    assert.ok(rate >= 0.99, `top-1 agreement ${rate}`);
    console.log(`# vision ${drawn.label}: prompt logprobs max abs error ${err.toExponential(2)}`);
    assert.ok(err < LOGPROB_BOUND, `prompt logprob error ${err}`);
    tails.push(ref.logprobs.slice(-QUESTION_TOKENS));
    assert.deepEqual(f.tokenIds, ref.generated);
  });
}

test('the two images give the question after them other scores (the rows are seen)', () => {
  assert.equal(tails.length, 2);
  const gap = Math.max(...tails[0]!.map((v, i) => Math.abs(v - tails[1]![i]!)));
  assert.ok(gap > 5 * LOGPROB_BOUND, `the images' references differ by ${gap} only`);
});

test("TGI's /generate with ![](data:image/png) in inputs: transformers' prompt ids, scores and greedy tokens for <image> there", async () => {
  const drawn = IMAGES[1]!;
  const rgb = drawnRgb(drawn);
  const png = await sharp(Buffer.from(rgb), {
    raw: { width: drawn.width, height: drawn.height, channels: 3 },
  })
    .png()
    .toBuffer();
  const [before, after] = ['Look at this picture: ', '\nWhat is in it? Answer in one sentence.'];
  const ref = reference(drawn, rgb, `${before}<image>${after}`, 'text');
  const h = await startHarness(undefined, {
    modelPath: fixture('smolvlm-tiny').path,
    modelName: 'smolvlm-tiny',
  });
  try {
    const r = await postJson(`${h.url}/generate`, {
      inputs: `${before}![](data:image/png;base64,${png.toString('base64')})${after}`,
      parameters: { max_new_tokens: MAX_NEW, details: true, decoder_input_details: true },
    });
    assert.equal(r.status, 200, r.text);
    const details = r.json.details as {
      prefill: { id: number; logprob: number | null }[];
      tokens: { id: number }[];
      prompt_tokens: number;
    };
    assert.deepEqual(
      details.prefill.map((t) => t.id),
      ref.ids,
    );
    assert.equal(details.prompt_tokens, ref.ids.length);
    let err = 0;
    for (let i = 1; i < ref.ids.length; i++)
      err = Math.max(err, Math.abs(details.prefill[i]!.logprob! - ref.logprobs[i - 1]!));
    console.log(
      `# vision TGI inline ${drawn.label}: ${ref.ids.length} prompt tokens, logprobs max abs error ${err.toExponential(2)}`,
    );
    assert.ok(err < LOGPROB_BOUND, `prompt logprob error ${err}`);
    assert.ok(ref.generated.length > 0);
    assert.deepEqual(
      details.tokens.map((t) => t.id),
      ref.generated,
    );
  } finally {
    await h.close();
  }
});
