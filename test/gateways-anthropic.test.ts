/**
 * Anthropic's Messages API: the Python `anthropic` SDK (requirements-dev.in) on the real default
 * model — create, stream, stop sequences, a forced tool call and its tool_result round trip,
 * count_tokens, errors — and, on a scripted model, thinking blocks and the event sequence.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MODEL_NAME, postJson, runPythonClient, startHarness, type Harness } from './gateways-harness.js';
import { serveScripted } from './gateways-scripted.js';
import { postSse } from './gateways-sse.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(async () => {
  await h?.close();
});

test('anthropic SDK: create, stream, stop_sequences, tool round trip, count_tokens, errors', async () => {
  const r = await runPythonClient('anthropic_messages.py', [h.url, MODEL_NAME], 240000);
  assert.equal(r.created.type, 'message');
  assert.equal(r.created.role, 'assistant');
  assert.equal(r.created.content[0].type, 'text');
  assert.ok(r.created.content[0].text.length > 0);
  assert.equal(r.created.stop_reason, 'max_tokens');
  assert.equal(r.created.usage.output_tokens, 12);
  // The stream, accumulated by the SDK, is the same message (greedy).
  assert.deepEqual(r.streamed.content, r.created.content);
  assert.equal(r.streamed.stop_reason, r.created.stop_reason);
  assert.equal(
    r.streamed.usage.input_tokens + r.streamed.usage.cache_read_input_tokens,
    r.created.usage.input_tokens + r.created.usage.cache_read_input_tokens,
  );
  assert.deepEqual(
    r.event_types.filter((t: string) => t !== 'text'),
    [
      'message_start',
      'content_block_start',
      ...Array(12).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ],
  );
  // A stop sequence ends the text, is named, and is not part of it.
  assert.equal(r.stopped.stop_reason, 'stop_sequence');
  assert.ok(['\n', ','].includes(r.stopped.stop_sequence));
  assert.ok(!r.stopped.content[0].text.includes(r.stopped.stop_sequence));
  // The forced call (tool_choice any, one call) and its streamed twin.
  for (const m of [r.call, r.streamed_call]) {
    assert.equal(m.stop_reason, 'tool_use');
    assert.equal(m.content.length, 1);
    assert.equal(m.content[0].type, 'tool_use');
    assert.equal(m.content[0].name, 'get_weather');
    assert.equal(typeof m.content[0].input.city, 'string');
  }
  assert.deepEqual(r.streamed_use_input, r.call.content[0].input);
  assert.ok(r.answer.content.length >= 1 && r.answer.content[0].type === 'text');
  // count_tokens is the prompt /v1/messages renders: its usage counts the same tokens.
  assert.equal(r.count, r.created.usage.input_tokens + r.created.usage.cache_read_input_tokens);
  assert.equal(r.count_tools, r.call.usage.input_tokens + r.call.usage.cache_read_input_tokens);
  assert.deepEqual(r.errors.not_found, ['NotFoundError', 404, 'not_found_error']);
  assert.deepEqual(r.errors.bad_temperature, ['BadRequestError', 400, 'temperature: must be <= 1']);
  assert.equal(r.errors.image[0], 'BadRequestError');
  assert.match(r.errors.image[2], /^messages\[0\]\.content\[0\]\.type: content block type 'image'/);
});

test('bad requests: 400 naming the field, in Anthropic’s error shape', async () => {
  const base = { model: MODEL_NAME, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] };
  const cases: [object, string][] = [
    [{ ...base, max_tokens: undefined }, 'max_tokens: is required'],
    [{ ...base, top_k: 40, frobnicate: true }, 'frobnicate: is not a known field'],
    [{ ...base, tool_choice: { type: 'any' } }, 'tool_choice: needs tools'],
    [
      { ...base, tool_choice: { type: 'tool', name: 'nope' } },
      "tool_choice.name: 'nope' is not one of the tools",
    ],
    [
      { ...base, tools: [{ name: 'web', type: 'web_search_20250305' }] },
      "tools[0].type: tool type 'web_search_20250305' (only custom tools) is not supported by this server",
    ],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'a', colour: 1 }] }] },
      'messages[0].content[0].colour: is not a known field',
    ],
    [
      { ...base, messages: [...base.messages, { role: 'assistant', content: 'The answer is' }] },
      'messages[1].role: a final assistant message (continuing a prefilled answer) is not supported by this server',
    ],
    [
      { ...base, thinking: { type: 'enabled', budget_tokens: 2048 } },
      'thinking.budget_tokens: must be less than max_tokens',
    ],
    [
      { ...base, output_config: { effort: 'high' } },
      'output_config.effort: effort is not supported by this server',
    ],
  ];
  for (const [body, message] of cases) {
    const res = await postJson(`${h.url}/v1/messages`, body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.deepEqual(res.json, { type: 'error', error: { type: 'invalid_request_error', message } });
  }
  const unknown = await postJson(`${h.url}/v1/messages/batches`, {});
  assert.equal(unknown.status, 404);
  assert.equal(unknown.json.error.type, 'not_found_error');
});

test('output_config.format: the answer is a document of the schema', async () => {
  const schema = {
    type: 'object',
    properties: { color: { enum: ['red', 'green', 'blue'] } },
    required: ['color'],
  };
  const res = await postJson(`${h.url}/v1/messages`, {
    model: MODEL_NAME,
    max_tokens: 20,
    messages: [{ role: 'user', content: 'Pick a color.' }],
    output_config: { format: { type: 'json_schema', schema } },
  });
  assert.equal(res.status, 200, res.text);
  assert.ok(['red', 'green', 'blue'].includes(JSON.parse(res.json.content[0].text).color));
});

test('thinking: a reasoning model’s think block is a thinking block, unary and streamed', async () => {
  const reply = '<think>Paris is in France.</think>It is sunny.';
  // A template that knows </think> makes the engine parse reasoning (as Qwen3's does).
  const s = await serveScripted([reply, reply, 'ok'], '{{ messages | tojson }}<think></think>');
  try {
    const body = { model: MODEL_NAME, max_tokens: 100, messages: [{ role: 'user', content: 'Weather?' }] };
    const unary = await postJson(`${s.url}/v1/messages`, body);
    assert.equal(unary.status, 200, unary.text);
    assert.deepEqual(unary.json.content, [
      { type: 'thinking', thinking: 'Paris is in France.', signature: '' },
      { type: 'text', text: 'It is sunny.' },
    ]);
    const events = (await postSse(`${s.url}/v1/messages`, { ...body, stream: true })).events.map((e) => ({
      event: e.event,
      data: JSON.parse(e.data),
    }));
    const types = events.map((e) => e.event);
    assert.deepEqual(types.slice(0, 3), ['message_start', 'ping', 'content_block_start']);
    assert.deepEqual(types.slice(-2), ['message_delta', 'message_stop']);
    const starts = events
      .filter((e) => e.event === 'content_block_start')
      .map((e) => e.data.content_block.type);
    assert.deepEqual(starts, ['thinking', 'text']);
    const thinking = events
      .filter((e) => e.data.delta?.type === 'thinking_delta')
      .map((e) => e.data.delta.thinking)
      .join('');
    const text = events
      .filter((e) => e.data.delta?.type === 'text_delta')
      .map((e) => e.data.delta.text)
      .join('');
    assert.equal(thinking, 'Paris is in France.');
    assert.equal(text, 'It is sunny.');
    // A thinking block sent back is taken (the template renders it as reasoning_content or drops it).
    const back = await postJson(`${s.url}/v1/messages`, {
      ...body,
      messages: [
        ...body.messages,
        { role: 'assistant', content: unary.json.content },
        { role: 'user', content: 'Thanks' },
      ],
    });
    assert.equal(back.status, 200, back.text);
  } finally {
    await s.close();
  }
});
