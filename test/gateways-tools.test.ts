/**
 * Function calling end to end through the OpenAI SDK (unary, the stream helper's accumulation,
 * runTools' two-step loop) — gateway, gRPC and engine core all real; the model is a script
 * (engine/testing/scripted-sim.ts) so that it writes exact calls (two parallel ones, ones
 * under `auto`, reasoning) that a real small model does not write on demand. The same SDK
 * paths with grammar-forced calls on the real default model: gateways-forced-tools.test.ts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { EngineCore } from '../engine/engine-core.js';
import { resolveEngineOptions } from '../engine/options.js';
import { GrpcEngineClient } from '../engine/service/client.js';
import { startEngineServer } from '../engine/service/server.js';
import { CharTokenizer } from '../engine/testing/char-tokenizer.js';
import { ScriptedSim } from '../engine/testing/scripted-sim.js';
import type { EngineInfo } from '../engine/types.js';
import { startGateway } from '../gateways/server.js';
import { freePortConfig, MODEL_NAME, postJson } from './gateways-harness.js';

const CALL1 = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
const CALL2 = '<tool_call>{"name": "get_time", "arguments": {"tz": "Europe/Paris"}}</tool_call>';

const tools: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather of a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
  {
    type: 'function',
    function: { name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } },
  },
];
const messages: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'user', content: 'Weather and time in Paris?' },
];

/** A served engine whose "model" answers request k with replies[k]. */
async function serve(replies: string[], chatTemplate?: string) {
  const options = resolveEngineOptions({
    cacheBlockSize: 4,
    maxSeqLen: 4000,
    maxInputTokenLen: 3500,
    kvBlocks: 2048,
    prefixCache: false,
  });
  const info: EngineInfo = {
    modelName: MODEL_NAME,
    modelPath: 'scripted',
    architecture: 'llama',
    vocabSize: 100,
    contextLength: 4000,
    maxSeqLen: 4000,
    maxInputTokenLen: 3500,
    maxNewTokensCap: options.maxIterTimes,
    maxBatchSize: options.maxBatchSize,
    maxPrefillTokens: options.maxPrefillTokens,
    blockSize: 4,
    prefixCache: false,
    dtype: 'none',
    startedAt: Date.now(),
    device: 'cpu',
    deviceName: 'scripted',
  };
  const core = new EngineCore({
    runner: new ScriptedSim(replies, 2048, 4),
    tokenizer: new CharTokenizer(),
    options,
    info,
    ...(chatTemplate !== undefined ? { chatTemplate } : {}),
  });
  const dir = mkdtempSync(join(tmpdir(), 'prism-tools-test-'));
  const server = await startEngineServer(core, { listen: `unix:${join(dir, 'engine.sock')}`, log: () => {} });
  const client = new GrpcEngineClient(server.address);
  const gateway = await startGateway({ engine: client, config: freePortConfig() });
  const url = gateway.url('service');
  return {
    url,
    openai: new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 }),
    close: async () => {
      await gateway.close();
      await client.close();
      await server.shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const callsOf = (calls: readonly OpenAI.ChatCompletionMessageToolCall[] | undefined) =>
  (calls ?? []).map((c) => {
    assert.equal(c.type, 'function');
    assert.match(c.id, /^call_/);
    return c.type === 'function' ? [c.function.name, c.function.arguments] : [];
  });

test('unary: two parallel calls, finish_reason tool_calls, empty content, MindIE timings', async () => {
  const s = await serve([CALL1 + CALL2, CALL1]);
  try {
    const r = await s.openai.chat.completions.create({ model: MODEL_NAME, messages, tools });
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    assert.equal(r.choices[0].message.content, '');
    assert.deepEqual(callsOf(r.choices[0].message.tool_calls), [
      ['get_weather', '{"city": "Paris"}'],
      ['get_time', '{"tz": "Europe/Paris"}'],
    ]);
    const raw = await postJson(`${s.url}/v1/chat/completions`, { model: MODEL_NAME, messages, tools });
    assert.equal(typeof raw.json.prefill_time, 'number');
    assert.equal(raw.json.decode_time_arr.length, raw.json.usage.completion_tokens - 1);
    assert.equal(raw.json.usage.completion_tokens_details.reasoning_tokens, 0);
  } finally {
    await s.close();
  }
});

test('streaming: the SDK stream helper accumulates the deltas into the same calls', async () => {
  const s = await serve([CALL1 + CALL2]);
  try {
    const stream = s.openai.chat.completions.stream({ model: MODEL_NAME, messages, tools });
    const firstDeltas: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    stream.on('chunk', (c) => {
      for (const t of c.choices[0]?.delta.tool_calls ?? []) if (t.id) firstDeltas.push(t);
    });
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(callsOf(final.choices[0].message.tool_calls), [
      ['get_weather', '{"city": "Paris"}'],
      ['get_time', '{"tz": "Europe/Paris"}'],
    ]);
    assert.deepEqual(
      firstDeltas.map((t) => [t.index, t.type, t.function?.name]),
      [
        [0, 'function', 'get_weather'],
        [1, 'function', 'get_time'],
      ],
    );
  } finally {
    await s.close();
  }
});

test('runTools: the two-step flow (call, tool result with its tool_call_id, final answer)', async () => {
  const s = await serve([CALL1, 'It is sunny in Paris.']);
  try {
    const seen: unknown[] = [];
    const runner = s.openai.chat.completions.runTools({
      model: MODEL_NAME,
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Current weather of a city',
            parameters: { type: 'object', properties: { city: { type: 'string' } } },
            parse: (args: string) => JSON.parse(args) as { city: string },
            function: (args: { city: string }) => {
              seen.push(args);
              return { sky: 'sunny' };
            },
          },
        },
      ],
    });
    const finalContent = await runner.finalContent();
    assert.equal(finalContent, 'It is sunny in Paris.');
    assert.deepEqual(seen, [{ city: 'Paris' }]);
  } finally {
    await s.close();
  }
});

