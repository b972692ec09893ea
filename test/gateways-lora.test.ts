/**
 * LoRA through the gateways, over the real gRPC path: the management routes (MindIE's and
 * vLLM's statuses and texts), model listing with `parent`, and every family picking an
 * adapter — OpenAI `model` (also with the OpenAI SDK), vLLM /generate `model`, TGI
 * `parameters.adapter_id`, KServe `{model_name}` in the path, native /infer `model` — each
 * giving the adapter's own greedy text; an unknown adapter is a 404 in the family's shape.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { GenerateRequest } from '../engine/types.js';
import { adapterFixture } from './adapter-fixtures.js';
import { getJson, MODEL_NAME, postJson, startHarness, type Harness } from './gateways-harness.js';

let h: Harness;
const PROMPT = 'The capital of France is';
const N = 6;

before(async () => {
  h = await startHarness(undefined, {
    lora: {
      maxLoras: 4,
      maxLoraRank: 16,
      modules: [{ name: 'qv', path: adapterFixture('default-qv').path }],
    },
  });
});
after(async () => {
  await h?.close();
});

async function engineText(adapter: string | undefined): Promise<string> {
  const r: GenerateRequest = {
    prompt: { kind: 'text', text: PROMPT },
    params: { maxNewTokens: N, doSample: false, ignoreEos: true },
    ...(adapter ? { adapter } : {}),
  };
  let text = '';
  for await (const ev of h.engine.generate(r)) if (ev.type === 'finish') text = ev.text;
  return text;
}

describe('management routes', () => {
  const load = (body: unknown) => postJson(`${h.managementUrl}/v1/load_lora_adapter`, body);
  const unload = (body: unknown) => postJson(`${h.managementUrl}/v1/unload_lora_adapter`, body);

  test('load and unload with the reference statuses and texts', async () => {
    const path = adapterFixture('default-all').path;
    const ok = await load({ lora_name: 'all', lora_path: path });
    assert.deepEqual([ok.status, ok.text], [200, "Success: LoRA adapter 'all' added successfully."]);
    assert.match(ok.headers.get('content-type') ?? '', /text\/plain/);
    const again = await load({ lora_name: 'all', lora_path: path });
    assert.deepEqual([again.status, again.text], [400, "The LoRA adapter 'all' has already been added."]);
    for (const name of ['-x', '', 'a b', 'x'.repeat(257)]) {
      const r = await load({ lora_name: name, lora_path: path });
      assert.deepEqual([r.status, r.text], [503, 'Input invalid lora name'], name);
    }
    assert.deepEqual([(await load({ lora_path: path })).status], [503]);
    for (const p of ['rel/dir', '/a/../b', '', '/' + 'p'.repeat(4095)]) {
      const r = await load({ lora_name: 'p', lora_path: p });
      assert.deepEqual([r.status, r.text], [503, 'Input invalid lora path'], p.slice(0, 20));
    }
    const notJson = await load('{"lora_name": ');
    assert.deepEqual([notJson.status, notJson.text], [200, 'Req body converts to json fail.']);
    const ghost = await load({ lora_name: 'ghost', lora_path: '/nonexistent/adapter' });
    assert.equal(ghost.status, 404);
    assert.match(ghost.text, /Loading LoRA 'ghost' failed: No adapter found for \/nonexistent\/adapter/);
    const big = await load({ lora_name: 'big', lora_path: adapterFixture('default-r64').path });
    assert.deepEqual([big.status, big.text], [400, 'LoRA rank 64 is greater than max_lora_rank 16.']);
    const never = await unload({ lora_name: 'never' });
    assert.deepEqual([never.status, never.text], [404, "The LoRA adapter 'never' cannot be found."]);
    const bye = await unload({ lora_name: 'all' });
    assert.deepEqual([bye.status, bye.text], [200, "Success: LoRA adapter 'all' removed successfully."]);
  });

  test('a body over the shared limits is a 4xx naming the limit, never a 500 (fuzz regression)', async () => {
    // Found by the fuzzer: a deeply nested lora_name escaped the routes as a 500.
    const deep = '{"lora_name":' + '['.repeat(5000) + ']'.repeat(5000) + '}';
    for (const route of ['/v1/unload_lora_adapter', '/V1/LOAD_LORA_ADAPTER']) {
      const r = await postJson(`${h.managementUrl}${route}`, deep);
      assert.equal(r.status, 400, route);
      assert.match(r.headers.get('content-type') ?? '', /text\/plain/);
      assert.match(r.text, /depth|nest/i, route);
    }
  });

  test('GET /v1/models lists the base and the adapters; /v1/models/{adapter} and /v2/models/{adapter} answer', async () => {
    const list = await getJson(`${h.url}/v1/models`);
    assert.deepEqual(
      list.json.data.map((m: { id: string; parent: string | null }) => [m.id, m.parent]),
      [
        [MODEL_NAME, null],
        ['qv', MODEL_NAME],
      ],
    );
    assert.equal((await getJson(`${h.url}/v1/models/qv`)).json.parent, MODEL_NAME);
    assert.equal((await getJson(`${h.url}/v2/models/qv`)).status, 200);
    assert.equal((await getJson(`${h.url}/v2/models/nope`)).status, 404);
    assert.equal((await getJson(`${h.url}/v1/models/nope`)).status, 404);
  });
});

test('metrics: the vLLM lora_requests_info gauge beside the MindIE names', async () => {
  const long = postJson(`${h.url}/v1/completions`, {
    model: 'qv',
    prompt: PROMPT,
    max_tokens: 40,
    temperature: 0,
  });
  let seen = '';
  for (let i = 0; i < 50 && !seen.includes('running_lora_adapters="qv"'); i++) {
    seen = await (await fetch(`${h.metricsUrl}/metrics`)).text();
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.match(
    seen,
    /^lora_requests_info\{model_name="smollm2-test",running_lora_adapters="qv",waiting_lora_adapters="",max_lora="4"\} \d+/m,
  );
  assert.match(seen, /^vllm:lora_requests_info\{/m);
  assert.match(seen, /^num_requests_running\{/m);
  assert.equal((await long).status, 200);
});

describe('every family picks an adapter', () => {
  let base: string;
  let qv: string;
  before(async () => {
    base = await engineText(undefined);
    qv = await engineText('qv');
    assert.notEqual(qv, base, 'the adapter changes the greedy text');
  });

  test('OpenAI completions (fetch and the OpenAI SDK) and chat', async () => {
    const r = await postJson(`${h.url}/v1/completions`, {
      model: 'qv',
      prompt: PROMPT,
      max_tokens: N,
      temperature: 0,
    });
    assert.equal(r.status, 200);
    assert.equal(r.json.model, 'qv');
    assert.equal(r.json.choices[0].text, qv);
    const sdk = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: 'none' });
    const c = await sdk.completions.create({ model: 'qv', prompt: PROMPT, max_tokens: N, temperature: 0 });
    assert.equal(c.choices[0]!.text, qv);
    const b = await sdk.completions.create({
      model: MODEL_NAME,
      prompt: PROMPT,
      max_tokens: N,
      temperature: 0,
    });
    assert.equal(b.choices[0]!.text, base);
    const chat = await sdk.chat.completions.create({
      model: 'qv',
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 4,
    });
    assert.equal(chat.model, 'qv');
    const missing = await postJson(`${h.url}/v1/completions`, {
      model: 'nope',
      prompt: PROMPT,
      max_tokens: 2,
    });
    assert.equal(missing.status, 404);
    assert.match(missing.json.error.message, /Model nope not found/);
  });

  test('vLLM /generate model, TGI parameters.adapter_id', async () => {
    const v = await postJson(`${h.url}/generate`, {
      prompt: PROMPT,
      model: 'qv',
      max_tokens: N,
      temperature: 0,
    });
    assert.equal(v.status, 200);
    assert.deepEqual(v.json.text, [PROMPT + qv]);
    const t = await postJson(`${h.url}/generate`, {
      inputs: PROMPT,
      parameters: { adapter_id: 'qv', max_new_tokens: N, do_sample: false },
    });
    assert.equal(t.status, 200);
    assert.equal(t.json.generated_text, qv);
    const missing = await postJson(`${h.url}/generate`, {
      inputs: PROMPT,
      parameters: { adapter_id: 'nope' },
    });
    assert.equal(missing.status, 404);
    assert.equal(typeof missing.json.error, 'string');
  });

  test('KServe {model_name} = adapter id, native /infer model', async () => {
    const k = await postJson(`${h.url}/v2/models/qv/generate`, {
      text_input: PROMPT,
      parameters: { max_new_tokens: N, do_sample: false },
    });
    assert.equal(k.status, 200);
    assert.equal(k.json.model_name, 'qv');
    assert.equal(k.json.text_output, qv);
    const n = await postJson(`${h.url}/infer`, {
      inputs: PROMPT,
      model: 'qv',
      parameters: { max_new_tokens: N, do_sample: false },
    });
    assert.equal(n.status, 200);
    assert.equal(n.json.generated_text, qv);
    const missing = await postJson(`${h.url}/v2/models/nope/generate`, { text_input: PROMPT });
    assert.equal(missing.status, 404);
    assert.match(missing.json.error, /Model nope not found/);
    const nativeMissing = await postJson(`${h.url}/infer`, { inputs: PROMPT, model: 'nope' });
    assert.equal(nativeMissing.status, 404);
  });
});
