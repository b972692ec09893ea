/**
 * The OpenAI family through the official `openai` npm SDK (and raw HTTP for what the SDK
 * cannot send), against the real engine behind gRPC.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { MODEL_NAME, postJson, startHarness, waitIdle, type Harness } from './gateways-harness.js';

let h: Harness;
let client: OpenAI;

before(async () => {
  h = await startHarness();
  client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
});
after(async () => {
  await h?.close();
});

const question = [{ role: 'user' as const, content: 'Name three colors.' }];

describe('chat completions', () => {
  test('non-streaming answer with usage', async () => {
    const r = await client.chat.completions.create({
      model: MODEL_NAME,
      messages: question,
      max_tokens: 12,
      temperature: 0,
    });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.model, MODEL_NAME);
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.ok(r.choices[0].message.content && r.choices[0].message.content.length > 0);
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.ok(r.usage!.prompt_tokens > 5);
    assert.ok(r.usage!.completion_tokens > 0 && r.usage!.completion_tokens <= 12);
    assert.equal(r.usage!.total_tokens, r.usage!.prompt_tokens + r.usage!.completion_tokens);
    assert.equal(typeof r.usage!.prompt_tokens_details!.cached_tokens, 'number');
  });

  test('streaming with include_usage reproduces the greedy answer, then [DONE]', async () => {
    const whole = await client.chat.completions.create({
      model: MODEL_NAME,
      messages: question,
      max_tokens: 16,
      temperature: 0,
    });
    const stream = await client.chat.completions.create({
      model: MODEL_NAME,
      messages: question,
      max_tokens: 16,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      assert.equal(chunk.object, 'chat.completion.chunk');
      if (chunk.choices.length > 0) {
        assert.equal(chunk.usage, null);
        text += chunk.choices[0].delta.content ?? '';
        finish = chunk.choices[0].finish_reason ?? finish;
      } else usage = chunk.usage;
    }
    assert.ok(chunks > 3);
    assert.equal(text, whole.choices[0].message.content);
    assert.equal(finish, whole.choices[0].finish_reason);
    assert.deepEqual(usage, whole.usage);
  });

  test('a repeated long prompt reports cached prompt tokens (whole KV blocks)', async () => {
    const system = 'You are a careful assistant. '.repeat(40);
    const messages = [{ role: 'system' as const, content: system }, ...question];
    const first = await client.chat.completions.create({
      model: MODEL_NAME,
      messages,
      max_tokens: 2,
      temperature: 0,
    });
    const second = await client.chat.completions.create({
      model: MODEL_NAME,
      messages,
      max_tokens: 2,
      temperature: 0,
    });
    assert.ok(first.usage!.prompt_tokens > 128);
    const cached = second.usage!.prompt_tokens_details!.cached_tokens!;
    assert.ok(cached >= 128, `cached_tokens ${cached}`);
    assert.equal(cached % 128, 0);
  });

  test('n, seed and logprobs', async () => {
    const a = await client.chat.completions.create({
      model: MODEL_NAME,
      messages: question,
      max_tokens: 6,
      temperature: 1,
      seed: 42,
      n: 2,
      logprobs: true,
      top_logprobs: 2,
    });
    const b = await client.chat.completions.create({
      model: MODEL_NAME,
      messages: question,
      max_tokens: 6,
      temperature: 1,
      seed: 42,
      n: 2,
    });
    assert.equal(a.choices.length, 2);
    assert.deepEqual(
      a.choices.map((c) => c.message.content),
      b.choices.map((c) => c.message.content),
    );
    const lp = a.choices[0].logprobs!.content!;
    assert.ok(lp.length > 0);
    assert.equal(lp.map((t) => t.token).join(''), a.choices[0].message.content);
    for (const t of lp) {
      assert.ok(t.logprob <= 0);
      assert.equal(t.top_logprobs.length, 2);
    }
    assert.equal(b.choices[0].logprobs, null);
  });

  test('stop strings end the answer before the stop text', async () => {
    const r = await client.chat.completions.create({
      model: MODEL_NAME,
      messages: [{ role: 'user', content: 'Count from 1 to 10, separated by commas.' }],
      max_tokens: 40,
      temperature: 0,
      stop: ['5'],
    });
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.ok(!r.choices[0].message.content!.includes('5'));
  });
});

describe('completions', () => {
  test('text prompt, echo and logprobs', async () => {
    const r = await client.completions.create({
      model: MODEL_NAME,
      prompt: 'The capital of France is',
      max_tokens: 5,
      temperature: 0,
      logprobs: 2,
      echo: true,
    });
    assert.equal(r.object, 'text_completion');
    const c = r.choices[0];
    assert.ok(c.text.startsWith('The capital of France is'));
    // echo: the prompt's tokens come first (the first without a logprob), then the generated ones.
    const all = r.usage!.prompt_tokens + r.usage!.completion_tokens;
    assert.equal(c.logprobs!.tokens!.length, all);
    assert.equal(c.logprobs!.top_logprobs!.length, all);
    assert.equal(c.logprobs!.token_logprobs![0], null);
    assert.equal(c.logprobs!.text_offset![0], 0);
    assert.equal(c.logprobs!.text_offset![r.usage!.prompt_tokens], 'The capital of France is'.length);
  });

  test('several prompts, streamed and not, agree', async () => {
    const prompts = ['Once upon a time', 'The sky is'];
    const whole = await client.completions.create({
      model: MODEL_NAME,
      prompt: prompts,
      max_tokens: 6,
      temperature: 0,
    });
    assert.equal(whole.choices.length, 2);
    const stream = await client.completions.create({
      model: MODEL_NAME,
      prompt: prompts,
      max_tokens: 6,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    const texts = ['', ''];
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      for (const c of chunk.choices) texts[c.index] += c.text;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.deepEqual(
      texts,
      whole.choices.sort((a, b) => a.index - b.index).map((c) => c.text),
    );
    assert.deepEqual(usage, whole.usage);
  });

  test('token-id prompt equals the same text prompt', async () => {
    const ids = await h.client.tokenize('Hello, my name is', true);
    const a = await client.completions.create({
      model: MODEL_NAME,
      prompt: ids,
      max_tokens: 5,
      temperature: 0,
    });
    const b = await client.completions.create({
      model: MODEL_NAME,
      prompt: 'Hello, my name is',
      max_tokens: 5,
      temperature: 0,
    });
    assert.equal(a.choices[0].text, b.choices[0].text);
  });
});

describe('models', () => {
  test('list and retrieve', async () => {
    const list = await client.models.list();
    assert.deepEqual(
      list.data.map((m) => m.id),
      [MODEL_NAME],
    );
    const m = await client.models.retrieve(MODEL_NAME);
    assert.equal(m.id, MODEL_NAME);
    await assert.rejects(client.models.retrieve('nope'), OpenAI.NotFoundError);
  });
});

describe('errors', () => {
  test('out-of-range and wrong-type fields are 400 naming the field', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: MODEL_NAME, messages: question, temperature: 5 }),
      (err: unknown) =>
        err instanceof OpenAI.BadRequestError &&
        (err.error as { param: string }).param === 'temperature' &&
        /temperature/.test(err.message),
    );
    const r = await postJson(`${h.url}/v1/chat/completions`, { model: MODEL_NAME, messages: 'hi' });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.param, 'messages');
    assert.equal(r.json.error.type, 'invalid_request_error');
  });

  test('unknown model is 404, unsupported features 400, malformed JSON 400', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'other-model', messages: question }),
      OpenAI.NotFoundError,
    );
    const bad = await postJson(`${h.url}/v1/completions`, '{"prompt": "x", ');
    assert.equal(bad.status, 400);
    assert.match(bad.json.error.message, /not valid JSON/);
  });

  test('a prompt longer than the engine accepts is a 400 from the engine', async () => {
    await assert.rejects(
      client.completions.create({ model: MODEL_NAME, prompt: 'word '.repeat(2000), max_tokens: 1 }),
      OpenAI.BadRequestError,
    );
  });

  test('an oversized body is 413 without being read whole', async () => {
    const r = await postJson(`${h.url}/v1/completions`, { prompt: 'x'.repeat(41 * 1024 * 1024) });
    assert.equal(r.status, 413);
    assert.match(r.json.error.message, /maxRequestLength/);
  });
});

describe('function calling on the default model', () => {
  const tools = [
    {
      type: 'function' as const,
      function: {
        name: 'get_weather',
        description: 'Current weather of a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    },
  ];
  const url = () => `${h.url}/v1/chat/completions`;

  test('tools with tool_choice auto: a chat.completion with tool_calls and MindIE timings', async () => {
    const r = await postJson(url(), {
      model: MODEL_NAME,
      messages: question,
      tools,
      max_tokens: 2,
      temperature: 0,
    });
    assert.equal(r.status, 200);
    assert.ok(Array.isArray(r.json.choices[0].message.tool_calls));
    assert.ok(['stop', 'length', 'tool_calls'].includes(r.json.choices[0].finish_reason));
    assert.equal(typeof r.json.prefill_time, 'number');
    assert.ok(Array.isArray(r.json.decode_time_arr));
    assert.equal(r.json.usage.completion_tokens_details.reasoning_tokens, 0);
  });

  test('required and named tool_choice: a grammar-forced call (more in gateways-forced-tools.test.ts)', async () => {
    for (const tool_choice of ['required', { type: 'function', function: { name: 'get_weather' } }]) {
      const r = await postJson(url(), {
        model: MODEL_NAME,
        messages: question,
        tools,
        tool_choice,
        temperature: 0,
        max_tokens: 60,
      });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.equal(r.json.choices[0].message.tool_calls[0].function.name, 'get_weather');
      assert.equal(r.json.choices[0].message.content, '');
    }
  });

  test('the two-step flow: tool_call_id must match an earlier call; content may be null', async () => {
    const call = {
      id: 'call_1',
      type: 'function',
      function: { name: 'get_weather', arguments: '{"city": "Paris"}' },
    };
    const messages = (toolCallId: string) => [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: toolCallId, content: '{"sky": "sunny"}' },
    ];
    const ok = await postJson(url(), {
      model: MODEL_NAME,
      messages: messages('call_1'),
      tools,
      max_tokens: 2,
    });
    assert.equal(ok.status, 200);
    const bad = await postJson(url(), {
      model: MODEL_NAME,
      messages: messages('call_9'),
      tools,
      max_tokens: 2,
    });
    assert.equal(bad.status, 400);
    assert.match(bad.json.error.param, /messages\[2\]\.tool_call_id/);
    assert.match(
      bad.json.error.message,
      /'call_9' is not the id of a tool call of an earlier assistant message/,
    );
  });

  test('n, logprobs and stop work with tools (refused by MindIE with function call)', async () => {
    const r = await postJson(url(), {
      model: MODEL_NAME,
      messages: question,
      tools,
      n: 2,
      logprobs: true,
      stop: ['\n'],
      max_tokens: 3,
      temperature: 0.7,
      seed: 1,
    });
    assert.equal(r.status, 200);
    assert.equal(r.json.choices.length, 2);
    for (const c of r.json.choices) {
      assert.ok(Array.isArray(c.message.tool_calls));
      assert.ok(c.logprobs.content.length > 0);
      assert.ok(!c.message.content.includes('\n'));
    }
  });

  test('function-call requests: JSON deeper than 10 levels and best_of are 400', async () => {
    let deep: object = { type: 'string' };
    for (let i = 0; i < 6; i++) deep = { type: 'object', properties: { x: deep } };
    const deepTools = [{ type: 'function', function: { name: 'f', parameters: deep } }];
    const r = await postJson(url(), { model: MODEL_NAME, messages: question, tools: deepTools });
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /at most 10 levels deep/);
    const b = await postJson(url(), { model: MODEL_NAME, messages: question, tools, best_of: 2 });
    assert.equal(b.status, 400);
    assert.equal(b.json.error.param, 'best_of');
  });
});

test('a client that disconnects mid-stream cancels its engine request', async () => {
  const controller = new AbortController();
  const res = await fetch(`${h.url}/v1/completions`, {
    method: 'POST',
    body: JSON.stringify({
      prompt: 'Write a very long story about a dragon.',
      max_tokens: 700,
      temperature: 0,
      ignore_eos: true,
      stream: true,
    }),
    signal: controller.signal,
  });
  const reader = res.body!.getReader();
  await reader.read();
  const busy = await h.client.status();
  assert.equal(busy.running, 1);
  controller.abort();
  // 700 tokens would take many seconds; cancellation frees the slot at once.
  await waitIdle(h.client, 3000);
  const s = await h.client.status();
  assert.equal(s.freeBlocks, s.totalBlocks);
});

test('fields: a per-request chat template refused, unknown ones answered and named, seed -1, truncate_prompt_tokens', async () => {
  const messages = [{ role: 'user', content: 'Hi' }];
  for (const path of ['/v1/chat/completions', '/v1/completions', '/generate']) {
    const body = path === '/v1/chat/completions' ? { messages } : { prompt: 'Hi' };
    const r = await postJson(h.url + path, { ...body, max_tokens: 2, chat_template: '{{ x }}' });
    assert.equal(r.status, path === '/generate' ? 422 : 400, path);
    assert.equal(
      typeof r.json.error === 'string' ? r.json.error : r.json.error.message,
      'chat_template: a chat template per request is not supported by this server',
    );
  }
  const off = await postJson(`${h.url}/v1/chat/completions`, {
    messages,
    max_tokens: 2,
    min_p: 0,
    typical_p: 1,
    bad_words: [],
    seed: -1,
    frobnicate: true,
    guided_decoding_backend: 'xgrammar',
  });
  assert.equal(off.status, 200, off.text);
  assert.equal(off.headers.get('x-prism-ignored-fields'), 'frobnicate, guided_decoding_backend');
  // truncate_prompt_tokens keeps the prompt's last N tokens.
  const cut = await postJson(`${h.url}/v1/completions`, {
    prompt: 'one two three four five six seven eight',
    max_tokens: 1,
    truncate_prompt_tokens: 3,
  });
  assert.equal(cut.status, 200, cut.text);
  assert.equal(cut.json.usage.prompt_tokens, 3);
  const vllm = await postJson(`${h.url}/generate`, { prompt: 'Hi', max_tokens: 2, seed: -1, top_a: 1 });
  assert.equal(vllm.status, 200);
  assert.equal(vllm.headers.get('x-prism-ignored-fields'), 'top_a');
});

test('sampling fields: logit_bias forces and forbids a greedy token, min_p 1 is greedy, bad_words bans a word, typical_p samples; priority needs the priority policy', async () => {
  const prompt = 'The capital of France is';
  const complete = async (extra: object, path = '/v1/completions') => {
    const r = await postJson(h.url + path, { prompt, max_tokens: 3, temperature: 0, ...extra });
    assert.equal(r.status, 200, r.text);
    return (path === '/generate' ? r.json.text[0].slice(prompt.length) : r.json.choices[0].text) as string;
  };
  const idsOf = async (text: string) =>
    (await postJson(`${h.url}/tokenize`, { prompt: text, add_special_tokens: false })).json
      .tokens as number[];
  const greedy = await complete({ max_tokens: 1 });
  const [first] = await idsOf(greedy);
  const [forced] = await idsOf(' Berlin');
  assert.equal(await complete({ max_tokens: 1, logit_bias: { [forced!]: 100 } }), ' Berlin');
  assert.notEqual(await complete({ max_tokens: 1, logit_bias: { [first!]: -100 } }), greedy);
  // vLLM's /generate takes it too.
  assert.equal(await complete({ max_tokens: 1, logit_bias: { [forced!]: 100 } }, '/generate'), ' Berlin');
  // min_p 1 keeps only the most likely token: sampling at any temperature is greedy.
  const three = await complete({});
  assert.equal(await complete({ temperature: 1.5, seed: 3, min_p: 1 }), three);
  // bad_words: the greedy continuation's first word is banned (with or without its space).
  const word = three.trim().split(/\s+/)[0]!;
  const banned = await complete({ bad_words: [word] });
  assert.ok(!banned.trimStart().startsWith(word), `'${banned}' starts with the banned '${word}'`);
  const typical = { temperature: 1, seed: 7, typical_p: 0.5 };
  assert.equal(await complete(typical), await complete(typical), 'seeded typical sampling repeats');
  for (const [field, value, rule] of [
    ['logit_bias', { 5: 101 }, 'logit_bias[5]: must be <= 100'],
    ['logit_bias', { x: 1 }, 'logit_bias'],
    ['min_p', 1.5, 'min_p'],
    ['typical_p', 0, 'typical_p'],
    ['bad_words', [''], 'bad_words[0]'],
  ] as const) {
    const r = await postJson(`${h.url}/v1/completions`, { prompt, max_tokens: 1, [field]: value });
    assert.equal(r.status, 400, `${field} ${JSON.stringify(value)}`);
    assert.ok(r.json.error.message.includes(rule), r.json.error.message);
  }
  const vocab = await postJson(`${h.url}/v1/completions`, {
    prompt,
    max_tokens: 1,
    logit_bias: { 999999: 1 },
  });
  assert.equal(vocab.status, 400);
  assert.match(vocab.json.error.message, /logit_bias\.999999: must be keyed by a token id in \[0, \d+\)/);
  // This engine schedules first come, first served: a priority other than 0 is refused (vLLM's rule).
  const p = await postJson(`${h.url}/v1/chat/completions`, {
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 1,
    priority: 2,
  });
  assert.equal(p.status, 400);
  assert.match(p.json.error.message, /priority: must be 0 unless the engine schedules by priority/);
  assert.equal(
    (await postJson(`${h.url}/v1/completions`, { prompt, max_tokens: 1, priority: 0 })).status,
    200,
  );
});
