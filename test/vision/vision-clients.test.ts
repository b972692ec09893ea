/**
 * SmolVLM (the smolvlm-tiny fixture, its native image encoder) behind the real server, through
 * unmodified clients (test/clients/vision_clients.py): the `openai` SDK's chat with an
 * `image_url` part and Responses with an `input_image` part, and huggingface_hub's
 * `InferenceClient.chat_completion` with an image. Each answers 200 with a prompt that holds
 * the image's tile tokens: a 64 x 48 picture splits into 3 x 4 tiles + the global image,
 * 13 × 16 image tokens, and the same picture gives the chat and InferenceClient calls the same
 * prompt; Ollama's `images` give the prompt OpenAI's image part gives, and both families' model
 * cards say the model takes images (`vision`, `input_modalities`). The same holds for the
 * fixture's GGUF pair served with `--mmproj`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fixture } from '../fixtures.js';
import { getJson, postJson, runPythonClient, startHarness, type Harness } from '../gateways-harness.js';
import { hostileKit } from '../fuzz/hostile-images.js';

const MODEL = 'smolvlm-tiny';

// The Hugging Face folder, and the same weights as llama.cpp's pair (`--mmproj`).
for (const form of ['folder', 'gguf+mmproj'] as const) {
  describe(form, () => {
    let h: Harness;
    before(async () => {
      h =
        form === 'folder'
          ? await startHarness(undefined, { modelPath: fixture(MODEL).path, modelName: MODEL })
          : await startHarness(undefined, {
              modelPath: fixture('smolvlm-tiny-f32').path,
              modelName: MODEL,
              engine: { mmproj: fixture('mmproj-smolvlm-tiny-f32').path },
            });
    });
    after(async () => {
      await h?.close();
    });

    test('openai chat and Responses, InferenceClient.chat_completion and ollama chat take an image', async () => {
      const r = await runPythonClient('vision_clients.py', [h.url, MODEL]);
      const imageTokens = 13 * 16;
      for (const call of ['chat', 'responses', 'hf', 'ollama'] as const) {
        assert.equal(typeof r[call].text, 'string', JSON.stringify(r));
        assert.ok(r[call].promptTokens > imageTokens, `${call}: ${JSON.stringify(r[call])}`);
      }
      assert.equal(r.chat.promptTokens, r.hf.promptTokens);
      // The ollama client's message is the image then the text: the chat call's prompt.
      assert.equal(r.ollama.promptTokens, r.chat.promptTokens);
    });

    test("Ollama's images (chat and generate) give the prompt OpenAI's image part gives", async () => {
      const png = (await hostileKit()).valid.png.toString('base64');
      const text = 'What is in this picture?';
      const openai = await postJson(`${h.url}/v1/chat/completions`, {
        model: MODEL,
        max_tokens: 2,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
              { type: 'text', text },
            ],
          },
        ],
      });
      assert.equal(openai.status, 200, openai.text);
      const chat = await postJson(`${h.url}/api/chat`, {
        model: MODEL,
        stream: false,
        options: { num_predict: 2 },
        messages: [{ role: 'user', content: text, images: [png] }],
      });
      assert.equal(chat.status, 200, chat.text);
      const generate = await postJson(`${h.url}/api/generate`, {
        model: MODEL,
        stream: false,
        options: { num_predict: 2 },
        prompt: text,
        images: [png],
      });
      assert.equal(generate.status, 200, generate.text);
      assert.ok(openai.json.usage.prompt_tokens > 16, JSON.stringify(openai.json.usage));
      assert.equal(chat.json.prompt_eval_count, openai.json.usage.prompt_tokens);
      assert.equal(generate.json.prompt_eval_count, openai.json.usage.prompt_tokens);
      const show = await postJson(`${h.url}/api/show`, { model: MODEL });
      assert.deepEqual(show.json.capabilities, ['completion', 'tools', 'vision']);
      // OpenAI's model card says so too (Prism's `input_modalities`, read by the playground).
      const card = (await getJson(`${h.url}/v1/models/${MODEL}`)).json;
      assert.deepEqual([card.input_modalities, card.max_image_bytes], [['text', 'image'], 20 * 1024 * 1024]);
    });

    test("TGI's inline ![](URL) is read as an image (decoded, placed), then refused: chat prompts only", async () => {
      const png = (await hostileKit()).valid.png.toString('base64');
      const r = await postJson(`${h.url}/generate`, {
        inputs: `Describe ![](data:image/png;base64,${png}) please`,
        parameters: { max_new_tokens: 2 },
      });
      assert.equal(r.status, 501, r.text);
      assert.match(r.json.error, /images are taken in chat messages only/);
    });
  });
}
