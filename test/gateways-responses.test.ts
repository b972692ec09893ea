/**
 * POST /v1/responses. On the real default model: the official Python `openai` SDK's
 * `responses.create`, `.stream` and `.parse`, a forced function call and its output sent back
 * (test/clients/openai_responses.py), and what is refused, naming the field. On a scripted
 * model (exact text, gateways-scripted.ts) through the npm `openai` SDK: reasoning items, two
 * parallel function calls, and the event sequence of each, unary and streamed alike.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import type OpenAI from 'openai';
import { MODEL_NAME, postJson, startHarness, type Harness } from './gateways-harness.js';
import { serveScripted } from './gateways-scripted.js';

const run = promisify(execFile);

describe('the default model', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(async () => {
    await h?.close();
  });

  test('python openai SDK: responses.create, .stream, .parse, a function call round trip', async () => {
    const { stdout } = await run('python3', ['test/clients/openai_responses.py', `${h.url}/v1`, MODEL_NAME], {
      timeout: 240000,
    });
    const r = JSON.parse(stdout);
    assert.match(r.create.id, /^resp_/);
    assert.ok(r.create.text.length > 0);
    assert.deepEqual(r.create.output_types, ['message']);
    assert.ok(r.create.usage.output_tokens > 0 && r.create.usage.output_tokens <= 8);
    assert.equal(r.create.usage.total_tokens, r.create.usage.input_tokens + r.create.usage.output_tokens);

    const events: string[] = r.stream.events;
    assert.deepEqual(events.slice(0, 4), [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    assert.ok(events.includes('response.output_text.delta'));
    assert.deepEqual(events.slice(-4, -1), [
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
    ]);
    assert.equal(
      events.at(-1),
      r.stream.status === 'completed' ? 'response.completed' : 'response.incomplete',
    );
    // Greedy: the stream writes the unary answer, delta by delta.
    assert.equal(r.stream.deltas, r.stream.final_text);
    assert.equal(r.stream.final_text, r.create.text);
    assert.deepEqual(r.stream.usage, r.create.usage);

    assert.equal(r.parse.status, 'completed');
    assert.equal(typeof r.parse.parsed.name, 'string');
    assert.ok(Number.isInteger(r.parse.parsed.population));
    assert.deepEqual(JSON.parse(r.parse.text), r.parse.parsed);

    assert.equal(r.tool_call.length, 1);
    assert.equal(r.tool_call[0].name, 'get_weather');
    assert.equal(typeof r.tool_call[0].arguments.city, 'string');
    assert.match(r.tool_call[0].call_id, /^call_/);
    assert.deepEqual(r.tool_answer.output_types, ['message']);

    assert.deepEqual(r.previous_response_id, { status: 400, param: 'previous_response_id' });
  });

  test('json_schema output is enforced, streamed too', async () => {
    const schema = {
      type: 'object',
      properties: {
        color: { enum: ['red', 'green', 'blue'] },
        count: { type: 'integer', minimum: 1, maximum: 9 },
      },
      required: ['color', 'count'],
      additionalProperties: false,
    };
    const body = {
      model: MODEL_NAME,
      input: 'Pick a color and a count.',
      text: { format: { type: 'json_schema', name: 'pick', schema, strict: true } },
      max_output_tokens: 40,
      temperature: 0,
    };
    const unary = await postJson(`${h.url}/v1/responses`, body);
    assert.equal(unary.status, 200, unary.text);
    const doc = JSON.parse(unary.json.output[0].content[0].text);
    assert.ok(['red', 'green', 'blue'].includes(doc.color));
    assert.ok(Number.isInteger(doc.count) && doc.count >= 1 && doc.count <= 9);
    assert.deepEqual(unary.json.text.format, body.text.format);

    const res = await fetch(`${h.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
    });
    let text = '';
    for (const frame of (await res.text()).split('\n\n')) {
      const data = frame.split('\n').find((l) => l.startsWith('data: '));
      const ev = data ? JSON.parse(data.slice(6)) : undefined;
      if (ev?.type === 'response.output_text.delta') text += ev.delta;
    }
    assert.deepEqual(JSON.parse(text), doc);
  });

  test('max_output_tokens ends an answer as incomplete; a named tool_choice forces that function', async () => {
    const cut = await postJson(`${h.url}/v1/responses`, {
      model: MODEL_NAME,
      input: 'Write a long story about a dragon.',
      max_output_tokens: 3,
      temperature: 0,
    });
    assert.equal(cut.status, 200, cut.text);
    assert.equal(cut.json.status, 'incomplete');
    assert.deepEqual(cut.json.incomplete_details, { reason: 'max_output_tokens' });
    assert.equal(cut.json.usage.output_tokens, 3);
    assert.equal(cut.json.max_output_tokens, 3);

    const fn = (name: string) => ({
      type: 'function',
      name,
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    });
    const forced = await postJson(`${h.url}/v1/responses`, {
      model: MODEL_NAME,
      input: 'What is the weather in Paris?',
      tools: [fn('get_weather'), fn('get_time')],
      tool_choice: { type: 'function', name: 'get_time' },
      max_output_tokens: 40,
      temperature: 0,
      top_p: 0.9,
    });
    assert.equal(forced.status, 200, forced.text);
    const calls = forced.json.output.filter((o: { type: string }) => o.type === 'function_call');
    assert.ok(calls.length >= 1, forced.text);
    for (const call of calls) {
      assert.equal(call.name, 'get_time');
      assert.equal(typeof JSON.parse(call.arguments).city, 'string');
    }
    assert.equal(forced.json.top_p, 0.9);
  });

  test('what a stateless server cannot honour is refused, naming the field', async () => {
    const cases: [object, string][] = [
      [{ store: true }, 'store'],
      [{ previous_response_id: 'resp_x' }, 'previous_response_id'],
      [{ background: true }, 'background'],
      [{ conversation: 'conv_1' }, 'conversation'],
      [{ truncation: 'auto' }, 'truncation'],
      [{ tools: [{ type: 'web_search' }] }, 'tools[0].type'],
      [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0].type'],
      [
        { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] },
        'input[0].content[0].type',
      ],
      // An image part is read (test/gateways-images.test.ts): a URL it cannot take is named.
      [
        { input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] },
        'input[0].content[0].image_url',
      ],
      [{ text: { format: { type: 'json_schema', schema: { type: 'object' } } } }, 'text.format.name'],
      [
        {
          text: {
            format: {
              type: 'json_schema',
              name: 'x',
              strict: true,
              schema: { type: 'array', uniqueItems: true },
            },
          },
        },
        'text.format.schema.uniqueItems',
      ],
      [{ tool_choice: 'required' }, 'tool_choice'],
      [{ max_output_tokens: 0 }, 'max_output_tokens'],
    ];
    for (const [extra, param] of cases) {
      const r = await postJson(`${h.url}/v1/responses`, { model: MODEL_NAME, input: 'hi', ...extra });
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.equal(r.json.error.param, param, JSON.stringify(extra));
      assert.equal(r.json.error.type, 'invalid_request_error');
    }
    // store: false is what stateless clients send: served.
    const ok = await postJson(`${h.url}/v1/responses`, { input: 'hi', store: false, max_output_tokens: 2 });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.store, false);
  });

  test('every 404 and 405 under /v1 has the OpenAI error shape', async () => {
    for (const [method, path, status] of [
      ['GET', '/v1/nope', 404],
      ['POST', '/v1/responses/resp_1/cancel', 404],
      ['GET', '/v1/responses', 405],
      ['DELETE', '/v1/chat/completions', 405],
    ] as const) {
      const r = await fetch(h.url + path, { method });
      assert.equal(r.status, status, `${method} ${path}`);
      const j = (await r.json()) as {
        error: { message: string; type: string; param: unknown; code: unknown };
      };
      assert.equal(typeof j.error.message, 'string', `${method} ${path}`);
      assert.equal(j.error.type, 'invalid_request_error', `${method} ${path}`);
    }
    // MindIE's own /v1 routes keep MindIE's shape.
    const tok = await fetch(`${h.url}/v1/tokenizer`);
    assert.equal(tok.status, 405);
    assert.equal(typeof ((await tok.json()) as { error_type: unknown }).error_type, 'string');
  });
});

const CALL1 = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';
const CALL2 = '<tool_call>{"name": "get_time", "arguments": {"tz": "Europe/Paris"}}</tool_call>';
const tools: OpenAI.Responses.FunctionTool[] = [
  {
    type: 'function',
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    strict: null,
  },
  {
    type: 'function',
    name: 'get_time',
    parameters: { type: 'object', properties: { tz: { type: 'string' } } },
    strict: null,
  },
];

/** The items of a Response, reduced to what the script decides. */
function itemsOf(r: OpenAI.Responses.Response): unknown[] {
  return r.output.map((item) => {
    if (item.type === 'message')
      return ['message', item.content.map((c) => (c.type === 'output_text' ? c.text : ''))];
    if (item.type === 'reasoning') return ['reasoning', (item.content ?? []).map((c) => c.text)];
    if (item.type === 'function_call') return ['function_call', item.name, item.arguments];
    return [item.type];
  });
}

