/**
 * Grammar-forced tool calls on the real default model (SmolLM2-135M-Instruct), through the
 * OpenAI SDKs against the real gateway, gRPC service and engine (test/gateways-harness.ts):
 * `tool_choice` required and named, unary and streamed, always give calls whose arguments
 * validate against the tool's schema; the tool result sent back gets a text answer. (The
 * exact parsing of every family is tested with a scripted model in gateways-tools.test.ts.)
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import OpenAI from 'openai';
import { MODEL_NAME, postJson, startHarness, type Harness } from './gateways-harness.js';

let h: Harness;
let openai: OpenAI;

before(async () => {
  h = await startHarness();
  openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  await h?.close();
});

const weatherSchema = {
  type: 'object',
  properties: { city: { type: 'string' }, unit: { enum: ['celsius', 'fahrenheit'] } },
  required: ['city', 'unit'],
};
const timeSchema = { type: 'object', properties: { tz: { type: 'string' } }, required: ['tz'] };
const tools: OpenAI.ChatCompletionTool[] = [
  {
    type: 'function',
    function: { name: 'get_weather', description: 'Current weather of a city', parameters: weatherSchema },
  },
  {
    type: 'function',
    function: { name: 'get_time', description: 'Current time in a time zone', parameters: timeSchema },
  },
];
const schemas: Record<string, object> = { get_weather: weatherSchema, get_time: timeSchema };
const messages: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'user', content: 'What is the weather in Paris?' },
];
const ajv = new Ajv2020();

/** Every call names an offered tool and its arguments validate against that tool's schema. */
function assertValidCalls(calls: OpenAI.ChatCompletionMessageToolCall[] | undefined, only?: string): void {
  assert.ok(calls && calls.length > 0, 'at least one call');
  for (const c of calls) {
    assert.equal(c.type, 'function');
    if (c.type !== 'function') continue;
    assert.match(c.id, /^call_/);
    if (only !== undefined) assert.equal(c.function.name, only);
    const schema = schemas[c.function.name];
    assert.ok(schema, `'${c.function.name}' is an offered tool`);
    const args = JSON.parse(c.function.arguments) as unknown;
    assert.ok(ajv.validate(schema, args), `${c.function.arguments}: ${ajv.errorsText()}`);
  }
}

const callsOf = (calls: OpenAI.ChatCompletionMessageToolCall[] | undefined) =>
  (calls ?? []).map((c) => (c.type === 'function' ? [c.function.name, c.function.arguments] : []));

