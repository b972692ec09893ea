/**
 * Thinking controls on the real default model served with a Qwen3-style template (the
 * configured `chat_template`: ChatML, `enable_thinking`, past reasoning rendered from
 * `reasoning_content`): chat_template_kwargs and reasoning_effort reach the template on chat,
 * Responses, Anthropic's `thinking` and Ollama's `think`; reasoning sent back on an assistant
 * message (each family's field) is rendered; effort levels are answered as ignored fields.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { MODEL_NAME, postJson, startHarness, type Harness } from './gateways-harness.js';

// Qwen3's switch and its rendering of an assistant turn's reasoning, on ChatML.
const TEMPLATE =
  "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' }}" +
  "{% if m.reasoning_content %}{{ '<think>\\n' + m.reasoning_content + '\\n</think>\\n\\n' }}{% endif %}" +
  "{{ m.content + '<|im_end|>\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}" +
  "{% if enable_thinking is defined and enable_thinking is false %}{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}{% endif %}";

let h: Harness;
let dir: string;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'prism-thinking-'));
  const path = join(dir, 'qwen3-like.jinja');
  writeFileSync(path, TEMPLATE);
  h = await startHarness(undefined, { engine: { chatTemplatePath: path } });
});
after(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

const user = [{ role: 'user', content: 'Hi' }];
const OFF = '<|im_start|>assistant\n<think>\n\n</think>\n\n';

test('chat_template_kwargs and reasoning_effort none switch thinking off in the rendered prompt', async () => {
  const on = await postJson(`${h.url}/apply-template`, { messages: user });
  assert.ok(on.json.prompt.endsWith('<|im_start|>assistant\n'));
  const off = await postJson(`${h.url}/apply-template`, {
    messages: user,
    chat_template_kwargs: { enable_thinking: false },
  });
  assert.ok(off.json.prompt.endsWith(OFF), off.json.prompt);
  // The same prompt through each family's switch: its prompt tokens are the "off" prompt's.
  const offCount = (await postJson(`${h.url}/tokenize`, { content: off.json.prompt })).json.tokens.length;
  const onCount = (await postJson(`${h.url}/tokenize`, { content: on.json.prompt })).json.tokens.length;
  assert.ok(offCount > onCount);
  const answers = [
    await postJson(`${h.url}/v1/chat/completions`, {
      messages: user,
      max_tokens: 1,
      chat_template_kwargs: { enable_thinking: false },
    }),
    await postJson(`${h.url}/v1/chat/completions`, {
      messages: user,
      max_tokens: 1,
      reasoning_effort: 'none',
    }),
    await postJson(`${h.url}/v1/responses`, {
      input: 'Hi',
      max_output_tokens: 16,
      reasoning: { effort: 'none' },
    }),
    await postJson(`${h.url}/v1/messages`, {
      model: MODEL_NAME,
      max_tokens: 1,
      messages: user,
      thinking: { type: 'disabled' },
    }),
    await postJson(`${h.url}/api/chat`, {
      model: MODEL_NAME,
      stream: false,
      think: false,
      messages: user,
      options: { num_predict: 1 },
    }),
  ];
  const prompts = [
    answers[0].json.usage.prompt_tokens,
    answers[1].json.usage.prompt_tokens,
    answers[2].json.usage.input_tokens,
    answers[3].json.usage.input_tokens + answers[3].json.usage.cache_read_input_tokens,
    answers[4].json.prompt_eval_count,
  ];
  assert.deepEqual(prompts, Array(5).fill(offCount));

  const levels = await postJson(`${h.url}/v1/chat/completions`, {
    messages: user,
    max_tokens: 1,
    reasoning_effort: 'high',
  });
  assert.equal(levels.status, 200);
  assert.equal(levels.headers.get('x-prism-ignored-fields'), 'reasoning_effort');
  assert.equal(levels.json.usage.prompt_tokens, onCount);
  const clash = await postJson(`${h.url}/v1/chat/completions`, {
    messages: user,
    reasoning_effort: 'none',
    chat_template_kwargs: { enable_thinking: true },
  });
  assert.equal(clash.status, 400);
  assert.equal(clash.json.error.param, 'reasoning_effort');
  const reserved = await postJson(`${h.url}/v1/chat/completions`, {
    messages: user,
    chat_template_kwargs: { add_generation_prompt: false },
  });
  assert.equal(reserved.status, 400);
  assert.equal(reserved.json.error.param, 'prompt.chat_template_kwargs.add_generation_prompt');
});

test('reasoning sent back on an assistant message is rendered, whichever family sends it', async () => {
  const turns = (assistant: object) => [
    { role: 'user', content: 'Q' },
    assistant,
    { role: 'user', content: 'R' },
  ];
  const rendered = '<|im_start|>assistant\n<think>\nI thought.\n</think>\n\nA<|im_end|>';
  for (const assistant of [
    { role: 'assistant', content: 'A', reasoning_content: 'I thought.' },
    { role: 'assistant', content: 'A', reasoning: 'I thought.' },
  ]) {
    const r = await postJson(`${h.url}/apply-template`, { messages: turns(assistant) });
    assert.ok(r.json.prompt.includes(rendered), r.json.prompt);
  }
  const withThinking = (
    await postJson(`${h.url}/apply-template`, {
      messages: turns({ role: 'assistant', content: 'A', reasoning: 'I thought.' }),
    })
  ).json.prompt;
  const count = (await postJson(`${h.url}/tokenize`, { content: withThinking })).json.tokens.length;
  const anthropic = await postJson(`${h.url}/v1/messages/count_tokens`, {
    model: MODEL_NAME,
    messages: turns({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'I thought.', signature: '' },
        { type: 'text', text: 'A' },
      ],
    }),
  });
  assert.equal(anthropic.json.input_tokens, count);
  const ollama = await postJson(`${h.url}/api/chat`, {
    model: MODEL_NAME,
    stream: false,
    messages: turns({ role: 'assistant', content: 'A', thinking: 'I thought.' }),
    options: { num_predict: 1 },
  });
  assert.equal(ollama.json.prompt_eval_count, count);
  const responses = await postJson(`${h.url}/v1/responses`, {
    max_output_tokens: 16,
    input: [
      { role: 'user', content: 'Q' },
      { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'I thought.' }] },
      { role: 'assistant', content: 'A' },
      { role: 'user', content: 'R' },
    ],
  });
  assert.equal(responses.status, 200, responses.text);
  assert.equal(responses.json.usage.input_tokens, count);
});
