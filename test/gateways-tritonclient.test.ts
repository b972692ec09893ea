/**
 * `tritonclient.http` (pinned in requirements-dev.in) with its defaults on the real default
 * model: binary tensor data in and out, sync and async, the same tokens as JSON tensors, the
 * repository index; and malformed binary bodies refused naming what is wrong.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { MODEL_NAME, startHarness, type Harness } from './gateways-harness.js';

const run = promisify(execFile);
let h: Harness;
before(async () => {
  h = await startHarness();
});
after(async () => {
  await h?.close();
});

test('tritonclient.http defaults: binary tensors both ways, sync and async, match JSON tensors', async () => {
  const ids = await h.engine.tokenize('The capital of France is', true);
  const host = h.url.replace(/^http:\/\//, '');
  const { stdout } = await run('python3', ['test/clients/triton_http.py', host, MODEL_NAME, ids.join(',')], {
    timeout: 240000,
  });
  const r = JSON.parse(stdout);
  assert.equal(r.live, true);
  assert.equal(r.ready, true);
  assert.equal(r.metadata.name, MODEL_NAME);
  assert.deepEqual(r.index, [{ name: MODEL_NAME, version: '1', state: 'READY', reason: '' }]);
  const tokens: number[][] = r.json;
  assert.equal(tokens.length, 1);
  assert.ok(tokens[0].length >= 1 && tokens[0].length <= 6);
  assert.deepEqual(r.binary_default, tokens);
  assert.deepEqual(r.binary_named, tokens);
  assert.deepEqual(r.async_binary, tokens);
  assert.deepEqual(r.binary_default_output.parameters, { binary_data_size: 4 * tokens[0].length });
  assert.equal(r.binary_default_output.datatype, 'UINT32');
  assert.equal(r.binary_default_output.data, undefined);
  assert.deepEqual(r.json_output.data, tokens[0]);
  assert.equal(r.unknown_model.status, '404');
});

async function postBinary(header: object, bytes: Buffer, headerLength?: string) {
  const json = Buffer.from(JSON.stringify(header));
  const res = await fetch(`${h.url}/v2/models/${MODEL_NAME}/infer`, {
    method: 'POST',
    headers: {
      'content-type': 'application/octet-stream',
      'inference-header-content-length': headerLength ?? String(json.length),
    },
    body: Buffer.concat([json, bytes]),
  });
  return { status: res.status, json: (await res.json()) as { error: string; error_type: string } };
}

test('malformed binary bodies are 422 naming the field', async () => {
  const ids = Buffer.alloc(12);
  [1, 2, 3].forEach((v, i) => ids.writeUInt32LE(v, 4 * i));
  const input = (size: number, extra: object = {}) => ({
    inputs: [
      { name: 'input0', shape: [1, 3], datatype: 'UINT32', parameters: { binary_data_size: size }, ...extra },
    ],
  });
  const fp32 = {
    inputs: [{ name: 'input0', shape: [3], datatype: 'FP32', parameters: { binary_data_size: 12 } }],
  };
  const cases: [object, Buffer, string | undefined, string][] = [
    [input(12), ids, '100000', 'Inference-Header-Content-Length'],
    [input(8), ids.subarray(0, 8), undefined, 'inputs[0].parameters.binary_data_size'],
    [input(12), Buffer.concat([ids, Buffer.alloc(4)]), undefined, 'request body'],
    [input(12, { data: [1, 2, 3] }), ids, undefined, 'inputs[0].data'],
    [input(-1), ids, undefined, 'inputs[0].parameters.binary_data_size'],
    [fp32, ids, undefined, 'inputs[0].datatype'],
  ];
  for (const [header, bytes, headerLength, field] of cases) {
    const r = await postBinary(header, bytes, headerLength);
    assert.equal(r.status, 422, `${field}: ${JSON.stringify(r.json)}`);
    assert.ok(r.json.error.startsWith(field), `${field}: ${r.json.error}`);
  }
  const ok = await postBinary(input(12, { parameters: { binary_data_size: 12, max_new_tokens: 2 } }), ids);
  assert.equal(ok.status, 200, JSON.stringify(ok.json));
});