describe('grammar-forced tool calls on the default model', () => {
  test('required: calls that validate, finish_reason tool_calls, no content', async () => {
    const r = await openai.chat.completions.create({
      model: MODEL_NAME,
      messages,
      tools,
      tool_choice: 'required',
      temperature: 0,
      max_tokens: 200,
    });
    const choice = r.choices[0]!;
    assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice.message));
    assert.equal(choice.message.content ?? '', '');
    assertValidCalls(choice.message.tool_calls);
  });

  test('required, sampled: every complete call validates (a max_tokens cut may end inside the last)', async () => {
    for (const seed of [1, 2, 3]) {
      const r = await openai.chat.completions.create({
        model: MODEL_NAME,
        messages,
        tools,
        tool_choice: 'required',
        temperature: 0.9,
        seed,
        max_tokens: 150,
      });
      const choice = r.choices[0]!;
      assert.equal(choice.message.content ?? '', '');
      // The grammar allows more calls after each one; a small model may keep calling.
      assert.ok(['tool_calls', 'length'].includes(choice.finish_reason), choice.finish_reason);
      const calls = choice.message.tool_calls ?? [];
      const complete = choice.finish_reason === 'length' ? calls.slice(0, -1) : calls;
      if (choice.finish_reason === 'tool_calls') assertValidCalls(complete);
      else if (complete.length > 0) assertValidCalls(complete);
    }
  });

  test('a named function: exactly one call of it, unary and streamed alike', async () => {
    const request = {
      model: MODEL_NAME,
      messages,
      tools,
      tool_choice: { type: 'function' as const, function: { name: 'get_time' } },
      temperature: 0,
      max_tokens: 120,
    };
    const unary = await openai.chat.completions.create(request);
    assert.equal(unary.choices[0]!.finish_reason, 'tool_calls');
    assert.equal(unary.choices[0]!.message.tool_calls?.length, 1);
    assertValidCalls(unary.choices[0]!.message.tool_calls, 'get_time');

    const stream = openai.chat.completions.stream(request);
    let contentChunks = 0;
    stream.on('chunk', (c) => {
      if (c.choices[0]?.delta.content) contentChunks++;
    });
    const streamed = await stream.finalChatCompletion();
    assert.equal(streamed.choices[0]!.finish_reason, 'tool_calls');
    assert.equal(contentChunks, 0, 'no call syntax leaks into content');
    assertValidCalls(streamed.choices[0]!.message.tool_calls, 'get_time');
    assert.deepEqual(
      callsOf(streamed.choices[0]!.message.tool_calls),
      callsOf(unary.choices[0]!.message.tool_calls),
    );
  });

  test('n = 2: each choice has its own grammar and one valid call of the named function', async () => {
    const r = await openai.chat.completions.create({
      model: MODEL_NAME,
      messages,
      tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      n: 2,
      temperature: 0.8,
      seed: 7,
      max_tokens: 120,
    });
    assert.equal(r.choices.length, 2);
    for (const choice of r.choices) {
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.tool_calls?.length, 1);
      assertValidCalls(choice.message.tool_calls, 'get_weather');
    }
  });

  test('required with parallel_tool_calls false: exactly one call, streamed', async () => {
    const stream = openai.chat.completions.stream({
      model: MODEL_NAME,
      messages: [{ role: 'user', content: 'Weather in Paris and time in Tokyo?' }],
      tools,
      tool_choice: 'required',
      parallel_tool_calls: false,
      temperature: 0.7,
      seed: 5,
      max_tokens: 200,
    });
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0]!.finish_reason, 'tool_calls');
    assert.equal(final.choices[0]!.message.tool_calls?.length, 1);
    assertValidCalls(final.choices[0]!.message.tool_calls);
  });

  test('the two-step flow: a forced call, its result sent back, a text answer', async () => {
    const first = await openai.chat.completions.create({
      model: MODEL_NAME,
      messages,
      tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      temperature: 0,
      max_tokens: 120,
    });
    const calls = first.choices[0]!.message.tool_calls!;
    assertValidCalls(calls, 'get_weather');
    const answer = await openai.chat.completions.create({
      model: MODEL_NAME,
      messages: [
        ...messages,
        { role: 'assistant', content: null, tool_calls: calls },
        ...calls.map((c): OpenAI.ChatCompletionToolMessageParam => ({
          role: 'tool',
          tool_call_id: c.id,
          content: '{"sky": "sunny", "temperature": 21}',
        })),
      ],
      tools,
      tool_choice: 'none',
      temperature: 0,
      max_tokens: 40,
    });
    const choice = answer.choices[0]!;
    assert.ok(['stop', 'length'].includes(choice.finish_reason), choice.finish_reason);
    assert.ok((choice.message.content ?? '').trim().length > 0, 'a text answer');
    assert.equal(choice.message.tool_calls?.length ?? 0, 0);
  });

  test('runTools with a named function, unary and streamed: the SDK calls it with valid arguments', async () => {
    const seen: unknown[] = [];
    const params = {
      model: MODEL_NAME,
      messages,
      temperature: 0,
      max_tokens: 120,
      tool_choice: { type: 'function' as const, function: { name: 'get_weather' } },
      tools: [
        {
          type: 'function' as const,
          function: {
            name: 'get_weather',
            description: 'Current weather of a city',
            parameters: weatherSchema,
            parse: (args: string) => JSON.parse(args) as unknown,
            function: (args: unknown) => {
              seen.push(args);
              return { sky: 'sunny' };
            },
          },
        },
      ],
    };
    // With a named tool_choice the SDK calls the function once and stops.
    const unary = openai.chat.completions.runTools(params);
    assert.equal(await unary.finalFunctionToolCallResult(), '{"sky":"sunny"}');
    const streamed = openai.chat.completions.runTools({ ...params, stream: true });
    assert.equal(await streamed.finalFunctionToolCallResult(), '{"sky":"sunny"}');
    assert.equal(seen.length, 2);
    for (const args of seen) assert.ok(ajv.validate(weatherSchema, args), JSON.stringify(args));
    assert.deepEqual(seen[1], seen[0], 'greedy: the streamed call is the unary one');
  });

  test('Python openai SDK: streamed deltas of a forced call accumulate to the unary calls', async () => {
    const run = promisify(execFile);
    const { stdout } = await run(
      'python3',
      ['test/clients/openai_tools.py', `${h.url}/v1`, MODEL_NAME, '"required"'],
      { timeout: 120000 },
    );
    const r = JSON.parse(stdout) as {
      unary: string[][];
      streamed: string[][];
      unary_finish: string;
      stream_finish: string;
    };
    assert.equal(r.unary_finish, 'tool_calls');
    assert.equal(r.stream_finish, 'tool_calls');
    assert.ok(r.unary.length > 0);
    assert.deepEqual(r.streamed, r.unary);
  });

  test('invalid forced choices are 400 naming the field', async () => {
    const url = `${h.url}/v1/chat/completions`;
    const cases: [Record<string, unknown>, string][] = [
      [{ tool_choice: 'required' }, 'tool_choice'],
      [
        { tools, tool_choice: { type: 'function', function: { name: 'launch' } } },
        'tool_choice.function.name',
      ],
      [
        {
          tools: [
            { type: 'function', function: { name: 'div', parameters: { type: 'number', multipleOf: 0 } } },
          ],
          tool_choice: 'required',
        },
        'tools[0].function.parameters.multipleOf',
      ],
      [{ tools, tool_choice: 'required', response_format: { type: 'json_object' } }, 'response_format'],
    ];
    for (const [extra, param] of cases) {
      const r = await postJson(url, { model: MODEL_NAME, messages, max_tokens: 5, ...extra });
      assert.equal(r.status, 400, JSON.stringify(r.json));
      assert.equal(r.json.error.param, param, JSON.stringify(r.json));
    }
  });

  test('a schema the allowlist passes but the grammar library cannot compile: 400 when forced, free calls under auto', async () => {
    const url = `${h.url}/v1/chat/completions`;
    const backreference = [
      {
        type: 'function',
        function: {
          name: 'find',
          parameters: { type: 'object', properties: { q: { type: 'string', pattern: '(a)\\1' } } },
        },
      },
    ];
    const forced = await postJson(url, {
      model: MODEL_NAME,
      messages,
      tools: backreference,
      tool_choice: 'required',
    });
    assert.equal(forced.status, 400, JSON.stringify(forced.json));
    assert.equal(forced.json.error.param, 'prompt.tools');
    assert.match(forced.json.error.message, /forced tool call's grammar/);
    const auto = await postJson(url, { model: MODEL_NAME, messages, tools: backreference, max_tokens: 4 });
    assert.equal(auto.status, 200, JSON.stringify(auto.json));
  });
});
