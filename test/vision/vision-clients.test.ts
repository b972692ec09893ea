/**
 * SmolVLM (the smolvlm-tiny fixture, its native image encoder) behind the real server, through
 * unmodified clients (test/clients/vision_clients.py): the `openai` SDK's chat with an
 * `image_url` part and Responses with an `input_image` part, and huggingface_hub's
 * `InferenceClient.chat_completion` with an image. Each answers 200 with a prompt that holds
 * the image's tile tokens: a 64 x 48 picture splits into 3 x 4 tiles + the global image,
 * 13 × 16 image tokens, and the same picture gives the chat and InferenceClient calls the same
 * prompt; Ollama's `images` give the prompt OpenAI's image part gives, and both families' model
 * cards say the model takes images (`vision`, `input_modalities`); TGI's `/generate` (and
 * `InferenceClient.text_generation`) with `inputs` spelling the chat's rendering, the image an
 * inline `![](data:...)`, gets the chat's prompt and greedy answer. The same holds for the
 * fixture's GGUF pair served with `--mmproj`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fixture } from '../fixtures.js';
import { getJson, postJson, runPythonClient, startHarness, type Harness } from '../gateways-harness.js';
import { hostileKit } from '../fuzz/hostile-images.js';
import { postSse } from '../gateways-sse.js';

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

    test('openai chat and Responses, InferenceClient.chat_completion and text_generation, ollama chat take an image', async () => {
      const r = await runPythonClient('vision_clients.py', [h.url, MODEL]);
      const imageTokens = 13 * 16;
      for (const call of ['chat', 'responses', 'hf', 'ollama', 'tgi'] as const) {
        assert.equal(typeof r[call].text, 'string', JSON.stringify(r));
        assert.ok(r[call].promptTokens > imageTokens, `${call}: ${JSON.stringify(r[call])}`);
      }
      assert.equal(r.chat.promptTokens, r.hf.promptTokens);
      // The ollama client's message is the image then the text: the chat call's prompt.
      assert.equal(r.ollama.promptTokens, r.chat.promptTokens);
      // text_generation's inputs spell the chat's rendering with the image inline: its prompt and greedy answer.
      assert.equal(r.tgi.promptTokens, r.chat.promptTokens);
      assert.equal(r.tgi.generatedTokens, 6);
      assert.ok(r.tgi.text.length > 0);
      assert.equal(r.tgi.text, r.hf.text);
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

    test("TGI's inline ![](URL) is an image in place: /generate and /generate_stream get the chat's prompt and greedy answer", async () => {
      const png = (await hostileKit()).valid.png.toString('base64');
      const url = `data:image/png;base64,${png}`;
      const text = 'What is in this picture?';
      const openai = await postJson(`${h.url}/v1/chat/completions`, {
        model: MODEL,
        max_tokens: 5,
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
      assert.equal(openai.status, 200, openai.text);
      // The chat's rendering (SmolVLM's template), the image inline where the template writes <image>.
      const inputs = `<|im_start|>User:![](${url})${text}<end_of_utterance>\nAssistant:`;
      const parameters = { max_new_tokens: 5, details: true };
      const r = await postJson(`${h.url}/generate`, { inputs, parameters });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.details.prompt_tokens, openai.json.usage.prompt_tokens);
      assert.ok(r.json.details.prompt_tokens > 16, JSON.stringify(r.json.details));
      assert.equal(r.json.details.generated_tokens, openai.json.usage.completion_tokens);
      assert.ok(r.json.generated_text.length > 0);
      assert.equal(r.json.generated_text, openai.json.choices[0].message.content);
      const s = await postSse(`${h.url}/generate_stream`, { inputs, parameters });
      assert.equal(s.status, 200);
      const last = JSON.parse(s.events.at(-1)!.data);
      assert.equal(last.generated_text, r.json.generated_text);
      // Text around it, the image in the middle; return_full_text gives back inputs as sent.
      const middle = `Describe ![](${url}) please`;
      const full = await postJson(`${h.url}/generate`, {
        inputs: middle,
        parameters: { max_new_tokens: 2, return_full_text: true },
      });
      assert.equal(full.status, 200, full.text);
      assert.ok(full.json.generated_text.startsWith(middle));
    });
  });
}
