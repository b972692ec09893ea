import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EngineError } from '../errors.js';
import { FALLBACK_CHATML_TEMPLATE, renderChatTemplate } from './chat-template.js';

test('fallback ChatML template', () => {
  const out = renderChatTemplate(
    FALLBACK_CHATML_TEMPLATE,
    [
      { role: 'system', content: 'S' },
      { role: 'user', content: 'U' },
    ],
    { addGenerationPrompt: true },
  );
  assert.equal(
    out,
    '<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n',
  );
  assert.equal(
    renderChatTemplate(FALLBACK_CHATML_TEMPLATE, [{ role: 'user', content: 'U' }]),
    '<|im_start|>user\nU<|im_end|>\n',
  );
});

test('variables: bos_token, eos_token, tools (none when absent), tool calls with object arguments', () => {
  const template =
    '{{ bos_token }}{% if tools is not none %}T{{ tools | length }}{% endif %}' +
    '{% for m in messages %}{{ m.role }}:{{ m.content }}' +
    '{% if m.tool_calls %}{% for c in m.tool_calls %}[{{ c.function.name }} {{ c.function.arguments.city }}]{% endfor %}{% endif %}' +
    '{% if m.tool_call_id %}({{ m.tool_call_id }}){% endif %}{% endfor %}{{ eos_token }}';
  const messages = [
    {
      role: 'assistant' as const,
      content: '',
      toolCalls: [
        { id: 'c1', type: 'function' as const, function: { name: 'w', arguments: '{"city":"Oslo"}' } },
      ],
    },
    { role: 'tool' as const, content: 'ok', toolCallId: 'c1' },
  ];
  assert.equal(
    renderChatTemplate(template, messages, { bosToken: '<s>', eosToken: '</s>' }),
    '<s>assistant:[w Oslo]tool:ok(c1)</s>',
  );
  assert.equal(
    renderChatTemplate(template, messages, { tools: [{ type: 'function' }] }),
    'T1assistant:[w Oslo]tool:ok(c1)',
  );
});

test("raise_exception in a template is an INVALID_ARGUMENT error with the template's message", () => {
  const template =
    "{% if messages[0].role != 'user' %}{{ raise_exception('Conversation must start with a user message') }}{% endif %}ok";
  assert.equal(renderChatTemplate(template, [{ role: 'user', content: 'x' }]), 'ok');
  assert.throws(
    () => renderChatTemplate(template, [{ role: 'assistant', content: 'x' }]),
    (error: unknown) =>
      error instanceof EngineError &&
      error.code === 'INVALID_ARGUMENT' &&
      /chat template: Conversation must start with a user message/.test(error.message),
  );
});

test('a broken template is a clear INVALID_ARGUMENT error, not a crash', () => {
  assert.throws(
    () => renderChatTemplate('{% for m in messages %}{{ m.content }', [{ role: 'user', content: 'x' }]),
    (error: unknown) =>
      error instanceof EngineError &&
      error.code === 'INVALID_ARGUMENT' &&
      /cannot parse the template/.test(error.message),
  );
  assert.throws(
    () => renderChatTemplate('{{ messages[0].content.nope() }}', [{ role: 'user', content: 'x' }]),
    (error: unknown) =>
      error instanceof EngineError &&
      error.code === 'INVALID_ARGUMENT' &&
      /^chat template: /.test(error.message),
  );
});

test("a request's variables (chat_template_kwargs) and an assistant turn's reasoning_content reach the template", () => {
  // Qwen3's switch and its rendering of earlier reasoning, reduced to the two variables.
  const template =
    '{% for m in messages %}{{ m.role }}:{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content }}|{% endfor %}' +
    '{% if enable_thinking is defined and enable_thinking is false %}<think></think>{% endif %}';
  const messages = [
    { role: 'user' as const, content: 'Q' },
    { role: 'assistant' as const, content: 'A', reasoningContent: 'R' },
  ];
  assert.equal(renderChatTemplate(template, messages), 'user:Q|assistant:<think>R</think>A|');
  assert.equal(
    renderChatTemplate(template, messages, { variables: { enable_thinking: false } }),
    'user:Q|assistant:<think>R</think>A|<think></think>',
  );
});
