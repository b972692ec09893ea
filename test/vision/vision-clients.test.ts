/**
 * SmolVLM (the smolvlm-tiny fixture, its native image encoder) behind the real server, through
 * unmodified clients (test/clients/vision_clients.py): the `openai` SDK's chat with an
 * `image_url` part and Responses with an `input_image` part, and huggingface_hub's
 * `InferenceClient.chat_completion` with an image. Each answers 200 with a prompt that holds
 * the image's tile tokens: a 64 x 48 picture splits into 3 x 4 tiles + the global image,
 * 13 × 16 image tokens, and the same picture gives the chat and InferenceClient calls the same
 * prompt.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fixture } from '../fixtures.js';
import { runPythonClient, startHarness, type Harness } from '../gateways-harness.js';

const MODEL = 'smolvlm-tiny';
let h: Harness;
before(async () => {
  h = await startHarness(undefined, { modelPath: fixture(MODEL).path, modelName: MODEL });
});
after(async () => {
  await h?.close();
});

test('openai chat and Responses and InferenceClient.chat_completion take an image', async () => {
  const r = await runPythonClient('vision_clients.py', [h.url, MODEL]);
  const imageTokens = 13 * 16;
  for (const call of ['chat', 'responses', 'hf'] as const) {
    assert.equal(typeof r[call].text, 'string', JSON.stringify(r));
    assert.ok(r[call].promptTokens > imageTokens, `${call}: ${JSON.stringify(r[call])}`);
  }
  assert.equal(r.chat.promptTokens, r.hf.promptTokens);
});
