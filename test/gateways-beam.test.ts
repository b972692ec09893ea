/**
 * Beam search and min_tokens through the gateways, over the real gRPC path: OpenAI completions
 * and chat (`use_beam_search`, vLLM's extra field), vLLM's `/generate` and MindIE's native
 * `/infer` return the same beams the engine finds; beams with a LoRA adapter and with a JSON
 * schema (each beam's grammar state forks with it); the refusals, each naming its field:
 * streamed beams, beam-only fields without beams, min_tokens with a constraint, beams with tools.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { GenerateRequest } from '../engine/types.js';
import { adapterFixture } from './adapter-fixtures.js';
import { MODEL_NAME, postJson, startHarness, type Harness } from './gateways-harness.js';

let h: Harness;
const PROMPT = 'The capital of France is';

before(async () => {
  h = await startHarness(undefined, {
    lora: {
      maxLoras: 2,
      maxLoraRank: 16,
      modules: [{ name: 'qv', path: adapterFixture('default-qv').path }],
    },
  });
});
after(async () => {
  await h?.close();
});

/** The engine's own beams (texts, best first), as the gateways should return them. */
async function engineBeams(width: number, n: number, maxNew: number, adapter?: string): Promise<string[]> {
  const r: GenerateRequest = {
    prompt: { kind: 'text', text: PROMPT },
    params: { useBeamSearch: true, bestOf: width, n, maxNewTokens: maxNew, ignoreEos: true },
    ...(adapter ? { adapter } : {}),
  };
  const texts: string[] = [];
  for await (const ev of h.engine.generate(r)) if (ev.type === 'finish') texts[ev.index] = ev.text;
  return texts;
}

async function allFree(): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const s = await h.engine.status();
    if (s.running === 0 && s.waiting === 0 && s.freeBlocks === s.totalBlocks) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`blocks not freed: ${JSON.stringify(await h.engine.status())}`);
}

test('every family that takes use_beam_search returns the engine beams, best first', async () => {
  const want = await engineBeams(3, 2, 6);
  const beam = { use_beam_search: true, ignore_eos: true };

  const cmpl = await postJson(`${h.url}/v1/completions`, {
    model: MODEL_NAME,
    prompt: PROMPT,
    max_tokens: 6,
    best_of: 3,
    n: 2,
    ...beam,
  });
  assert.equal(cmpl.status, 200, cmpl.text);
  assert.deepEqual(
    cmpl.json.choices.map((c: { text: string }) => c.text),
    want,
  );

  const vllm = await postJson(`${h.url}/generate`, {
    prompt: PROMPT,
    max_tokens: 6,
    best_of: 3,
    n: 2,
    ...beam,
  });
  assert.equal(vllm.status, 200, vllm.text);
  assert.deepEqual(
    vllm.json.text,
    want.map((t) => PROMPT + t),
  );

  const infer = await postJson(`${h.url}/infer`, {
    inputs: PROMPT,
    stream: false,
    parameters: { max_new_tokens: 6, best_of: 3, use_beam_search: true, ignore_eos: true },
  });
  assert.equal(infer.status, 200, infer.text);
  assert.equal(infer.json.generated_text, want[0]);

  // Chat: the width is n when best_of is absent (vLLM's current rule).
  const chat = await postJson(`${h.url}/v1/chat/completions`, {
    model: MODEL_NAME,
    messages: [{ role: 'user', content: 'Name a colour.' }],
    max_tokens: 5,
    n: 3,
    ...beam,
  });
  assert.equal(chat.status, 200, chat.text);
  const texts = chat.json.choices.map((c: { message: { content: string } }) => c.message.content);
  assert.equal(new Set(texts).size, 3, `three different beams: ${JSON.stringify(texts)}`);
  await allFree();
});

test('beams with a LoRA adapter: one beam is the adapter greedy text, wider searches return sorted beams', async () => {
  const greedy = await postJson(`${h.url}/v1/completions`, {
    model: 'qv',
    prompt: PROMPT,
    max_tokens: 6,
    temperature: 0,
    ignore_eos: true,
  });
  const one = await postJson(`${h.url}/v1/completions`, {
    model: 'qv',
    prompt: PROMPT,
    max_tokens: 6,
    use_beam_search: true,
    ignore_eos: true,
  });
  assert.equal(one.status, 200, one.text);
  assert.equal(one.json.choices[0].text, greedy.json.choices[0].text);
  const wide = await postJson(`${h.url}/v1/completions`, {
    model: 'qv',
    prompt: PROMPT,
    max_tokens: 6,
    best_of: 3,
    n: 3,
    use_beam_search: true,
    ignore_eos: true,
  });
  assert.deepEqual(
    wide.json.choices.map((c: { text: string }) => c.text),
    await engineBeams(3, 3, 6, 'qv'),
  );
  await allFree();
});

