/**
 * Body-shape limits through every family (ServerConfig.limits): a refused body is a 4xx in that
 * family's shape naming the field and the limit, and `__proto__` / `constructor` keys sent to any
 * route leave Object.prototype untouched.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DEFAULT_LIMITS } from '../gateways/config.js';
import { freePortConfig, MODEL_NAME, postJson, startHarness, type Harness } from './gateways-harness.js';

let h: Harness;
before(async () => {
  h = await startHarness(
    freePortConfig({
      limits: { ...DEFAULT_LIMITS, maxJsonDepth: 6, maxArrayLength: 8, maxMessages: 3, maxTools: 2 },
    }),
  );
});
after(async () => {
  await h?.close();
});

const msgs = (k: number) => Array.from({ length: k }, () => ({ role: 'user', content: 'hi' }));
const deep = (k: number): unknown => (k === 0 ? 'x' : { a: deep(k - 1) });

test('OpenAI: messages, tools, depth and list limits are 400 naming the field', async () => {
  const url = `${h.url}/v1/chat/completions`;
  const cases: [unknown, string, RegExp][] = [
    [{ model: MODEL_NAME, messages: msgs(4) }, 'messages', /at most 3 items, got 4 .*maxMessages/],
    [
      { model: MODEL_NAME, messages: msgs(1), tools: [{}, {}, {}] },
      'tools',
      /at most 2 items, got 3 .*maxTools/,
    ],
    [
      { model: MODEL_NAME, messages: msgs(1), metadata: deep(8) },
      'metadata.a.a.a.a.a',
      /nested deeper than 6/,
    ],
    [{ model: MODEL_NAME, messages: msgs(1), stop: Array(9).fill('x') }, 'stop', /maxArrayLength/],
  ];
  for (const [body, param, message] of cases) {
    const r = await postJson(url, body);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.param, param);
    assert.match(r.json.error.message, message);
  }
});

test('TGI, vLLM, KServe and native: 422 in the {error, error_type} shape', async () => {
  const cases: [string, unknown][] = [
    ['/generate', { inputs: 'hi', parameters: { stop: Array(9).fill('x') } }],
    ['/generate_stream', { inputs: deep(8) }],
    ['/generate', { prompt: 'hi', stop: Array(9).fill('x') }],
    [`/v2/models/${MODEL_NAME}/generate`, { text_input: 'hi', parameters: deep(8) }],
    ['/infer', { inputs: 'hi', stop: Array(9).fill('x') }],
    ['/v1/tokenizer', { inputs: deep(8) }],
  ];
  for (const [path, body] of cases) {
    const r = await postJson(h.url + path, body);
    assert.equal(r.status, 422, `${path}: ${r.text}`);
    assert.equal(typeof r.json.error, 'string', path);
    assert.equal(typeof r.json.error_type, 'string', path);
    assert.match(r.json.error, /ServerConfig\.limits\.(maxArrayLength|maxJsonDepth)/, path);
  }
});

test('__proto__ is refused and constructor keys pollute nothing, on every POST route', async () => {
  const routes = [
    '/v1/chat/completions',
    '/v1/completions',
    '/generate',
    '/generate_stream',
    '/',
    `/v2/models/${MODEL_NAME}/infer`,
    `/v2/models/${MODEL_NAME}/generate`,
    '/infer',
    '/v1/tokenizer',
  ];
  for (const path of routes) {
    const proto = await postJson(h.url + path, '{"inputs":"hi","prompt":"hi","__proto__":{"polluted":1}}');
    assert.ok(proto.status === 400 || proto.status === 422, `${path}: ${proto.status} ${proto.text}`);
    assert.match(proto.text, /__proto__: is not allowed as a key/, path);
    const ctor = await postJson(
      h.url + path,
      // Tiny generations: the point is what the keys do, not the text.
      '{"inputs":"hi","prompt":"hi","max_tokens":1,"parameters":{"max_new_tokens":1},' +
        '"constructor":{"prototype":{"polluted":1}},"toString":1}',
    );
    assert.ok(ctor.status < 500, `${path}: ${ctor.status}`);
  }
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(Object.prototype.toString.call([]), '[object Array]');
  assert.equal((await fetch(`${h.url}/health`)).status, 200);
});

// Found by the fuzzer (test/fuzz/): requests no handler answers, in the family's shape.
test('another method on a known path is 405 in the family shape (was plain text, or 501)', async () => {
  const cases: [string, string, (j: { error: unknown; error_type?: unknown }) => void][] = [
    [
      'PUT',
      '/v1/chat/completions',
      (j) => assert.equal((j.error as { type: string }).type, 'invalid_request_error'),
    ],
    ['DELETE', '/generate', (j) => assert.equal(j.error_type, 'validation')],
    ['PATCH', `/v2/models/${MODEL_NAME}/infer`, (j) => assert.equal(typeof j.error_type, 'string')],
    ['PROPFIND', '/infer', (j) => assert.equal(typeof j.error_type, 'string')],
  ];
  for (const [method, path, shape] of cases) {
    const r = await fetch(h.url + path, { method });
    assert.equal(r.status, 405, `${method} ${path}`);
    assert.match(r.headers.get('content-type') ?? '', /json/);
    const j = (await r.json()) as { error: unknown; error_type?: unknown };
    shape(j);
  }
});

test('404s and /versions/ under OpenAI paths are in the OpenAI shape', async () => {
  for (const path of ['/v1/models/versions/2', '/v1/completions/x', `/v1/models/${MODEL_NAME}/versions/1`]) {
    const r = await fetch(h.url + path);
    assert.equal(r.status, 404, path);
    const j = (await r.json()) as { error: { message: string; type: string; code: string | null } };
    assert.equal(typeof j.error.message, 'string', path);
    assert.equal(j.error.code, 'model_not_found', path);
  }
  const v = await fetch(`${h.url}/v2/models/${MODEL_NAME}/versions/1/infer`, { method: 'POST' });
  assert.equal(((await v.json()) as { error_type: string }).error_type, 'NotFoundError');
});

// Found by the fuzzer: values that reached the engine client and failed there with 424.
test('1e309 and negative seeds are 4xx naming the field, not generation errors', async () => {
  const inf = await postJson(
    `${h.url}/v2/models/${MODEL_NAME}/infer`,
    '{"id":"x","inputs":[{"name":"input0","shape":[1,2],"datatype":"UINT32","data":[1,2]}],"parameters":{"top_k":1e309}}',
  );
  assert.equal(inf.status, 422, inf.text);
  assert.match(inf.json.error, /parameters\.top_k: the number is too large to represent/);
  const vllm = await postJson(`${h.url}/generate`, { prompt: 'Hi', max_tokens: 2, seed: -5 });
  assert.equal(vllm.status, 422, vllm.text);
  // -1 is llama.cpp's "random"; below it nothing is a seed.
  assert.match(vllm.json.error, /seed: must be >= -1/);
  const openai = await postJson(`${h.url}/v1/completions`, {
    model: MODEL_NAME,
    prompt: 'Hi',
    max_tokens: 2,
    seed: -5,
  });
  assert.equal(openai.status, 400, openai.text);
  assert.equal(openai.json.error.param, 'seed');
});

test('integers beyond int32 in caps are served (saturated); in counts refused naming the field', async () => {
  const huge = '123456789012345678901234567890';
  const capped = await postJson(
    `${h.url}/v1/chat/completions`,
    `{"model":"${MODEL_NAME}","messages":[{"role":"user","content":"Hi"}],"max_tokens":${huge}}`,
  );
  assert.equal(capped.status, 200, capped.text);
  const topK = await postJson(`${h.url}/generate`, '{"prompt":"Hi","max_tokens":2,"top_k":1e308}');
  assert.equal(topK.status, 200, topK.text);
  const truncate = await postJson(
    `${h.url}/v2/models/${MODEL_NAME}/generate`,
    `{"text_input":"Hi","parameters":{"max_new_tokens":2,"truncate":${huge}}}`,
  );
  assert.equal(truncate.status, 200, truncate.text);
  const n = await postJson(
    `${h.url}/v1/completions`,
    `{"model":"${MODEL_NAME}","prompt":"Hi","max_tokens":2,"n":${huge}}`,
  );
  assert.equal(n.status, 400, n.text);
  assert.match(n.json.error.message, /\bn\b/);
});
