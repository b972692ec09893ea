/**
 * Gemma 3 with images end to end on gemma3-vision-tiny (scripts/gemma3_vision_fixtures.py)
 * against transformers' Gemma3ForConditionalGeneration in float (test/vision/gemma3_reference.py),
 * from the same pixels: the engine's own image encoder, Gemma3Processor's text-level expansion
 * (gemma3-prompt.ts), the placed rows and the decoder's bidirectional attention over each
 * image's soft tokens (token_type_ids' mask). Asserts the prompt ids are the processor's,
 * teacher-forced top-1 over every prompt position ≥ 99%, every prompt logprob within 5e-2 and
 * the greedy output equal; and that the same engine is far from transformers' causal-only run
 * (no token_type_ids), so an engine without the bidirectional spans would fail. A small step
 * budget (the scheduler never ends a chunk inside an image) gives the same scores; one smaller
 * than an image is refused. llama.cpp's pair of files (the gemma3 text GGUF + `--mmproj`)
 * answers as the folder does. Through the real server, an OpenAI chat request with an
 * `image_url` part gets the engine's answer; a text-only Gemma 3 still refuses images.
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
  type GenerateReference,
} from './image-chat.js';
import { testMmprojRefusals } from './mmproj-refusals.js';

const MAX_NEW = 8;
const TEXT = 'What is in this image? Answer in one sentence.';
const SOFT_ID = 49154;
const IMAGE_TOKENS = 16;
// The decoder keeps K/V in F16: 1.4e-2 and 2.7e-2 measured on the two images; transformers'
// causal-only run is ~20 away.
const LOGPROB_BOUND = 5e-2;

const IMAGES: readonly DrawnImage[] = [GRADIENT, shapes90x200(100, 140)];

const folder = (): string => fixture('gemma3-vision-tiny').path;
const textGguf = (): string => fixture('gemma3-vision-tiny-f32').path;
const mmproj = (): string => fixture('mmproj-gemma3-vision-tiny-f32').path;

let engine: EngineCore;
let work: string;
const refs = new Map<string, GenerateReference>();

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'prism-gemma3-generate-'));
  engine = await loadEngine(folder(), ENGINE_OPTIONS);
});
after(async () => {
  await engine?.close();
  rmSync(work, { recursive: true, force: true });
});

const request = (drawn: DrawnImage, ignoreEos = true): GenerateRequest =>
  imageChatRequest({ ...drawn, rgb: drawnRgb(drawn) }, TEXT, MAX_NEW, ignoreEos);
const reference = (drawn: DrawnImage, form: 'chat' | 'causal'): GenerateReference => {
  const key = `${drawn.label} ${form}`;
  if (!refs.has(key))
    refs.set(
      key,
      generateReference(folder(), work, drawn, drawnRgb(drawn), TEXT, MAX_NEW, form, 'gemma3_reference.py'),
    );
  return refs.get(key)!;
};

for (const drawn of IMAGES) {
  test(`greedy and teacher-forced top-1 equal transformers' Gemma 3 (bidirectional image attention): ${drawn.label}`, async () => {
    const ref = reference(drawn, 'chat');
    const f = await finish(engine, request(drawn));
    assert.ok(f.promptLogprobs);
    const ids = f.promptLogprobs.map((p) => p.tokenId);
    assert.deepEqual(ids, ref.ids, "the prompt is Gemma3Processor's");
    assert.equal(ids.filter((t) => t === SOFT_ID).length, IMAGE_TOKENS, 'one image, 16 soft tokens');
    const { top1: rate, maxError: err } = promptAgreement(f.promptLogprobs, ref);
    console.log(
      `# gemma3 ${drawn.label}: ${ref.ids.length} prompt tokens, teacher-forced top-1 ${(100 * rate).toFixed(2)}%, ` +
        `prompt logprobs max abs error ${err.toExponential(2)}, greedy ${JSON.stringify(ref.generated)}`,
    );
    assert.ok(rate >= 0.99, `top-1 agreement ${rate}`);
    assert.ok(err < LOGPROB_BOUND, `prompt logprob error ${err}`);
    assert.deepEqual(f.tokenIds, ref.generated);
    // transformers without the image mask (all causal) is far from this: an engine that ran
    // the image causally would fail the bounds above.
    const causal = reference(drawn, 'causal');
    const off = promptAgreement(f.promptLogprobs, causal);
    console.log(
      `# gemma3 ${drawn.label} vs the causal-only reference: top-1 ${(100 * off.top1).toFixed(2)}%, ` +
        `logprobs max abs difference ${off.maxError.toExponential(2)}`,
    );
    assert.ok(
      off.top1 < 0.99 && off.maxError > 10 * LOGPROB_BOUND,
      'the bidirectional mask matters on this prompt',
    );
  });
}

test("a step budget smaller than the prompt: chunks never split an image, the scores are the whole prompt's", async () => {
  const drawn = IMAGES[0]!;
  const whole = await finish(engine, request(drawn));
  // 24 tokens a step: the first chunk would end inside the image's 16 soft tokens, so it ends
  // before them; the next takes them whole (the native plan reader refuses a split span).
  const ids = whole.promptLogprobs!.map((p) => p.tokenId);
  assert.ok(
    ids.indexOf(SOFT_ID) < 24 && ids.lastIndexOf(SOFT_ID) >= 24,
    'a 24-token chunk would cut the image',
  );
  const small = await loadEngine(folder(), { ...ENGINE_OPTIONS, maxPrefillTokens: 24 });
  try {
    const chunked = await finish(small, request(drawn));
    assert.ok(whole.promptLogprobs && chunked.promptLogprobs);
    const err = maxLogprobDifference(whole.promptLogprobs, chunked.promptLogprobs);
    assert.ok(err < 1e-3, `chunked prompt logprobs differ by ${err}`);
    assert.deepEqual(chunked.tokenIds, whole.tokenIds);
  } finally {
    await small.close();
  }
  const tiny = await loadEngine(folder(), { ...ENGINE_OPTIONS, maxPrefillTokens: 12 });
  try {
    await assert.rejects(finish(tiny, request(drawn)), (e: Error & { code?: string; field?: string }) => {
      assert.equal(e.code, 'INVALID_ARGUMENT');
      assert.equal(e.field, 'images');
      assert.match(
        e.message,
        /16 tokens that must be computed in one step, more than maxPrefillTokens \(12\)/,
      );
      return true;
    });
  } finally {
    await tiny.close();
  }
});

test('the gemma3 text GGUF + mmproj pair answers an image request as the folder does', async () => {
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
        `# gemma3 mmproj pair vs folder, ${drawn.label}: prompt logprobs max abs difference ${err.toExponential(2)}`,
      );
      // The converter's F16 input projection (features within 2.5e-4): ~1.6e-2 measured.
      assert.ok(err < 5e-2, `prompt logprobs differ by ${err}`);
      assert.deepEqual(b.tokenIds, a.tokenIds);
    }
  } finally {
    await pair.close();
  }
});

testMmprojRefusals(ENGINE_OPTIONS, [
  ["another model's text GGUF", ensureDefaultModel, mmproj, /vocabulary has no '<image_soft_token>' token/],
  ['a folder with its own image side', folder, mmproj, /vision-language folder with its own image side/],
]);

test('a text-only Gemma 3 refuses an image naming its part', async () => {
  const plain = await loadEngine(fixture('gemma3-gguf-f32').path, ENGINE_OPTIONS);
  try {
    await assert.rejects(
      finish(plain, request(IMAGES[0]!)),
      (e: Error & { code?: string; field?: string }) => {
        assert.equal(e.code, 'INVALID_ARGUMENT');
        assert.equal(e.field, 'messages[0].content[0]');
        assert.match(e.message, /text-only model/);
        return true;
      },
    );
  } finally {
    await plain.close();
  }
});

test("OpenAI chat with an image_url part through the real server: the engine's prompt and greedy answer", async () => {
  const drawn = IMAGES[0]!;
  const direct = await finish(engine, request(drawn, false));
  const png = await sharp(Buffer.from(drawnRgb(drawn)), {
    raw: { width: drawn.width, height: drawn.height, channels: 3 },
  })
    .png()
    .toBuffer();
  const url = `data:image/png;base64,${png.toString('base64')}`;
  const h = await startHarness(undefined, { modelPath: folder(), modelName: 'gemma3-vision-tiny' });
  try {
    const chat = (text: string, maxTokens: number) =>
      postJson(`${h.url}/v1/chat/completions`, {
        model: 'gemma3-vision-tiny',
        max_tokens: maxTokens,
        temperature: 0,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image_url', image_url: { url } },
              { type: 'text', text },
            ],
          },
        ],
      });
    const r = await chat(TEXT, MAX_NEW);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.usage.prompt_tokens, direct.promptLogprobs!.length);
    assert.equal(r.json.usage.completion_tokens, direct.tokenIds.length);
    assert.equal(r.json.choices[0].message.content, direct.text);
    // A text that spells an image token itself breaks the image's expansion: refused, never a 5xx.
    const bad = await chat('what is <image_soft_token>?', 2);
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.text, /images' tokens/);
  } finally {
    await h.close();
  }
});