test('beams under a JSON schema: every beam is a finished document the schema accepts', async () => {
  const schema = {
    type: 'object',
    properties: { color: { enum: ['red', 'green', 'blue', 'yellow'] } },
    required: ['color'],
    additionalProperties: false,
  };
  const r = await postJson(`${h.url}/v1/completions`, {
    model: MODEL_NAME,
    prompt: 'My favourite colour, as JSON:',
    max_tokens: 40,
    best_of: 3,
    n: 3,
    use_beam_search: true,
    response_format: { type: 'json_schema', json_schema: { name: 'c', schema } },
  });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.choices.length, 3);
  for (const c of r.json.choices as { text: string; finish_reason: string }[]) {
    assert.equal(c.finish_reason, 'stop', c.text);
    const doc = JSON.parse(c.text) as { color: string };
    assert.deepEqual(Object.keys(doc), ['color']);
    assert.ok(schema.properties.color.enum.includes(doc.color), c.text);
  }
  await allFree();
});

test('min_tokens holds back end tokens and stop strings until that many tokens exist', async () => {
  const base = { model: MODEL_NAME, prompt: PROMPT, max_tokens: 8, temperature: 0 };
  const free = await postJson(`${h.url}/v1/completions`, { ...base, logprobs: 0 });
  const first = free.json.choices[0].logprobs.tokens[0] as string;
  // The greedy text's first piece as a stop string ends the output at once ...
  const stopped = await postJson(`${h.url}/v1/completions`, { ...base, stop: [first] });
  assert.equal(stopped.json.choices[0].text, '');
  // ... but not before min_tokens tokens.
  const held = await postJson(`${h.url}/v1/completions`, { ...base, stop: [first], min_tokens: 3 });
  assert.equal(held.status, 200, held.text);
  assert.ok(held.json.usage.completion_tokens >= 3, held.text);
  assert.ok(held.json.choices[0].text.startsWith(first), held.text);
});

test('refusals name the field: streamed beams, beam fields without beams, min_tokens with a schema, beams with tools', async () => {
  const cases: [string, object, string][] = [
    [
      '/v1/completions',
      { model: MODEL_NAME, prompt: PROMPT, stream: true, use_beam_search: true, best_of: 1 },
      'use_beam_search',
    ],
    [
      '/v1/chat/completions',
      { model: MODEL_NAME, messages: [{ role: 'user', content: 'hi' }], stream: true, use_beam_search: true },
      'use_beam_search',
    ],
    ['/generate', { prompt: PROMPT, stream: true, use_beam_search: true }, 'use_beam_search'],
    [
      `/v2/models/${MODEL_NAME}/generate_stream`,
      { text_input: PROMPT, parameters: { use_beam_search: true } },
      'parameters.use_beam_search',
    ],
    ['/v1/completions', { model: MODEL_NAME, prompt: PROMPT, length_penalty: 0.5 }, 'length_penalty'],
    ['/generate', { prompt: PROMPT, early_stopping: true }, 'early_stopping'],
    [
      '/v1/completions',
      { model: MODEL_NAME, prompt: PROMPT, min_tokens: 2, response_format: { type: 'json_object' } },
      'min_tokens',
    ],
    [
      '/v1/chat/completions',
      {
        model: MODEL_NAME,
        messages: [{ role: 'user', content: 'hi' }],
        use_beam_search: true,
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      },
      'use_beam_search',
    ],
  ];
  for (const [path, body, field] of cases) {
    const r = await postJson(`${h.url}${path}`, body);
    // 400, or 422 where the family answers validation errors so (vLLM /generate: MindIE's shape).
    assert.ok([400, 422].includes(r.status), `${path} ${JSON.stringify(body)}: ${r.status} ${r.text}`);
    assert.ok(r.text.includes(field), `${path} names ${field}: ${r.text}`);
  }
});