describe('a scripted model (exact text)', () => {
  test('reasoning: a reasoning item, then the message; reasoning tokens in usage; streamed alike', async () => {
    const reply = '<think>Paris is in France.</think>It is sunny.';
    const s = await serveScripted([reply, reply], '{{ messages }}<think></think>');
    try {
      const unary = await s.openai.responses.create({ model: MODEL_NAME, input: 'Weather in Paris?' });
      assert.deepEqual(itemsOf(unary), [
        ['reasoning', ['Paris is in France.']],
        ['message', ['It is sunny.']],
      ]);
      assert.equal(unary.output_text, 'It is sunny.');
      assert.equal(
        unary.usage?.output_tokens_details.reasoning_tokens,
        '<think>Paris is in France.</think>'.length,
      );

      const stream = s.openai.responses.stream({ model: MODEL_NAME, input: 'Weather in Paris?' });
      let reasoning = '';
      const types: string[] = [];
      for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === 'response.reasoning_text.delta') reasoning += ev.delta;
      }
      const final = await stream.finalResponse();
      assert.equal(reasoning, 'Paris is in France.');
      assert.deepEqual(itemsOf(final), itemsOf(unary));
      assert.deepEqual(final.usage, unary.usage);
      // The reasoning item closes before the message opens.
      assert.ok(
        types.lastIndexOf('response.reasoning_text.done') < types.indexOf('response.output_text.delta'),
      );
      assert.equal(types.filter((t) => t === 'response.output_item.added').length, 2);
    } finally {
      await s.close();
    }
  });

  test('two parallel calls: two function_call items, argument deltas; the outputs sent back', async () => {
    const s = await serveScripted([CALL1 + CALL2, CALL1 + CALL2, 'It is sunny at noon.']);
    try {
      const input: OpenAI.Responses.ResponseInputItem[] = [
        { role: 'user', content: 'Weather and time in Paris?' },
      ];
      const unary = await s.openai.responses.create({ model: MODEL_NAME, input, tools });
      assert.equal(unary.status, 'completed');
      assert.deepEqual(itemsOf(unary), [
        ['function_call', 'get_weather', '{"city": "Paris"}'],
        ['function_call', 'get_time', '{"tz": "Europe/Paris"}'],
      ]);

      const stream = s.openai.responses.stream({ model: MODEL_NAME, input, tools });
      const args = new Map<string, string>();
      for await (const ev of stream) {
        if (ev.type === 'response.function_call_arguments.delta')
          args.set(ev.item_id, (args.get(ev.item_id) ?? '') + ev.delta);
      }
      const final = await stream.finalResponse();
      assert.deepEqual(itemsOf(final), itemsOf(unary));
      for (const item of final.output) {
        if (item.type !== 'function_call') continue;
        assert.match(item.call_id, /^call_/);
        assert.equal(args.get(item.id!), item.arguments);
      }

      const calls = final.output.filter((i) => i.type === 'function_call');
      const answer = await s.openai.responses.create({
        model: MODEL_NAME,
        tools,
        input: [
          ...input,
          ...calls,
          ...calls.map((c) => ({
            type: 'function_call_output' as const,
            call_id: c.call_id,
            output: 'sunny, 12:00',
          })),
        ],
      });
      assert.equal(answer.output_text, 'It is sunny at noon.');
      // A function_call_output must answer a function_call made earlier in the input.
      const orphan = await postJson(`${s.url}/v1/responses`, {
        model: MODEL_NAME,
        input: [...input, { type: 'function_call_output', call_id: 'call_nope', output: 'x' }],
      });
      assert.equal(orphan.status, 400, orphan.text);
      assert.equal(orphan.json.error.param, 'input[1].call_id');
    } finally {
      await s.close();
    }
  });
});
