/**
 * KServe v2, native (MindIE) and management routes on their listeners, Prometheus and JSON
 * metrics, `/versions/…` refused, and the graceful /stopService (last). /infer's `image_url`
 * items on this text-only model: a malformed one is a 422 naming it, a good one is decoded and
 * refused by the engine, naming it (served on a vision model in test/vision/vision-anthropic.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hostileKit } from './fuzz/hostile-images.js';
import { MODEL_NAME, getJson, postJson, startHarness, waitIdle, type Harness } from './gateways-harness.js';
import { postSse } from './gateways-sse.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(async () => {
  await h?.close();
});

const m = `/v2/models/${MODEL_NAME}`;

describe('KServe v2', () => {
  test('server and model metadata, config, readiness', async () => {
    const v2 = await getJson(`${h.url}/v2`);
    assert.equal(v2.status, 200);
    assert.equal(typeof v2.json.version, 'string');
    assert.equal(typeof v2.json.extensions.max_prefill_tokens, 'number');
    const meta = await getJson(`${h.url}${m}`);
    assert.deepEqual(meta.json.inputs, [{ name: 'input0', shape: [-1], datatype: 'UINT32' }]);
    const cfg = await getJson(`${h.url}${m}/config`);
    assert.equal(cfg.json.max_seq_len, 1024);
    assert.equal(cfg.json.model_weight_path, 'SmolLM2-135M-Instruct.Q4_1.gguf');
    for (const url of [h.url, h.managementUrl]) {
      assert.equal((await fetch(`${url}/v2/health/live`)).status, 200);
      assert.equal((await fetch(`${url}/v2/health/ready`)).status, 200);
      assert.equal((await fetch(`${url}${m}/ready`)).status, 200);
    }
    const unknown = await getJson(`${h.url}/v2/models/nope`);
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.json, { error: 'Model nope not found.', error_type: 'NotFoundError' });
    assert.equal((await fetch(`${h.url}/v2/models/nope/ready`)).status, 404);
  });

  test('/infer with UINT32 tensors equals /infer_token and the text routes', async () => {
    const ids = await h.client.tokenize('The capital of France is', true);
    const r = await postJson(`${h.url}${m}/infer`, {
      id: 'req-1',
      inputs: [{ name: 'input0', shape: [1, ids.length], datatype: 'UINT32', data: ids }],
      outputs: [{ name: 'output0' }],
      parameters: { max_new_tokens: 4 },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.id, 'req-1');
    const out = r.json.outputs[0];
    assert.equal(out.datatype, 'UINT32');
    assert.deepEqual(out.shape, [1, 4]);
    const native = await postJson(`${h.url}/infer_token`, {
      input_id: ids,
      parameters: { max_new_tokens: 4, details: true },
    });
    assert.deepEqual(native.json.details.generated_token_ids, out.data);
    const text = await postJson(`${h.url}${m}/generate`, {
      text_input: 'The capital of France is',
      parameters: { max_new_tokens: 4, details: true },
    });
    assert.equal(text.json.model_name, MODEL_NAME);
    assert.equal(text.json.text_output, native.json.generated_text);
    assert.equal(text.json.details.generated_tokens, 4);
  });

  test('/infer input errors are 422 naming the field', async () => {
    const cases: [unknown, RegExp][] = [
      [
        { inputs: [{ name: 'input0', shape: [1, 2], datatype: 'FP32', data: [1, 2] }] },
        /inputs\[0\]\.datatype/,
      ],
      [
        { inputs: [{ name: 'input0', shape: [1, 3], datatype: 'UINT32', data: [1, 2] }] },
        /inputs\[0\]\.shape/,
      ],
      [
        { inputs: [{ name: 'input0', shape: [2], datatype: 'UINT32', data: [1, -2] }] },
        /inputs\[0\]\.data\[1\]/,
      ],
      [{ id: 'bad id!', inputs: [{ name: 'input0', shape: [1], datatype: 'UINT32', data: [1] }] }, /id/],
      [{ inputs: [] }, /inputs/],
    ];
    for (const [body, message] of cases) {
      const r = await postJson(`${h.url}${m}/infer`, body);
      assert.equal(r.status, 422, JSON.stringify(body));
      assert.equal(r.json.error_type, 'Input Validation Error');
      assert.match(r.json.error, message);
    }
  });

  test('/generate_stream SSE, and stopInfer ends a live request early', async () => {
    const s = await postSse(`${h.url}${m}/generate_stream`, {
      id: 'gs-1',
      text_input: 'Hello',
      parameters: { max_new_tokens: 3 },
    });
    assert.equal(s.status, 200);
    const frames = s.events.map((e) => JSON.parse(e.data));
    assert.ok(frames.length >= 2);
    assert.equal(frames.at(-1).details.finish_reason, 'length');
    assert.ok(frames.every((f) => f.id === 'gs-1' && f.model_name === MODEL_NAME));

    const long = postJson(`${h.url}${m}/generate`, {
      id: 'to-stop',
      text_input: 'Tell me a long story.',
      parameters: { max_new_tokens: 600, ignore_eos: true },
    });
    for (let i = 0; i < 100 && (await h.client.status()).running === 0; i++)
      await new Promise((r) => setTimeout(r, 50));
    const stop = await postJson(`${h.url}${m}/stopInfer`, { id: 'to-stop' });
    assert.equal(stop.status, 200);
    assert.deepEqual(stop.json, { id: 'to-stop' });
    const answer = await long;
    assert.equal(answer.status, 200);
    await waitIdle(h.client, 3000);
    const unknown = await postJson(`${h.url}${m}/stopInfer`, { id: 'no-such-request' });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error, 'RequestId is no-such-request not found.');
  });
});

describe('native', () => {
  test('/infer text, list form and stream; input conflicts', async () => {
    const a = await postJson(`${h.url}/infer`, { inputs: 'Hello there', parameters: { max_new_tokens: 3 } });
    assert.equal(a.status, 200);
    assert.equal(typeof a.json.generated_text, 'string');
    assert.equal(a.json.details, undefined);
    const b = await postJson(`${h.url}/infer`, {
      inputs: [{ type: 'text', text: 'Hello there' }],
      parameters: { max_new_tokens: 3 },
    });
    assert.equal(b.json.generated_text, a.json.generated_text);
    // Fields MindIE does not define are answered and named, never dropped unseen.
    const extra = await postJson(`${h.url}/infer`, {
      inputs: 'Hello there',
      max_tokens: 99,
      parameters: { max_new_tokens: 3, frobnicate: 1 },
    });
    assert.equal(extra.status, 200);
    assert.equal(extra.json.generated_text, a.json.generated_text);
    assert.equal(extra.headers.get('x-prism-ignored-fields'), 'max_tokens, parameters.frobnicate');
    const s = await postSse(`${h.url}/infer`, {
      inputs: 'Hello there',
      stream: true,
      parameters: { max_new_tokens: 3, details: true },
    });
    const frames = s.events.map((e) => JSON.parse(e.data));
    const last = frames.at(-1);
    assert.equal(last.generated_text, a.json.generated_text);
    assert.equal(last.details.generated_tokens, 3);
    assert.deepEqual(last.token, { id: [], text: null });
    const conflict = await postJson(`${h.url}/infer`, { inputs: 'x', input_id: [1] });
    assert.equal(conflict.status, 422);
    assert.match(conflict.json.error, /Input conflict/);
  });

  test('/infer image_url items: a malformed one is a 422 naming it; a text-only model refuses a good one, naming it', async () => {
    const png = `data:image/png;base64,${(await hostileKit()).valid.png.toString('base64')}`;
    const text = { type: 'text', text: 'What is this?' };
    const cases: [object[], string][] = [
      [
        [{ type: 'image_url' }],
        'inputs[0].image_url: must be a URL (data:, file://, http(s)) or an absolute local path',
      ],
      [
        [text, { type: 'image_url', image_url: { url: png } }],
        'inputs[1].image_url: must be a URL (data:, file://, http(s)) or an absolute local path',
      ],
      [[{ type: 'text', text: 'a', image_url: png }], "inputs[0].image_url: is not a field of a 'text' item"],
      [
        [{ type: 'image_url', image_url: png, text: 'a' }],
        "inputs[0].text: is not a field of a 'image_url' item",
      ],
      [
        [{ type: 'image_url', image_url: 'data:image/png;base64,ab!d' }],
        "inputs[0].image_url: a data: URL's data is not valid base64",
      ],
      [
        [{ type: 'image_url', image_url: '/no/such/cat.png' }],
        'inputs[0].image_url: file:// URLs are refused: the server was started without --allowed-local-media-path',
      ],
      [
        [text, { type: 'image_url', image_url: png }],
        'inputs[1].image_url: image input is not supported by this model: smollm2-test is a text-only model',
      ],
    ];
    for (const [inputs, message] of cases) {
      const r = await postJson(`${h.url}/infer`, { inputs, parameters: { max_new_tokens: 2 } });
      assert.equal(r.status, 422, `${JSON.stringify(inputs).slice(0, 120)}: ${r.text}`);
      assert.equal(r.json.error, message);
    }
  });

  test('/v1/tokenizer counts tokens', async () => {
    const r = await postJson(`${h.url}/v1/tokenizer`, { inputs: 'Hello world' });
    const ids = await h.client.tokenize('Hello world', true);
    assert.equal(r.json.token_number, ids.length);
    assert.equal(r.json.tokens.join(''), 'Hello world');
    const nodecode = await postJson(`${h.url}/v1/tokenizer`, { inputs: 'Hello world', do_decode: false });
    assert.deepEqual(nodecode.json.tokens, []);
    assert.equal((await postJson(`${h.url}/v1/tokenizer`, { inputs: 3 })).status, 422);
  });

  test('control routes on the management listener', async () => {
    const slots = await getJson(`${h.managementUrl}${m}/getSlotCount`);
    assert.equal(slots.json.total_slots, 16);
    assert.equal(slots.json.free_slots, 16);
    assert.ok(slots.json.available_tokens_length > 0);
    const cfg = await getJson(`${h.managementUrl}/v1/config`);
    assert.equal(cfg.json.modelName, MODEL_NAME);
    assert.equal(cfg.json.maxSeqLen, 1024);
    const v1 = await getJson(`${h.managementUrl}/v1/status`);
    assert.equal(v1.json.service.currentRole, 'none');
    assert.equal(v1.json.service.device, 'cpu', 'the device the model runs on');
    assert.match(v1.json.service.deviceName, /^CPU \(/);
    assert.equal(v1.json.resource.runningRequestNum, 0);
    const v2 = await getJson(`${h.managementUrl}/v2/status`);
    assert.equal(typeof v2.json.resource.totalAvailNpuBlockNum, 'number');
    const role = await postJson(`${h.managementUrl}/v1/role/prefill`, { local: {}, peers: [] });
    assert.equal(role.status, 200);
    assert.deepEqual(role.json, { result: 'OK' });
    assert.equal((await getJson(`${h.managementUrl}/v2/status`)).json.service.currentRole, 'prefill');
    assert.equal((await postJson(`${h.managementUrl}/v2/role/flex`, {})).status, 404);
    // A prefill engine takes no whole request (split prefill/decode): back to flex (mixed),
    // which every later request and the timed health check need.
    assert.equal((await postJson(`${h.managementUrl}/v1/role/flex`, { local: {}, peers: [] })).status, 200);
    const timed = await getJson(`${h.managementUrl}/health/timed-30`);
    assert.deepEqual(timed.json, { status: 'healthy' });
    const badTimed = await getJson(`${h.managementUrl}/health/timed-0`);
    assert.equal(badTimed.status, 404);
    assert.match(badTimed.json.error, /Wait time should be in range/);
    const lora = await postJson(`${h.managementUrl}/v1/load_lora_adapter`, {
      lora_name: 'a',
      lora_path: '/x',
    });
    // This engine has no LoRA limits configured: dynamic loading is off.
    assert.equal(lora.status, 503);
    assert.match(lora.text, /dynamic LoRA loading is off/);
    // Control routes are not on the service listener.
    assert.equal((await fetch(`${h.url}/v1/config`)).status, 404);
  });

  test('metrics: Prometheus (MindIE and vLLM names) and JSON', async () => {
    const text = await (await fetch(`${h.metricsUrl}/metrics`)).text();
    for (const name of [
      'request_received_total',
      'generation_tokens_total',
      'num_requests_running',
      'npu_cache_usage_perc',
      'time_to_first_token_seconds_bucket',
      'e2e_request_latency_seconds_count',
      'vllm:num_requests_running',
      'vllm:generation_tokens_total',
      'vllm:time_to_first_token_seconds_bucket',
    ]) {
      assert.match(text, new RegExp(`^${name}\\{[^}]*model_name="${MODEL_NAME}"`, 'm'), name);
    }
    const generated = Number(/^generation_tokens_total\{[^}]*\} (\d+)/m.exec(text)![1]);
    assert.ok(generated > 0);
    const json = await getJson(`${h.managementUrl}/metrics-json`);
    assert.deepEqual(
      json.json.result.map((r: { metric: { __name__: string }[] }) => r.metric[0].__name__),
      ['TTFT', 'TBT', 'waitingInferRequestNum', 'processingInferRequestNum', 'remainBlocks'],
    );
    assert.ok(json.json.result.every((r: { value: unknown }) => typeof r.value === 'string'));
  });

  test('/versions/{v} is refused with 404, unknown routes are 404', async () => {
    const v = await postJson(`${h.url}${m}/versions/1/infer`, {});
    assert.equal(v.status, 404);
    assert.match(v.json.error, /versions are not supported/);
    assert.equal((await fetch(`${h.url}/nowhere`)).status, 404);
  });
});

test('/stopService waits for running requests, then new requests get 503', async () => {
  const running = postJson(`${h.url}/generate`, {
    inputs: 'Once upon a time',
    parameters: { max_new_tokens: 8 },
  });
  for (let i = 0; i < 100 && (await h.client.status()).running === 0; i++)
    await new Promise((r) => setTimeout(r, 20));
  let stopped = false;
  h.gateway.context.state.once('stopped', () => (stopped = true));
  const stop = fetch(`${h.managementUrl}/stopService`);
  await new Promise((r) => setTimeout(r, 50));
  const refused = await postJson(`${h.url}/generate`, { inputs: 'x', parameters: { max_new_tokens: 1 } });
  assert.equal(refused.status, 503);
  const finished = await running;
  assert.equal(finished.status, 200);
  assert.equal((await stop).status, 200);
  await new Promise((r) => setTimeout(r, 50));
  assert.ok(stopped);
  assert.equal((await fetch(`${h.url}/health`)).status, 503);
});
