/**
 * Forced tool calls under speculative decoding, on the real default model: with
 * `tool_choice` required or a named function the call grammar constrains the output, the
 * n-gram proposer drafts from the prompt (tool names and argument keys repeat the tool
 * definitions), drafts are cut by the grammar and verified under its masks, and every call
 * still parses and validates against its tool's schema, token for token as without
 * speculation (greedy) or per seed (sampled).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { loadEngine } from '../engine/load-engine.js';
import type { EngineOptions } from '../engine/options.js';
import type { ChatTool, Engine, FinishEvent, GenerateRequest, ToolChoice } from '../engine/types.js';

const base: EngineOptions = {
  maxBatchSize: 16,
  maxPrefillTokens: 2048,
  kvCacheBytes: 64 << 20,
  maxSeqLen: 1024,
  cacheBlockSize: 16,
  threads: 2,
};

let plain: EngineCore;
let spec: EngineCore;
before(async () => {
  plain = await loadEngine(ensureDefaultModel(), base);
  spec = await loadEngine(ensureDefaultModel(), {
    ...base,
    speculative: { method: 'ngram', numSpeculativeTokens: 6, adaptive: false },
  });
});
after(async () => {
  await plain?.close();
  await spec?.close();
});

const weather = {
  type: 'object',
  properties: { city: { type: 'string' }, unit: { enum: ['celsius', 'fahrenheit'] } },
  required: ['city', 'unit'],
};
const time = { type: 'object', properties: { timezone: { type: 'string' } }, required: ['timezone'] };
const tools: ChatTool[] = [
  { name: 'get_weather', description: 'Current weather of a city', parameters: weather },
  { name: 'get_time', description: 'Current time in a time zone', parameters: time },
];
const schemas: Record<string, object> = { get_weather: weather, get_time: time };
const ajv = new Ajv2020();

async function finish(e: Engine, r: GenerateRequest): Promise<FinishEvent> {
  let f: FinishEvent | undefined;
  for await (const ev of e.generate(r)) if (ev.type === 'finish') f = ev;
  return f!;
}

const QUESTIONS = [
  'What is the weather in Paris, in celsius?',
  'What time is it in Europe/Berlin?',
  'Is it raining in Tokyo? Use fahrenheit.',
  'Tell me the weather in Lyon and the time in Asia/Tokyo.',
];

function request(q: string, toolChoice: ToolChoice, params: GenerateRequest['params']): GenerateRequest {
  return { prompt: { kind: 'chat', messages: [{ role: 'user', content: q }], tools, toolChoice }, params };
}

function assertCalls(f: FinishEvent, only?: string): void {
  assert.equal(f.reason, 'tool_calls', f.text);
  const calls = f.chat?.toolCalls ?? [];
  assert.ok(calls.length > 0);
  for (const c of calls) {
    if (only) assert.equal(c.function.name, only);
    const schema = schemas[c.function.name];
    assert.ok(schema, `${c.function.name} is an offered tool`);
    assert.ok(
      ajv.validate(schema, JSON.parse(c.function.arguments)),
      `${c.function.arguments}: ${ajv.errorsText()}`,
    );
  }
}

test('forced tool calls (required, named; greedy and seeded) parse and validate, the same tokens as without speculation', async () => {
  const reqs: { r: GenerateRequest; only?: string }[] = [];
  for (const q of QUESTIONS) {
    reqs.push({ r: request(q, 'required', { temperature: 0, maxNewTokens: 160 }) });
    reqs.push({
      r: request(q, { function: 'get_weather' }, { temperature: 0, maxNewTokens: 120 }),
      only: 'get_weather',
    });
    reqs.push({
      r: request(q, { function: 'get_time' }, { temperature: 0.8, seed: 11, maxNewTokens: 120 }),
      only: 'get_time',
    });
  }
  const before = (await spec.status()).specDecode!;
  const [a, b] = await Promise.all([
    Promise.all(reqs.map(({ r }) => finish(plain, r))),
    Promise.all(reqs.map(({ r }) => finish(spec, r))),
  ]);
  reqs.forEach(({ only }, i) => {
    assert.deepEqual(b[i].tokenIds, a[i].tokenIds, `request ${i}`);
    assertCalls(b[i], only);
  });
  const st = (await spec.status()).specDecode!;
  assert.ok(st.numAcceptedTokens - before.numAcceptedTokens > 0, 'drafts were accepted inside the calls');
});
