/**
 * Hugging Face's `InferenceClient` (huggingface_hub, pinned in requirements-dev.in) out of the
 * box on the real default model: no model named (the client's placeholder name is served),
 * every `response_format` form it sends enforced, a streamed chat, TGI's text_generation.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { Ajv } from 'ajv';
import { MODEL_NAME, postJson, startHarness, type Harness } from './gateways-harness.js';

const run = promisify(execFile);
let h: Harness;
before(async () => {
  h = await startHarness();
});
after(async () => {
  await h?.close();
});

const SCHEMA = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 20 }, age: { type: 'integer', minimum: 0, maximum: 120 } },
  required: ['name', 'age'],
  additionalProperties: false,
};

test('InferenceClient: chat without a model, each response_format form enforced, stream, text_generation', async () => {
  const { stdout } = await run('python3', ['test/clients/hf_inference_client.py', h.url], {
    timeout: 240000,
  });
  const r = JSON.parse(stdout);
  assert.equal(r.plain.model, MODEL_NAME);
  assert.ok(r.plain.content.length > 0);
  const valid = new Ajv().compile(SCHEMA);
  for (const form of ['tgi_json', 'json_schema']) {
    const doc = JSON.parse(r[form].content);
    assert.ok(valid(doc), `${form}: ${r[form].content}`);
    assert.equal(r[form].finish_reason, 'stop', form);
  }
  assert.match(r.tgi_regex.content, /^(yes|no), [a-z]{3,8}$/);
  assert.equal(r.streamed, r.plain.content);
  assert.ok(r.text_generation.tokens >= 1 && r.text_generation.tokens <= 6);
  assert.equal(typeof r.text_generation.text, 'string');
});

test('response_format {"type":"json_object","value":schema} is the schema, not any JSON', async () => {
  // The schema allows only this one document: an unenforced json_object would not write it.
  const only = {
    type: 'object',
    properties: { ok: { const: true } },
    required: ['ok'],
    additionalProperties: false,
  };
  const r = await postJson(`${h.url}/v1/chat/completions`, {
    messages: [{ role: 'user', content: 'Write a JSON object about cats.' }],
    response_format: { type: 'json_object', value: only },
    max_tokens: 20,
    temperature: 0,
  });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(JSON.parse(r.json.choices[0].message.content), { ok: true });
  const bad = await postJson(`${h.url}/v1/chat/completions`, {
    messages: [{ role: 'user', content: 'x' }],
    // No preparation mode accepts it (uniqueItems now is: checked on the finished document).
    response_format: { type: 'json', value: { type: 'number', multipleOf: 0 } },
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'response_format.value.multipleOf');
  const both = await postJson(`${h.url}/v1/chat/completions`, {
    messages: [{ role: 'user', content: 'x' }],
    response_format: { type: 'regex', value: 'a+' },
    guided_regex: 'b+',
  });
  assert.equal(both.status, 400);
  assert.equal(both.json.error.param, 'guided_regex');
});

test('placeholder model names are the served model; other unknown names stay 404', async () => {
  for (const model of ['dummy', 'tgi']) {
    const r = await postJson(`${h.url}/v1/chat/completions`, {
      model,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 2,
    });
    assert.equal(r.status, 200, `${model}: ${r.text}`);
    assert.equal(r.json.model, MODEL_NAME);
  }
  const r = await postJson(`${h.url}/v1/chat/completions`, {
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(r.status, 404);
});
