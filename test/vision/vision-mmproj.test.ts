/**
 * SmolVLM served from llama.cpp's pair of files (`prism serve --model smolvlm.gguf --mmproj
 * mmproj.gguf`): the text GGUF and mmproj GGUF of the smolvlm-tiny fixture's very weights
 * (scripts/vision_fixtures.py) load as one vision engine, and a chat request with an image
 * gets the same prompt ids, prompt logprobs (to float rounding) and greedy output as the
 * Hugging Face folder's engine, which test/vision/vision-generate.test.ts checks against
 * transformers. A wrong pairing is refused at load, naming `mmproj` and the rule.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ensureDefaultModel } from '../../engine/default-model.js';
import type { EngineCore } from '../../engine/engine-core.js';
import { loadEngine, loadServedEngine } from '../../engine/load-engine.js';
import type { GenerateRequest } from '../../engine/types.js';
import { fixture } from '../fixtures.js';
import { drawnRgb, type DrawnImage } from './drawn-images.js';
import { ENGINE_OPTIONS, finish, imageChatRequest, maxLogprobDifference } from './image-chat.js';
import { testMmprojRefusals } from './mmproj-refusals.js';

const TEXT = 'Describe the picture.';

let folderEngine: EngineCore;
let pairEngine: EngineCore;
const folder = (): string => fixture('smolvlm-tiny').path;
const textGguf = (): string => fixture('smolvlm-tiny-f32').path;
const mmproj = (): string => fixture('mmproj-smolvlm-tiny-f32').path;

before(async () => {
  folderEngine = await loadEngine(folder(), ENGINE_OPTIONS);
  pairEngine = await loadEngine(textGguf(), { ...ENGINE_OPTIONS, mmproj: mmproj() });
});
after(async () => {
  await folderEngine?.close();
  await pairEngine?.close();
});

/** 300 x 100: a 2 x 4 split plus the global image. */
const IMAGE: DrawnImage = {
  label: 'gradient 300x100',
  width: 300,
  height: 100,
  pixel: (x, y) => [Math.floor((x * 255) / 299), Math.floor((y * 255) / 99), (x * 7 + y * 3) % 256],
};
const request = (): GenerateRequest => imageChatRequest({ ...IMAGE, rgb: drawnRgb(IMAGE) }, TEXT, 8);

test('the GGUF + mmproj pair answers an image request as the folder does', async () => {
  const [a, b] = [await finish(folderEngine, request()), await finish(pairEngine, request())];
  assert.ok(a.promptLogprobs && b.promptLogprobs);
  const ids = b.promptLogprobs.map((p) => p.tokenId);
  assert.deepEqual(
    ids,
    a.promptLogprobs.map((p) => p.tokenId),
  );
  // 9 tiles of 16 image tokens each are in the prompt: the image was expanded, not dropped.
  assert.ok(ids.filter((id) => id === 49190).length === 9 * 16, 'image tokens in the prompt');
  const err = maxLogprobDifference(a.promptLogprobs, b.promptLogprobs);
  console.log(
    `# mmproj pair vs folder: ${ids.length} prompt tokens, logprobs max abs difference ${err.toExponential(2)}`,
  );
  assert.ok(err < 1e-3, `prompt logprobs differ by ${err}`);
  assert.deepEqual(b.tokenIds, a.tokenIds);
});

test('the GGUF without its mmproj is a text-only model: an image is refused naming its part', async () => {
  const plain = await loadEngine(textGguf(), ENGINE_OPTIONS);
  try {
    await assert.rejects(finish(plain, request()), (e: Error & { code?: string; field?: string }) => {
      assert.equal(e.code, 'INVALID_ARGUMENT');
      assert.equal(e.field, 'messages[0].content[0]');
      assert.match(e.message, /text-only model/);
      return true;
    });
  } finally {
    await plain.close();
  }
});

testMmprojRefusals(ENGINE_OPTIONS, [
  ['a folder with its own image side', folder, mmproj, /vision-language folder with its own image side/],
  ['a file that is not an mmproj', textGguf, textGguf, /is not an mmproj GGUF of a family Prism runs/],
  ['a path that is no file', textGguf, () => '/nonexistent/mmproj.gguf', /is not a file/],
  ["another model's text GGUF", ensureDefaultModel, mmproj, /vocabulary has no '<image>' token/],
]);

test('an mmproj beside a model served for embeddings is refused', async () => {
  await assert.rejects(
    loadServedEngine(textGguf(), { ...ENGINE_OPTIONS, mmproj: mmproj(), pooling: { task: 'embed' } }),
    /mmproj: .* served for embeddings or scores, which take no images/,
  );
});
