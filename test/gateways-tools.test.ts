/**
 * Function calling end to end through the OpenAI SDK (unary, the stream helper's accumulation,
 * runTools' two-step loop) — gateway, gRPC and engine core all real; the model is a script
 * (engine/testing/scripted-sim.ts) so that it writes exact calls (two parallel ones, ones
 * under `auto`, reasoning) that a real small model does not write on demand. The same SDK
 * paths with grammar-forced calls on the real default model: gateways-forced-tools.test.ts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { MODEL_NAME, postJson } from './gateways-harness.js';
import { serveScripted } from './gateways-scripted.js';

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

const callsOf = (calls: readonly OpenAI.ChatCompletionMessageToolCall[] | undefined) =>
  (calls ?? []).map((c) => {
    assert.equal(c.type, 'function');
    assert.match(c.id, /^call_/);
    return c.type === 'function' ? [c.function.name, c.function.arguments] : [];
  });

test('unary: two parallel calls, finish_reason tool_calls, empty content, MindIE timings', async () => {
  const s = await serveScripted([CALL1 + CALL2, CALL1]);
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
  const s = await serveScripted([CALL1 + CALL2]);
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
  const s = await serveScripted([CALL1, 'It is sunny in Paris.']);
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
  const s = await serveScripted([CALL1 + CALL2]);
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
  const s = await serveScripted([CALL1 + CALL2, CALL1 + CALL2]);
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

test('reasoning: a <think> block becomes reasoning_content and reasoning (unary and streamed) and reasoning_tokens', async () => {
  // The scripted tokenizer renders its own prompt; the template only tells the engine that
  // the model reasons (it knows </think>), as Qwen3's does.
  const reply = '<think>Paris is in France.</think>It is sunny.';
  const s = await serveScripted([reply, reply], '{{ messages }}<think></think>');
  try {
    const r = await postJson(`${s.url}/v1/chat/completions`, { model: MODEL_NAME, messages });
    assert.equal(r.json.choices[0].message.reasoning_content, 'Paris is in France.');
    assert.equal(r.json.choices[0].message.reasoning, 'Paris is in France.');
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
    let newer = '';
    let content = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const c of stream) {
      const d = c.choices[0]?.delta as
        { content?: string; reasoning_content?: string; reasoning?: string } | undefined;
      reasoning += d?.reasoning_content ?? '';
      newer += d?.reasoning ?? '';
      content += d?.content ?? '';
      usage = c.usage ?? usage;
    }
    assert.equal(reasoning, 'Paris is in France.');
    assert.equal(newer, reasoning);
    assert.equal(content, 'It is sunny.');
    assert.equal(
      usage?.completion_tokens_details?.reasoning_tokens,
      r.json.usage.completion_tokens_details.reasoning_tokens,
    );
  } finally {
    await s.close();
  }
});
