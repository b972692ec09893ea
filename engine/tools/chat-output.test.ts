import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatResult } from '../types.js';
import { ChatOutputStream, type ChatParsing } from './chat-output.js';
import { deepseekV3 } from './parsers/deepseek-v3.js';
import { qwen3 } from './parsers/qwen3.js';
import { splitReasoning } from './reasoning.js';

/** Streams `tokens` and checks the deltas add up to the result; returns the result. */
function run(parsing: ChatParsing, tokens: readonly string[]): ChatResult {
  const s = new ChatOutputStream(parsing);
  let content = '';
  let reasoning = '';
  const args: string[] = [];
  const take = (d: ReturnType<ChatOutputStream['push']>): void => {
    content += d.content;
    reasoning += d.reasoning;
    for (const t of d.toolCalls) args[t.index] = (args[t.index] ?? '') + (t.function.arguments ?? '');
  };
  for (const t of tokens) take(s.push(t));
  take(s.finish());
  const r = s.result();
  assert.equal(content, r.content);
  assert.equal(reasoning, r.reasoningContent);
  assert.deepEqual(
    args,
    r.toolCalls.map((c) => c.function.arguments),
  );
  return r;
}

function everySplit(parsing: ChatParsing, text: string, check: (r: ChatResult) => void): void {
  const chars = [...text];
  check(run(parsing, chars));
  for (let i = 1; i < chars.length; i++)
    check(run(parsing, [chars.slice(0, i).join(''), chars.slice(i).join('')]));
}

const tools = { family: qwen3, toolNames: ['get_weather'], parallel: true };

describe('reasoning', () => {
  it('Qwen3: <think> block, then a hermes call, at every split', () => {
    const text =
      '<think>\nThe user wants the weather in Paris.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    everySplit({ reasoning: { startsInReasoning: false }, tools }, text, (r) => {
      assert.equal(r.reasoningContent, '\nThe user wants the weather in Paris.\n');
      assert.equal(r.content, '');
      assert.deepEqual(
        r.toolCalls.map((c) => [c.function.name, c.function.arguments]),
        [['get_weather', '{"city": "Paris"}']],
      );
    });
  });
  it('DeepSeek-R1: the prompt opened the block; reasoning then answer, then a V3 call', () => {
    const text =
      'Need weather.</think>\n\nChecking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>';
    everySplit(
      { reasoning: { startsInReasoning: true }, tools: { ...tools, family: deepseekV3 } },
      text,
      (r) => {
        assert.equal(r.reasoningContent, 'Need weather.');
        assert.equal(r.content, 'Checking.');
        assert.equal(r.toolCalls.length, 1);
      },
    );
  });
  it('no think block: all content; a tool call inside the thinking is not a call', () => {
    everySplit({ reasoning: { startsInReasoning: false }, tools: null }, 'Hi there <b>', (r) => {
      assert.equal(r.content, 'Hi there <b>');
      assert.equal(r.reasoningContent, '');
      assert.equal(r.reasoningTokens, 0);
    });
    const r = run({ reasoning: { startsInReasoning: false }, tools }, [
      '<think>maybe <tool_call>{"name": "get_weather"}</tool_call>?</think>',
      'No call needed.',
    ]);
    assert.equal(r.toolCalls.length, 0);
    assert.equal(r.content, 'No call needed.');
  });
  it('counts reasoning tokens (the closing tag included)', () => {
    const r = run({ reasoning: { startsInReasoning: false }, tools: null }, [
      ' ',
      '<think>',
      'a',
      'b',
      '</think>',
      '\n\n',
      'Answer',
    ]);
    assert.equal(r.reasoningTokens, 5);
    assert.equal(r.reasoningContent, 'ab');
    assert.equal(r.content, 'Answer');
  });
  it('an unfinished think block is all reasoning at the end (cut by length)', () => {
    assert.deepEqual(splitReasoning('<think>abc</thi', true, false), {
      reasoning: 'abc</thi',
      rest: '',
      opened: true,
      closed: true,
    });
    assert.equal(splitReasoning('<think>abc</thi', false, false).reasoning, 'abc');
  });
});

describe('reasoning and tools on random mixes', () => {
  const PIECES = [
    '<think>',
    '</think>',
    '<thi',
    'nk>',
    '\n',
    ' ',
    'x',
    '<tool_call>',
    '{"name": "get_weather"}',
    '</tool_call>',
  ];
  let seed = 99;
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (const startsInReasoning of [false, true]) {
    it(`startsInReasoning ${startsInReasoning}: streamed pieces add up to the result at every split`, () => {
      for (let k = 0; k < 100; k++) {
        const text = Array.from({ length: 1 + rand(10) }, () => PIECES[rand(PIECES.length)]).join('');
        const parsing = { reasoning: { startsInReasoning }, tools };
        const whole = run(parsing, [text]);
        const chars = run(parsing, [...text]);
        assert.deepEqual(
          [chars.content, chars.reasoningContent, chars.toolCalls.map((c) => c.function)],
          [whole.content, whole.reasoningContent, whole.toolCalls.map((c) => c.function)],
          JSON.stringify(text),
        );
      }
    });
  }
});
