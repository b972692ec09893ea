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
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { projectRoot } from '../../engine/default-model.js';
import type { EngineCore } from '../../engine/engine-core.js';
import { loadEngine } from '../../engine/load-engine.js';
import { NativeImageEncoder } from '../../engine/vision/native-image-encoder.js';
import type { FinishEvent, GenerateRequest, ImageInput } from '../../engine/types.js';
import sharp from 'sharp';
import { fixture, pythonCommand } from '../fixtures.js';
import { postJson, startHarness } from '../gateways-harness.js';

const MAX_NEW = 8;
const TEXT = 'What is in this image? Answer in one sentence.';

/** Drawn images: a gradient split 2 x 4, and a tall one split 4 x 2 with shapes on it. */
const IMAGES: readonly {
  label: string;
  width: number;
  height: number;
  pixel: (x: number, y: number) => number[];
}[] = [
  {
    label: 'gradient 300x100',
    width: 300,
    height: 100,
    pixel: (x, y) => [Math.floor((x * 255) / 299), Math.floor((y * 255) / 99), (x + 2 * y) % 256],
  },
  {
    label: 'shapes 90x200',
    width: 90,
    height: 200,
    pixel: (x, y) =>
      (x - 45) ** 2 + (y - 60) ** 2 < 900
        ? [220, 30, 40]
        : y > 130 && x > 20 && x < 70
          ? [20, 40, 200]
          : [240, 240, 230],
  },
];

const LOGPROB_BOUND = 2e-2;
/** The question and the generation prompt after the image: the same tokens in both prompts. */
const QUESTION_TOKENS = 12;
/** Each image's reference logprobs of those tokens. */
const tails: number[][] = [];

let engine: EngineCore;
let work: string;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'prism-vision-generate-'));
  engine = await loadEngine(fixture('smolvlm-tiny').path, {
    threads: 2,
    maxSeqLen: 1024,
    kvCacheBytes: 32 << 20,
  });
});
after(async () => {
  await engine.close();
  rmSync(work, { recursive: true, force: true });
});

function pixels(drawn: (typeof IMAGES)[number]): Uint8Array {
  const rgb = new Uint8Array(drawn.width * drawn.height * 3);
  for (let y = 0; y < drawn.height; y++)
    for (let x = 0; x < drawn.width; x++) rgb.set(drawn.pixel(x, y), (y * drawn.width + x) * 3);
  return rgb;
}

interface Reference {
  ids: number[];
  top1: number[];
  logprobs: number[];
  generated: number[];
}

/** transformers' run on the image and TEXT as a chat (the template's) or as the text prompt itself. */
function reference(
  drawn: (typeof IMAGES)[number],
  rgb: Uint8Array,
  text: string,
  form: 'chat' | 'text',
): Reference {
  const rgbPath = join(work, `${drawn.width}x${drawn.height}.rgb`);
  writeFileSync(rgbPath, rgb);
  const out = execFileSync(
    pythonCommand(),
    [
      join(projectRoot(), 'test', 'vision', 'generate_reference.py'),
      fixture('smolvlm-tiny').path,
      rgbPath,
      String(drawn.width),
      String(drawn.height),
      text,
      String(MAX_NEW),
      form,
    ],
    { encoding: 'utf8', env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error' } },
  );
  return JSON.parse(out.trim().split('\n').at(-1)!) as Reference;
}

test("two requests' images asked for together are encoded in one pass, each as alone", async () => {
  const encoder = await NativeImageEncoder.load(fixture('smolvlm-tiny').path, { threads: 2 });
  try {
    const [a, b] = IMAGES.map((d) => ({ width: d.width, height: d.height, rgb: pixels(d), field: d.label }));
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
    const rgb = pixels(drawn);
    const ref = reference(drawn, rgb, TEXT, 'chat');

    const image: ImageInput = {
      width: drawn.width,
      height: drawn.height,
      rgb,
      field: 'messages[0].content[0]',
    };
    const request: GenerateRequest = {
      prompt: {
        kind: 'chat',
        messages: [
          {
            role: 'user',
            content: TEXT,
            parts: [
              { type: 'image', image: 0 },
              { type: 'text', text: TEXT },
            ],
          },
        ],
      },
      params: { temperature: 0, ignoreEos: true, maxNewTokens: MAX_NEW, promptLogprobs: 1 },
      images: [image],
    };
    let f: FinishEvent | undefined;
    for await (const e of engine.generate(request)) if (e.type === 'finish') f = e;
    assert.ok(f?.promptLogprobs);
    assert.deepEqual(
      f.promptLogprobs.map((p) => p.tokenId),
      ref.ids,
    );
    // Position i's best token predicts token i + 1: the reference's argmax at i - 1.
    let agree = 0;
    for (let i = 1; i < ref.ids.length; i++)
      if (f.promptLogprobs[i]!.top[0]?.tokenId === ref.top1[i - 1]) agree++;
    const rate = agree / (ref.ids.length - 1);
    console.log(
      `# vision ${drawn.label}: ${ref.ids.length} prompt tokens, teacher-forced top-1 ${(100 * rate).toFixed(2)}%`,
    );
    assert.ok(rate >= 0.99, `top-1 agreement ${rate}`);
    // The prompt tokens' logprobs: the image's rows are in every one after its first token
    // (a random model's peaked top-1 alone says little).
    let err = 0;
    for (let i = 1; i < ref.ids.length; i++)
      err = Math.max(err, Math.abs(f.promptLogprobs[i]!.logprob! - ref.logprobs[i - 1]!));
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
  const rgb = pixels(drawn);
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
