/** TGI and vLLM on /generate (told apart by body shape), /generate_stream, POST /, /info, /health — plain HTTP + eventsource-parser. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MODEL_NAME, getJson, postJson, startHarness, type Harness } from './gateways-harness.js';
import { postSse } from './gateways-sse.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(async () => {
  await h?.close();
});

const inputs = 'The capital of France is';

describe('TGI', () => {
  test('/generate with details, and /generate_stream agree token by token', async () => {
    const r = await postJson(`${h.url}/generate`, {
      inputs,
      parameters: { max_new_tokens: 5, details: true, decoder_input_details: true },
    });
    assert.equal(r.status, 200);
    const d = r.json.details;
    assert.equal(d.generated_tokens, 5);
    assert.equal(d.finish_reason, 'length');
    assert.equal(d.seed, null);
    assert.equal(d.tokens.length, 5);
    assert.equal(d.tokens.map((t: { text: string }) => t.text).join(''), r.json.generated_text);
    assert.ok(
      d.tokens.every((t: { logprob: number; id: number }) => t.logprob <= 0 && Number.isInteger(t.id)),
    );
    assert.ok(d.prefill.length > 0);

    const s = await postSse(`${h.url}/generate_stream`, { inputs, parameters: { max_new_tokens: 5 } });
    assert.equal(s.status, 200);
    assert.match(s.contentType, /text\/event-stream/);
    const frames = s.events.map((e) => JSON.parse(e.data));
    assert.equal(frames.length, 5);
    assert.deepEqual(
      frames.map((f) => f.token.id),
      d.tokens.map((t: { id: number }) => t.id),
    );
    assert.ok(frames.slice(0, -1).every((f) => f.generated_text === null && f.details === null));
    const last = frames.at(-1);
    assert.equal(last.generated_text, r.json.generated_text);
    assert.equal(last.details.finish_reason, 'length');
    assert.equal(last.details.generated_tokens, 5);
    assert.ok(last.details.input_length > 0);
  });

  test('return_full_text, stop sequences, seeded sampling', async () => {
    const full = await postJson(`${h.url}/generate`, {
      inputs,
      parameters: { max_new_tokens: 3, return_full_text: true },
    });
    assert.ok(full.json.generated_text.startsWith(inputs));
    const stop = await postJson(`${h.url}/generate`, {
      inputs: 'Count: 1, 2, 3,',
      parameters: { max_new_tokens: 20, stop: [' 5'], details: true },
    });
    assert.equal(stop.json.details.finish_reason, 'stop_sequence');
    assert.ok(!stop.json.generated_text.includes(' 5'));
    const p = { max_new_tokens: 6, do_sample: true, temperature: 0.9, seed: 7, details: true };
    const a = await postJson(`${h.url}/generate`, { inputs, parameters: p });
    const b = await postJson(`${h.url}/generate`, { inputs, parameters: p });
    assert.equal(a.json.generated_text, b.json.generated_text);
    assert.equal(a.json.details.seed, 7);
  });

  test('best_of: the best candidate answers, the others are details.best_of_sequences', async () => {
    const parameters = { max_new_tokens: 5, do_sample: true, temperature: 1.5, best_of: 3, details: true };
    const r = await postJson(`${h.url}/generate`, { inputs, parameters });
    assert.equal(r.status, 200, r.text);
    const d = r.json.details;
    assert.equal(d.best_of_sequences.length, 2);
    const logprob = (tokens: { logprob: number }[]) => tokens.reduce((s, t) => s + t.logprob, 0);
    for (const other of d.best_of_sequences) {
      assert.equal(typeof other.generated_text, 'string');
      assert.equal(other.tokens.length, other.generated_tokens);
      assert.ok(['length', 'eos_token'].includes(other.finish_reason));
      assert.equal(typeof other.seed, 'number');
      // Ranked as the engine ranks best_of: by cumulative logprob.
      assert.ok(logprob(d.tokens) >= logprob(other.tokens) - 1e-4);
    }
    const plain = await postJson(`${h.url}/generate`, { inputs, parameters: { ...parameters, best_of: 1 } });
    assert.equal(plain.json.details.best_of_sequences, undefined);
  });

  test('POST / answers an array, or a stream when stream is true', async () => {
    const r = await postJson(`${h.url}/`, { inputs, parameters: { max_new_tokens: 2 } });
    assert.equal(r.status, 200);
    assert.ok(Array.isArray(r.json) && typeof r.json[0].generated_text === 'string');
    const s = await postSse(`${h.url}/`, { inputs, stream: true, parameters: { max_new_tokens: 2 } });
    assert.equal(s.events.length, 2);
    const bad = await postJson(`${h.url}/`, { inputs, stream: 'yes' });
    assert.equal(bad.status, 422);
    assert.equal(bad.json.error_type, 'validation');
  });

  test('validation errors are 422 naming the field; unsupported parameters are refused', async () => {
    const cases: [unknown, RegExp][] = [
      [{ inputs, parameters: { temperature: 0 } }, /parameters\.temperature/],
      [{ inputs, parameters: { top_p: 1 } }, /parameters\.top_p/],
      [{ inputs, parameters: { max_new_tokens: 'ten' } }, /parameters\.max_new_tokens/],
      [{ inputs: '' }, /inputs/],
      [{ inputs, parameters: { watermark: true, max_new_tokens: 2 } }, /watermark.*not supported/],
      [{ inputs, parameters: { best_of: 2, max_new_tokens: 2 } }, /best_of/],
      [{ inputs, parameters: { max_new_tokens: 0 } }, /parameters\.max_new_tokens: must be >= 1/],
    ];
    for (const [body, message] of cases) {
      const r = await postJson(`${h.url}/generate`, body);
      assert.equal(r.status, 422, JSON.stringify(body));
      assert.equal(r.json.error_type, 'validation');
      assert.match(r.json.error, message);
    }
    const json = await postJson(`${h.url}/generate_stream`, '{"inputs":');
    assert.equal(json.status, 422);
    const adapter = await postJson(`${h.url}/generate`, { inputs, parameters: { adapter_id: 'missing' } });
    assert.equal(adapter.status, 404);
  });

  test('/info and /health', async () => {
    const info = await getJson(`${h.url}/info`);
    assert.equal(info.status, 200);
    assert.equal(info.json.model_id, MODEL_NAME);
    assert.equal(info.json.max_total_tokens, 1024);
    assert.equal(info.json.models[0].model_id, MODEL_NAME);
    assert.equal(info.json.model_device_type, 'cpu');
    const health = await fetch(`${h.url}/health`);
    assert.equal(health.status, 200);
    assert.equal(await health.text(), '');
  });

  test('fields TGI does not define are answered and named as ignored', async () => {
    const r = await postJson(`${h.url}/generate`, {
      inputs: 'Hi',
      options: { wait_for_model: true },
      parameters: { max_new_tokens: 2, frequency_penalty: 0, foo: 1 },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-prism-ignored-fields'), 'options, parameters.foo');
  });
});

describe('vLLM /generate', () => {
  test('text list with the prompt prefixed, n sequences', async () => {
    const r = await postJson(`${h.url}/generate`, {
      prompt: inputs,
      max_tokens: 4,
      n: 2,
      temperature: 0.8,
      seed: 3,
    });
    assert.equal(r.status, 200);
    assert.equal(r.json.text.length, 2);
    for (const t of r.json.text) assert.ok(t.startsWith(inputs) && t.length > inputs.length);
  });

  test('streaming: NUL-terminated JSON objects with the text so far', async () => {
    const whole = await postJson(`${h.url}/generate`, { prompt: inputs, max_tokens: 4, temperature: 0 });
    const res = await fetch(`${h.url}/generate`, {
      method: 'POST',
      body: JSON.stringify({ prompt: inputs, max_tokens: 4, temperature: 0, stream: true }),
    });
    const raw = await res.text();
    const parts = raw.split('\0').filter((p) => p !== '');
    assert.ok(parts.length >= 2);
    const last = JSON.parse(parts.at(-1)!);
    assert.deepEqual(last.text, whole.json.text);
  });

  test('a body with neither inputs nor prompt is 422 (double-wrapped as MindIE does)', async () => {
    const r = await postJson(`${h.url}/generate`, { text: 'x' });
    assert.equal(r.status, 422);
    assert.equal(r.json.error_type, 'Input Validation Error');
    assert.equal(JSON.parse(r.json.error).error_type, 'validation');
    const t = await postJson(`${h.url}/generate`, { prompt: inputs, top_p: 2 });
    assert.equal(t.status, 422);
    assert.match(t.json.error, /top_p/);
  });
});
