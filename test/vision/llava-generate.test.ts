/**
 * LLaVA-1.5 end to end on the llava-tiny fixture (scripts/llava_fixtures.py) against
 * transformers' LlavaForConditionalGeneration in float (test/vision/generate_reference.py),
 * from the same pixels: the engine's own native image encoder (loadEngine on the folder), its
 * prompt expansion (each `<image>` becomes 64 image tokens, llava-prompt.ts) and placed rows.
 * Asserts the prompt ids are LlavaProcessor's, teacher-forced top-1 over every prompt position
 * ≥ 99%, every prompt token's logprob within 2e-2 of the reference's, and the greedy output
 * equal; the two images score the question after them further apart than that, so an engine
 * that dropped the rows would fail. llama.cpp's pair of files (the text GGUF + `--mmproj`)
 * gives the folder's prompt, scores (to the F16 projector's rounding) and greedy tokens, and a
 * wrong pairing is refused at load naming `mmproj`. Through the real server, an OpenAI chat
 * request with an `image_url` part gets the engine's prompt and greedy answer.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { ensureDefaultModel } from '../../engine/default-model.js';
import type { EngineCore } from '../../engine/engine-core.js';
import { loadEngine } from '../../engine/load-engine.js';
import type { GenerateRequest } from '../../engine/types.js';
import { fixture } from '../fixtures.js';
import { postJson, startHarness } from '../gateways-harness.js';
import { drawnRgb, GRADIENT, shapes90x200, type DrawnImage } from './drawn-images.js';
import {
  ENGINE_OPTIONS,
  finish,
  generateReference,
  imageChatRequest,
  maxLogprobDifference,
  promptAgreement,
} from './image-chat.js';
import { testMmprojRefusals } from './mmproj-refusals.js';

const MAX_NEW = 8;
const TEXT = 'What is in this image? Answer in one sentence.';
const IMAGE_ID = 49152;
const IMAGE_TOKENS = 64;
const LOGPROB_BOUND = 2e-2;

const IMAGES: readonly DrawnImage[] = [GRADIENT, shapes90x200(100, 140)];

const folder = (): string => fixture('llava-tiny').path;
const textGguf = (): string => fixture('llava-tiny-f32').path;
const mmproj = (): string => fixture('mmproj-llava-tiny-f32').path;

let engine: EngineCore;
let work: string;
/** Each image's reference logprobs of the question after it. */
const tails: number[][] = [];

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'prism-llava-generate-'));
  engine = await loadEngine(folder(), ENGINE_OPTIONS);
});
after(async () => {
  await engine?.close();
  rmSync(work, { recursive: true, force: true });
});

const request = (drawn: DrawnImage, ignoreEos = true): GenerateRequest =>
  imageChatRequest({ ...drawn, rgb: drawnRgb(drawn) }, TEXT, MAX_NEW, ignoreEos);

for (const drawn of IMAGES) {
  test(`greedy and teacher-forced top-1 equal transformers' LLaVA: ${drawn.label}`, async () => {
    const ref = generateReference(folder(), work, drawn, drawnRgb(drawn), TEXT, MAX_NEW, 'chat');
    const f = await finish(engine, request(drawn));
    assert.ok(f.promptLogprobs);
    const ids = f.promptLogprobs.map((p) => p.tokenId);
    assert.deepEqual(ids, ref.ids);
    assert.equal(ids.filter((t) => t === IMAGE_ID).length, IMAGE_TOKENS, 'one image, 64 image tokens');
    const { top1: rate, maxError: err } = promptAgreement(f.promptLogprobs, ref);
    console.log(
      `# llava ${drawn.label}: ${ref.ids.length} prompt tokens, teacher-forced top-1 ${(100 * rate).toFixed(2)}%, ` +
        `prompt logprobs max abs error ${err.toExponential(2)}, greedy ${JSON.stringify(ref.generated)}`,
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

test('the text GGUF + mmproj pair answers an image request as the folder does', async () => {
  const pair = await loadEngine(textGguf(), { ...ENGINE_OPTIONS, mmproj: mmproj() });
  try {
    for (const drawn of IMAGES) {
      const [a, b] = [await finish(engine, request(drawn)), await finish(pair, request(drawn))];
      assert.ok(a.promptLogprobs && b.promptLogprobs);
      assert.deepEqual(
        b.promptLogprobs.map((p) => p.tokenId),
        a.promptLogprobs.map((p) => p.tokenId),
      );
      const err = maxLogprobDifference(a.promptLogprobs, b.promptLogprobs);
      console.log(
        `# llava mmproj pair vs folder, ${drawn.label}: prompt logprobs max abs difference ${err.toExponential(2)}`,
      );
      // The converter's F16 patch embedding and projector matrices and ggml's tanh GELU: ~1e-2 measured.
      assert.ok(err < 5e-2, `prompt logprobs differ by ${err}`);
      assert.deepEqual(b.tokenIds, a.tokenIds);
    }
  } finally {
    await pair.close();
  }
});

testMmprojRefusals(ENGINE_OPTIONS, [
  ["another model's text GGUF", ensureDefaultModel, mmproj, /vocabulary has no '<image>' token/],
  [
    "SmolVLM's mmproj beside LLaVA's text GGUF",
    textGguf,
    () => fixture('mmproj-smolvlm-tiny-f32').path,
    /has no token for <fake_token_around_image>/,
  ],
  ['a folder with its own image side', folder, mmproj, /vision-language folder with its own image side/],
]);

test("OpenAI chat with an image_url part through the real server: the engine's prompt and greedy answer", async () => {
  const drawn = IMAGES[0]!;
  const direct = await finish(engine, request(drawn, false));
  const png = await sharp(Buffer.from(drawnRgb(drawn)), {
    raw: { width: drawn.width, height: drawn.height, channels: 3 },
  })
    .png()
    .toBuffer();
  const h = await startHarness(undefined, { modelPath: folder(), modelName: 'llava-tiny' });
  try {
    const r = await postJson(`${h.url}/v1/chat/completions`, {
      model: 'llava-tiny',
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
    // A text that spells <image> itself has one placeholder too many: refused, never a 5xx.
    const bad = await postJson(`${h.url}/v1/chat/completions`, {
      model: 'llava-tiny',
      max_tokens: 2,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
            { type: 'text', text: 'what is <image>?' },
          ],
        },
      ],
    });
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.text, /image placeholder tokens/);
  } finally {
    await h.close();
  }
});
