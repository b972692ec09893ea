/**
 * Ollama's API through the Python `ollama` client (requirements-dev.in): chat, stream, generate
 * (templated and raw), a JSON-schema `format`, list / show / ps / version and the refusals on
 * the real default model; a tool call round trip on a scripted model (a small real model does
 * not call on demand, and Ollama has no tool_choice to force it); the NDJSON framing and the
 * options rules over plain HTTP.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MODEL_NAME, postJson, runPythonClient, startHarness, type Harness } from './gateways-harness.js';
import { hostileKit } from './fuzz/hostile-images.js';
import { serveScripted } from './gateways-scripted.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(async () => {
  await h?.close();
});

test('ollama client: chat, stream, generate, raw, format schema, list, show, ps, refusals', async () => {
  const r = await runPythonClient('ollama_api.py', [h.url, MODEL_NAME], 240000);
  assert.equal(r.chat.model, MODEL_NAME);
  assert.equal(r.chat.done, true);
  assert.ok(r.chat.message.content.length > 0);
  assert.ok(r.chat.eval_count >= 1 && r.chat.eval_count <= 12);
  assert.ok(r.chat.prompt_eval_count > 0 && r.chat.total_duration > 0);
  assert.equal(r.streamed, r.chat.message.content);
  assert.equal(r.stream_last.done, true);
  assert.equal(r.stream_last.eval_count, r.chat.eval_count);
  assert.ok(r.generate.response.length > 0);
  assert.equal(r.generate_streamed, r.generate.response);
  // raw: the prompt as is, no template (far fewer prompt tokens than the templated one).
  assert.ok(r.raw.prompt_eval_count < r.generate.prompt_eval_count);
  assert.equal(r.loaded.done_reason, 'load');
  assert.ok(['red', 'green', 'blue'].includes(JSON.parse(r.structured).color));
  assert.equal(r.list.models.length, 1);
  assert.equal(r.list.models[0].model, `${MODEL_NAME}:latest`);
  assert.equal(r.list.models[0].details.format, 'gguf');
  assert.equal(r.list.models[0].details.quantization_level, 'Q4_1');
  assert.equal(r.show.model_info['general.architecture'], 'llama');
  assert.equal(r.show.model_info['llama.context_length'], 8192);
  assert.deepEqual(r.show.capabilities, ['completion', 'tools']);
  assert.equal(r.ps.models[0].context_length, 1024);
  assert.equal(typeof r.version.version, 'string');
  assert.equal(r.errors.pull[0], 501);
  assert.match(r.errors.pull[1], /pulling a model is not supported/);
  assert.deepEqual(r.errors.unknown_model, [404, 'Model no-such-model not found.']);
  assert.deepEqual(r.errors.num_ctx, [
    400,
    'options.num_ctx: must be in [1, 1024] (the context this server serves)',
  ]);
  // /api/embed is served for pooling models; a generation model refuses it naming the model.
  assert.equal(r.errors.embed[0], 400);
  assert.match(r.errors.embed[1], /model/);
});

test('ollama client: a tool call (whole and streamed, arguments as an object) and the answer to its result', async () => {
  const call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
  const s = await serveScripted([call, call, 'It is sunny in Paris.']);
  try {
    const r = await runPythonClient('ollama_api.py', [s.url, MODEL_NAME, 'tools'], 120000);
    assert.deepEqual(r.calls, [{ name: 'get_weather', arguments: { city: 'Paris' } }]);
    assert.equal(r.content, '');
    assert.deepEqual(r.streamed, r.calls);
    assert.equal(r.follow, 'It is sunny in Paris.');
  } finally {
    await s.close();
  }
});

test('NDJSON by default; options honoured, refused or named as ignored', async () => {
  const res = await fetch(`${h.url}/api/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: MODEL_NAME,
      prompt: 'Hi',
      options: { num_predict: 3, num_gpu: 99, seed: 7 },
    }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
  assert.equal(res.headers.get('x-prism-ignored-fields'), 'options.num_gpu');
  const lines = (await res.text())
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.ok(lines.slice(0, -1).every((l) => l.done === false && typeof l.response === 'string'));
  assert.equal(lines.at(-1).done, true);
  assert.equal(lines.at(-1).eval_count, 3);

  const base = { model: `${MODEL_NAME}:latest`, stream: false, messages: [{ role: 'user', content: 'Hi' }] };
  const refused: [object, string][] = [
    [
      { options: { tfs_z: 0.5 } },
      'options.tfs_z: tfs_z other than 1 (its off value) is not supported by this server',
    ],
    [{ options: { min_p: 2 } }, 'options.min_p: must be in [0, 1]'],
    [
      { options: { num_predict: 0 } },
      'options.num_predict: must be >= 1, or -1 (no limit) or -2 (fill the context)',
    ],
    [{ think: 'high' }, "think: think level 'high' is not supported by this server"],
    [
      { messages: [{ role: 'assistant', content: 'x', images: ['AA=='] }] },
      'messages[0].images: images are taken in user messages only',
    ],
    [
      { messages: [{ role: 'tool', content: 'x' }] },
      'messages[0]: a tool message must answer a tool call of an earlier assistant message',
    ],
  ];
  for (const [extra, error] of refused) {
    const r = await postJson(`${h.url}/api/chat`, { ...base, ...extra });
    assert.equal(r.status, 400, JSON.stringify(extra));
    assert.deepEqual(r.json, { error });
  }
  // Images are decoded and placed; this text-only model refuses them naming the image, as
  // every API does (a vision model answers them: test/vision/vision-clients.test.ts).
  const png = (await hostileKit()).valid.png.toString('base64');
  const images: [string, object, RegExp][] = [
    [
      '/api/chat',
      { ...base, messages: [{ role: 'user', content: 'What is this?', images: [png] }] },
      /^messages\[0\]\.images\[0\]: image input is not supported by this model: .* text-only model$/,
    ],
    [
      '/api/chat',
      { ...base, messages: [{ role: 'user', content: 'x', images: ['AA=='] }] },
      /^messages\[0\]\.images\[0\]: is not a decodable image/,
    ],
    [
      '/api/generate',
      { model: MODEL_NAME, stream: false, prompt: 'What is this?', images: [png] },
      /^images\[0\]: image input is not supported by this model/,
    ],
    [
      '/api/generate',
      { model: MODEL_NAME, stream: false, prompt: 'x', raw: true, images: [png] },
      /^images: cannot be combined with raw/,
    ],
  ];
  for (const [path, body, error] of images) {
    const r = await postJson(h.url + path, body);
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.error, error);
  }
  const suffix = await postJson(`${h.url}/api/generate`, { model: MODEL_NAME, prompt: 'a', suffix: 'b' });
  assert.equal(suffix.status, 400);
  assert.equal(suffix.json.error, 'suffix: suffix (fill-in-the-middle) is not supported by this server');
  // An option at its off value, an unknown top-level field: answered, and the latter named.
  const ok = await postJson(`${h.url}/api/chat`, {
    ...base,
    options: { num_predict: 2, typical_p: 1, mirostat: 0 },
    frobnicate: 1,
  });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.headers.get('x-prism-ignored-fields'), 'frobnicate');
  // min_p 1 keeps only the most likely token: sampled, the answer is the greedy one.
  const answer = async (options: object) =>
    (await postJson(`${h.url}/api/chat`, { ...base, options: { num_predict: 4, ...options } })).json.message
      .content;
  assert.equal(
    await answer({ temperature: 1.5, seed: 4, min_p: 1, typical_p: 0.9 }),
    await answer({ temperature: 0 }),
  );
  const lp = await postJson(`${h.url}/api/chat`, {
    ...base,
    logprobs: true,
    top_logprobs: 2,
    options: { num_predict: 3, temperature: 0 },
  });
  assert.equal(lp.status, 200, lp.text);
  assert.equal(lp.json.logprobs.length, lp.json.eval_count);
  for (const t of lp.json.logprobs) {
    assert.equal(typeof t.token, 'string');
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 2);
  }
  for (const path of ['/api/create', '/api/copy', '/api/push']) {
    const r = await postJson(h.url + path, { model: 'x' });
    assert.equal(r.status, 501, path);
    assert.equal(typeof r.json.error, 'string');
  }
  const del = await fetch(`${h.url}/api/delete`, { method: 'DELETE', body: '{"model":"x"}' });
  assert.equal(del.status, 501);
});