test('parallel_tool_calls false keeps the first call', async () => {
  const s = await serve([CALL1 + CALL2]);
  try {
    const r = await s.openai.chat.completions.create({
      model: MODEL_NAME,
      messages,
      tools,
      parallel_tool_calls: false,
    });
    assert.deepEqual(callsOf(r.choices[0].message.tool_calls), [['get_weather', '{"city": "Paris"}']]);
  } finally {
    await s.close();
  }
});

test('Python openai SDK: streamed tool-call deltas accumulate to the unary calls', async () => {
  const s = await serve([CALL1 + CALL2, CALL1 + CALL2]);
  try {
    const run = promisify(execFile);
    const { stdout } = await run('python3', ['test/clients/openai_tools.py', `${s.url}/v1`, MODEL_NAME], {
      timeout: 120000,
    });
    const r = JSON.parse(stdout) as Record<string, unknown>;
    const expected = [
      ['get_weather', '{"city": "Paris"}'],
      ['get_time', '{"tz": "Europe/Paris"}'],
    ];
    assert.deepEqual(r.unary, expected);
    assert.deepEqual(r.streamed, expected);
    assert.equal(r.unary_finish, 'tool_calls');
    assert.equal(r.stream_finish, 'tool_calls');
    for (const id of r.streamed_ids as string[]) assert.match(id, /^call_/);
  } finally {
    await s.close();
  }
});

test('reasoning: a <think> block becomes reasoning_content (unary and streamed) and reasoning_tokens', async () => {
  // The scripted tokenizer renders its own prompt; the template only tells the engine that
  // the model reasons (it knows </think>), as Qwen3's does.
  const reply = '<think>Paris is in France.</think>It is sunny.';
  const s = await serve([reply, reply], '{{ messages }}<think></think>');
  try {
    const r = await postJson(`${s.url}/v1/chat/completions`, { model: MODEL_NAME, messages });
    assert.equal(r.json.choices[0].message.reasoning_content, 'Paris is in France.');
    assert.equal(r.json.choices[0].message.content, 'It is sunny.');
    assert.equal(
      r.json.usage.completion_tokens_details.reasoning_tokens,
      '<think>Paris is in France.</think>'.length,
    );
    const stream = await s.openai.chat.completions.create({
      model: MODEL_NAME,
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let reasoning = '';
    let content = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const c of stream) {
      const d = c.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
      reasoning += d?.reasoning_content ?? '';
      content += d?.content ?? '';
      usage = c.usage ?? usage;
    }
    assert.equal(reasoning, 'Paris is in France.');
    assert.equal(content, 'It is sunny.');
    assert.equal(
      usage?.completion_tokens_details?.reasoning_tokens,
      r.json.usage.completion_tokens_details.reasoning_tokens,
    );
  } finally {
    await s.close();
  }
});
