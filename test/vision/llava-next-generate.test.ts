/**
 * LLaVA-1.6 end to end on the llava-next-tiny fixture (scripts/llava_next_fixtures.py) against
 * transformers' LlavaNextForConditionalGeneration in float (test/vision/generate_reference.py),
 * from the same pixels: the engine's own native image encoder (loadEngine on the folder), its
 * packing of the anyres tiles and its prompt expansion (each `<image>` becomes as many image
 * tokens as the image's size gives, llava-next-prompt.ts). Asserts the prompt ids are
 * LlavaNextProcessor's (so the per-image count is its `_get_number_of_features`), teacher-forced
 * top-1 over every prompt position ≥ 99%, every prompt token's logprob within 2e-2 of the
 * reference's, and the greedy output equal; the images score the question after them further
 * apart than that, so an engine that dropped or misplaced the rows would fail. Through the real
 * server, an OpenAI chat request with an `image_url` part gets the engine's prompt and answer.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import type { EngineCore } from '../../engine/engine-core.js';
import { loadEngine } from '../../engine/load-engine.js';
import type { GenerateRequest } from '../../engine/types.js';
import { fixture } from '../fixtures.js';
import { postJson, startHarness } from '../gateways-harness.js';
import { drawnRgb, GRADIENT, type DrawnImage } from './drawn-images.js';
import {
  ENGINE_OPTIONS,
  finish,
  generateReference,
  imageChatRequest,
  promptAgreement,
} from './image-chat.js';

const MAX_NEW = 8;
const TEXT = 'What is in this image? Answer in one sentence.';
const IMAGE_ID = 49152;
const LOGPROB_BOUND = 2e-2;

/**
 * 30 x 70: a red disc and a blue block on off-white; smaller than its pinpoint, so resized up
 * (where Pillow 13's pass order is known, vision/pil_resample.h) into a 3 x 1 grid whose
 * padded rows unpad_image cuts.
 */
const PORTRAIT: DrawnImage = {
  label: 'shapes 30x70',
  width: 30,
  height: 70,
  pixel: (x, y) =>
    (x - 15) ** 2 + (y - 30) ** 2 < 100
      ? [220, 30, 40]
      : y > 50 && x > 5 && x < 25
        ? [20, 40, 200]
        : [240, 240, 230],
};

/** A 1 x 3 grid without padding (300 x 100), a 3 x 1 grid with unpadded rows. */
const IMAGES: readonly DrawnImage[] = [GRADIENT, PORTRAIT];

const folder = (): string => fixture('llava-next-tiny').path;

let engine: EngineCore;
let work: string;
/** Each image's reference logprobs of the question after it. */
const tails: number[][] = [];

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'prism-llava-next-generate-'));
  engine = await loadEngine(folder(), ENGINE_OPTIONS);
});
after(async () => {
  await engine?.close();
  rmSync(work, { recursive: true, force: true });
});

const request = (drawn: DrawnImage, ignoreEos = true): GenerateRequest =>
  imageChatRequest({ ...drawn, rgb: drawnRgb(drawn) }, TEXT, MAX_NEW, ignoreEos);

for (const drawn of IMAGES) {
  test(`greedy and teacher-forced top-1 equal transformers' LLaVA-1.6: ${drawn.label}`, async () => {
    const ref = generateReference(folder(), work, drawn, drawnRgb(drawn), TEXT, MAX_NEW, 'chat');
    const f = await finish(engine, request(drawn));
    assert.ok(f.promptLogprobs);
    const ids = f.promptLogprobs.map((p) => p.tokenId);
    const imageTokens = ids.filter((t) => t === IMAGE_ID).length;
    assert.equal(imageTokens, ref.ids.filter((t) => t === IMAGE_ID).length, "LlavaNextProcessor's count");
    assert.deepEqual(ids, ref.ids);
    const { top1: rate, maxError: err } = promptAgreement(f.promptLogprobs, ref);
    console.log(
      `# llava-next ${drawn.label}: ${imageTokens} image tokens, ${ref.ids.length} prompt tokens, teacher-forced ` +
        `top-1 ${(100 * rate).toFixed(2)}%, prompt logprobs max abs error ${err.toExponential(2)}, ` +
        `greedy ${JSON.stringify(ref.generated)}`,
    );
    assert.ok(rate >= 0.99, `top-1 agreement ${rate}`);
    assert.ok(err < LOGPROB_BOUND, `prompt logprob error ${err}`);
    tails.push(ref.logprobs.slice(-12));
    assert.deepEqual(f.tokenIds, ref.generated);
  });
}

test('the two images give the question after them other scores (the rows are seen)', () => {
  assert.equal(tails.length, 2);
  const gap = Math.max(...tails[0]!.map((v, i) => Math.abs(v - tails[1]![i]!)));
  assert.ok(gap > 5 * LOGPROB_BOUND, `the images' references differ by ${gap} only`);
});

test("OpenAI chat with an image_url part through the real server: the engine's prompt and greedy answer", async () => {
  const drawn = IMAGES[1]!;
  const direct = await finish(engine, request(drawn, false));
  const png = await sharp(Buffer.from(drawnRgb(drawn)), {
    raw: { width: drawn.width, height: drawn.height, channels: 3 },
  })
    .png()
    .toBuffer();
  const h = await startHarness(undefined, { modelPath: folder(), modelName: 'llava-next-tiny' });
  try {
    const r = await postJson(`${h.url}/v1/chat/completions`, {
      model: 'llava-next-tiny',
      max_tokens: MAX_NEW,
      temperature: 0,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
            { type: 'text', text: TEXT },
          ],
        },
      ],
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.usage.prompt_tokens, direct.promptLogprobs!.length);
    assert.equal(r.json.usage.completion_tokens, direct.tokenIds.length);
    assert.equal(r.json.choices[0].message.content, direct.text);
  } finally {
    await h.close();
  }
});
