/**
 * The done check of split prefill/decode: greedy answers through `prism gateway --prefill …
 * --decode …` (the coordinator behind the real gateways, both flows) equal one engine's, on 50
 * prompts, streamed and unary, across every API family — whole response bodies and every
 * stream frame, after dropping what differs between any two runs (ids, times, seeds) and the
 * cached-token count (moved tokens count there). Afterwards every KV block is free on both
 * engines.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { GrpcEngineClient } from '../engine/service/client.js';
import { startGateway, type RunningGateway } from '../gateways/server.js';
import { freePortConfig, MODEL_NAME, type JsonBody } from './gateways-harness.js';
import {
  startPdGateway,
  startTestEngine,
  waitAllFree,
  type PdGateway,
  type TestEngine,
} from './pd-harness.js';

const MAX = 6;

interface Family {
  readonly name: string;
  readonly path: (stream: boolean) => string;
  readonly body: (prompt: string, stream: boolean) => object;
  /** How a stream is framed: SSE, or the old vLLM server's NUL-separated JSON. */
  readonly framing: 'sse' | 'nul';
}

const FAMILIES: Family[] = [
  {
    name: 'openai chat',
    path: () => '/v1/chat/completions',
    body: (p, stream) => ({
      model: MODEL_NAME,
      messages: [{ role: 'user', content: p }],
      max_tokens: MAX,
      temperature: 0,
      stream,
    }),
    framing: 'sse',
  },
  {
    name: 'openai completions',
    path: () => '/v1/completions',
    body: (p, stream) => ({ model: MODEL_NAME, prompt: p, max_tokens: MAX, temperature: 0, stream }),
    framing: 'sse',
  },
  {
    name: 'tgi',
    path: (stream) => (stream ? '/generate_stream' : '/generate'),
    body: (p) => ({ inputs: p, parameters: { max_new_tokens: MAX, do_sample: false, details: true } }),
    framing: 'sse',
  },
  {
    name: 'vllm',
    path: () => '/generate',
    body: (p, stream) => ({ prompt: p, max_tokens: MAX, temperature: 0, stream }),
    framing: 'nul',
  },
  {
    name: 'kserve',
    path: (stream) => `/v2/models/${MODEL_NAME}/${stream ? 'generate_stream' : 'generate'}`,
    body: (p) => ({ text_input: p, parameters: { max_new_tokens: MAX, details: true } }),
    framing: 'sse',
  },
  {
    name: 'native',
    path: () => '/infer',
    body: (p, stream) => ({
      inputs: p,
      stream,
      parameters: { max_new_tokens: MAX, do_sample: false, details: true },
    }),
    framing: 'sse',
  },
];

const SUBJECTS = [
  'the moon',
  'bread',
  'a lighthouse',
  'winter',
  'bees',
  'the ocean',
  'a library',
  'trains',
  'volcanoes',
  'coffee',
  'the desert',
  'owls',
  'a violin',
  'rain',
  'chess',
  'glaciers',
  'tea',
  'a bridge',
  'the wind',
  'maps',
  'apples',
  'a castle',
  'comets',
  'forests',
  'the river',
];
const PROMPTS = SUBJECTS.flatMap((s) => [`Write one sentence about ${s}.`, `What is special about ${s}?`]);

/** Keys whose values differ between any two runs, or that count what the split moved. */
const VOLATILE =
  /^(id|created|seed|system_fingerprint|prefill_time|decode_time|decode_time_arr|queue_wait_time|batch_size|first_token_cost|decode_cost|prompt_tokens_details)$/;

function normalize(v: JsonBody): JsonBody {
  if (Array.isArray(v)) return v.map(normalize);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v)
      .filter(([k]) => !VOLATILE.test(k))
      .map(([k, x]) => [k, normalize(x)]),
  );
}

async function ask(url: string, f: Family, prompt: string, stream: boolean): Promise<JsonBody> {
  const res = await fetch(url + f.path(stream), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...f.body(prompt, stream) }),
  });
  const text = await res.text();
  assert.equal(res.status, 200, `${f.name}: ${text}`);
  if (!stream) return normalize(JSON.parse(text));
  const frames =
    f.framing === 'nul'
      ? text.split('\0').filter((x) => x !== '')
      : text
          .split('\n\n')
          .filter((x) => x.startsWith('data: '))
          .map((x) => x.slice('data: '.length))
          .filter((x) => x !== '[DONE]');
  return frames.map((x) => normalize(JSON.parse(x)));
}

let prefill: TestEngine;
let decode: TestEngine;
let single: TestEngine;
let reference: RunningGateway;
let referenceClient: GrpcEngineClient;
let mindie: PdGateway;
let llmd: PdGateway;

before(async () => {
  [prefill, decode, single] = await Promise.all([
    startTestEngine('prefill'),
    startTestEngine('decode'),
    startTestEngine('mixed'),
  ]);
  referenceClient = new GrpcEngineClient(single.address);
  reference = await startGateway({ engine: referenceClient, config: freePortConfig() });
  mindie = await startPdGateway([prefill], [decode], 'mindie');
  llmd = await startPdGateway([prefill], [decode], 'llm-d');
});

after(async () => {
  await Promise.all([mindie?.close(), llmd?.close(), reference?.close()]);
  await referenceClient?.close();
  await Promise.all([prefill?.close(), decode?.close(), single?.close()]);
});

test('50 prompts through both coordinators equal one engine: every family, streamed and unary', async () => {
  assert.ok(PROMPTS.length >= 50);
  const covered = new Set<string>();
  for (const [i, prompt] of PROMPTS.entries()) {
    const f = FAMILIES[i % FAMILIES.length];
    // Each family gets both modes: the mode flips every round of families.
    const stream = (i + Math.floor(i / FAMILIES.length)) % 2 === 1;
    const want = await ask(reference.url('service'), f, prompt, stream);
    for (const [flow, gw] of [
      ['mindie', mindie],
      ['llm-d', llmd],
    ] as const) {
      const got = await ask(gw.url, f, prompt, stream);
      assert.deepEqual(got, want, `${flow}, ${f.name}, ${stream ? 'streamed' : 'unary'}: ${prompt}`);
      covered.add(`${flow}/${f.name}/${stream}`);
    }
  }
  assert.equal(covered.size, 2 * FAMILIES.length * 2, 'every flow × family × mode ran');
  await Promise.all([waitAllFree(prefill.client), waitAllFree(decode.client)]);
});

test('usage counts the moved prompt tokens as cached', async () => {
  const body = {
    model: MODEL_NAME,
    prompt: 'Once upon a time, in a small village by the sea,',
    ignore_eos: true,
    max_tokens: 3,
    temperature: 0,
  };
  for (const [gw, moved] of [
    [mindie, 0],
    [llmd, 1],
  ] as const) {
    const res = await fetch(gw.url + '/v1/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as JsonBody;
    const u = json.usage;
    // MindIE's decode engine continues after the first token (all prompt KV moved); llm-d's
    // computes the last prompt token itself.
    assert.equal(u.prompt_tokens_details.cached_tokens, u.prompt_tokens - moved);
  }
  await Promise.all([waitAllFree(prefill.client), waitAllFree(decode.client)]);
});
