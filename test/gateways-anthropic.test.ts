/**
 * Anthropic's Messages API: the Python `anthropic` SDK (requirements-dev.in) on the real default
 * model — create, stream, stop sequences, a forced tool call and its tool_result round trip,
 * count_tokens, errors — and, on a scripted model, thinking blocks and the event sequence.
 * Image blocks on this text-only model: each malformed one is a 400 naming its field, and a
 * good one is decoded and then refused by the engine, naming it (never a 5xx); served on a
 * vision model in test/vision/vision-anthropic.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { hostileKit } from './fuzz/hostile-images.js';
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
  assert.deepEqual(r.errors.image, [
    'BadRequestError',
    400,
    'messages[0].content[0].source.data: image input is not supported by this model: smollm2-test is a text-only model',
  ]);
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

test('image blocks: each malformed one is a 400 naming its field; a good one is refused by the text-only model, naming it', async () => {
  const kit = await hostileKit();
  const b64 = (buf: Buffer) => buf.toString('base64');
  const base64 = (media_type: string, data: string) => ({
    type: 'image',
    source: { type: 'base64', media_type, data },
  });
  const png = base64('image/png', b64(kit.valid.png));
  const user = (content: object[]) => [{ role: 'user', content }];
  const body = (extra: object) => ({ model: MODEL_NAME, max_tokens: 4, ...extra });
  const textOnly = 'image input is not supported by this model: smollm2-test is a text-only model';
  const c0 = 'messages[0].content[0]';
  const cases: [object, string][] = [
    [
      { messages: user([base64('image/bmp', b64(kit.valid.png))]) },
      `${c0}.source.media_type: must be one of image/jpeg, image/png, image/gif, image/webp; got 'image/bmp'`,
    ],
    [{ messages: user([base64('image/png', 'ab!d')]) }, `${c0}.source.data: is not valid base64`],
    [{ messages: user([base64('image/png', '')]) }, `${c0}.source.data: must be base64-encoded image data`],
    [
      { messages: user([base64('image/png', b64(Buffer.from('not an image at all')))]) },
      `${c0}.source.data: is not a decodable image`,
    ],
    [
      { messages: user([base64('image/png', b64(kit.valid.jpeg))]) },
      `${c0}.source.media_type: is 'image/png', but the data holds an image/jpeg image`,
    ],
    [
      { messages: user([{ type: 'image', source: { type: 'blob', data: 'x' } }]) },
      `${c0}.source.type: unknown image source type "blob" (one of 'base64', 'url')`,
    ],
    [
      { messages: user([{ type: 'image', source: { type: 'file', file_id: 'file_1' } }]) },
      `${c0}.source.type: image source 'file' (the Files API) is not supported by this server`,
    ],
    [{ messages: user([{ type: 'image' }]) }, `${c0}.source: is required`],
    [
      { messages: user([{ type: 'image', source: 'data:image/png;base64,AA==' }]) },
      `${c0}.source: must be an object`,
    ],
    [
      { messages: user([{ ...png, source: { ...png.source, url: 'x' } }]) },
      `${c0}.source.url: is not a known field`,
    ],
    [{ messages: user([{ ...png, detail: 'high' }]) }, `${c0}.detail: is not a known field`],
    [
      {
        messages: user([{ type: 'image', source: { type: 'url', url: 'https://example.invalid/cat.png' } }]),
      },
      `${c0}.source.url: http(s) URLs are refused: the server fetches images only with --image-fetch`,
    ],
    [
      { messages: user([{ type: 'image', source: { type: 'url', url: 'ftp://x/cat.png' } }]) },
      `${c0}.source.url: must be a data:, file:// or http(s) URL`,
    ],
    [
      { messages: user([{ ...png, transformations: { oversized_image: 'error' } }]) },
      `${c0}.transformations.oversized_image: 'error' (the model's image processor scales every image to its own size) is not supported by this server`,
    ],
    [
      { messages: user([{ ...png, transformations: { crop: true } }]) },
      `${c0}.transformations.crop: is not a known field`,
    ],
    [
      {
        messages: [
          ...user([{ type: 'text', text: 'hi' }]),
          { role: 'assistant', content: [png] },
          ...user([{ type: 'text', text: 'and?' }]),
        ],
      },
      'messages[1].content[0].type: image blocks belong to user messages (their content, or the content of a tool_result)',
    ],
    [
      { system: [png], messages: user([{ type: 'text', text: 'hi' }]) },
      'system[0].type: image blocks belong to user messages (their content, or the content of a tool_result)',
    ],
    [
      {
        messages: user([{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'x' } }]),
      },
      `${c0}.type: content block type 'document' is not supported by this server`,
    ],
    // Well formed: decoded, then refused by the engine, which has no image encoder for this model.
    [
      { messages: user([{ type: 'text', text: 'What is this?' }, png]) },
      `messages[0].content[1].source.data: ${textOnly}`,
    ],
    [
      {
        messages: user([
          { ...png, transformations: { oversized_image: 'downsize' }, cache_control: { type: 'ephemeral' } },
        ]),
      },
      `${c0}.source.data: ${textOnly}`,
    ],
    [
      {
        messages: user([base64('image/gif', b64(kit.valid.gif)), base64('image/webp', b64(kit.valid.webp))]),
      },
      `${c0}.source.data: ${textOnly}`,
    ],
    [
      {
        messages: [
          ...user([{ type: 'text', text: 'Take a snapshot.' }]),
          { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'snap', input: {} }] },
          ...user([
            { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'here' }, png] },
          ]),
        ],
      },
      `messages[2].content[0].content[1].source.data: ${textOnly}`,
    ],
  ];
  for (const [extra, message] of cases) {
    const res = await postJson(`${h.url}/v1/messages`, body(extra));
    assert.equal(res.status, 400, `${JSON.stringify(extra).slice(0, 200)}: ${res.text}`);
    assert.equal(res.json.error.type, 'invalid_request_error');
    if (message.endsWith('is not a decodable image'))
      assert.ok(res.json.error.message.startsWith(message), res.text);
    else assert.equal(res.json.error.message, message);
  }
  // count_tokens counts no image (its tokens are the engine's tiles): refused, naming the block.
  const count = await postJson(`${h.url}/v1/messages/count_tokens`, {
    model: MODEL_NAME,
    messages: user([png]),
  });
  assert.equal(count.status, 400, count.text);
  assert.match(
    count.json.error.message,
    /^messages\[0\]\.content\[0\]\.type: counting an image block's tokens/,
  );
  // Text is served as before.
  const ok = await postJson(
    `${h.url}/v1/messages`,
    body({ messages: user([{ type: 'text', text: 'Hello' }]) }),
  );
  assert.equal(ok.status, 200, ok.text);
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
