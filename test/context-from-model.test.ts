/**
 * Without configured limits the engine serves the model's own context (SmolLM2: 8,192 tokens),
 * capped by maxModelLen (`--max-model-len`): max_tokens defaults to what fits, and a prompt
 * plus a max_tokens that cannot fit is a 400 naming the field in each family (vLLM's rule).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ensureDefaultModel } from '../engine/default-model.js';
import { loadEngine } from '../engine/load-engine.js';
import { getJson, MODEL_NAME, postJson, startHarness, type Harness } from './gateways-harness.js';

let h: Harness;
before(async () => {
  // The harness's limits taken away: the model's context, capped at 1,024.
  h = await startHarness(undefined, {
    engine: { maxSeqLen: undefined, maxInputTokenLen: undefined, maxModelLen: 1024 },
  });
});
after(async () => {
  await h?.close();
});

test('the limits come from the model, capped by maxModelLen', async () => {
  const info = await h.engine.info();
  assert.equal(info.contextLength, 8192);
  assert.deepEqual([info.maxSeqLen, info.maxInputTokenLen, info.maxNewTokensCap], [1024, 1023, 1024]);
  const models = (await getJson(`${h.url}/v1/models`)).json;
  assert.equal(models.data[0].max_model_len, 1024);
});

test('prompt + max_tokens past the context: 400 naming the field, in every family', async () => {
  const messages = [{ role: 'user', content: 'Hi' }];
  const chat = await postJson(`${h.url}/v1/chat/completions`, { messages, max_tokens: 1020 });
  assert.equal(chat.status, 400);
  assert.equal(chat.json.error.param, 'params.max_new_tokens');
  assert.match(
    chat.json.error.message,
    /plus 1020 new tokens exceed the model's context of 1024 tokens: ask for at most \d+ \(max_tokens\)/,
  );
  const anthropic = await postJson(`${h.url}/v1/messages`, { model: MODEL_NAME, max_tokens: 1020, messages });
  assert.equal(anthropic.status, 400);
  assert.equal(anthropic.json.error.type, 'invalid_request_error');
  const tgi = await postJson(`${h.url}/generate`, { inputs: 'Hi', parameters: { max_new_tokens: 1024 } });
  assert.equal(tgi.status, 422);
  // What fits is answered; without max_tokens the output may take what is left.
  const fits = await postJson(`${h.url}/v1/chat/completions`, { messages, max_tokens: 4 });
  assert.equal(fits.status, 200);
  const room = 1024 - fits.json.usage.prompt_tokens;
  const exact = await postJson(`${h.url}/v1/chat/completions`, {
    messages,
    max_tokens: room,
    stop: ['.', '\n'],
  });
  assert.equal(exact.status, 200, exact.text);
});

test('a KV budget below one sequence of the model context says how much is missing', async () => {
  await assert.rejects(
    loadEngine(ensureDefaultModel(), { kvCacheBytes: 64 << 20, threads: 2 }),
    (e: Error) => {
      assert.match(
        e.message,
        /one sequence of maxSeqLen 8192 \(the model's context; --max-model-len caps it\) needs 65/,
      );
      assert.match(e.message, /MiB more$/);
      return true;
    },
  );
});
