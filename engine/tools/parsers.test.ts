/**
 * Golden tests of the nine parser families: the exact text each model family writes (from the
 * families' chat templates and reference parsers), two parallel calls, unicode in arguments,
 * and every stream split (testing.ts: char by char and cut at every character boundary —
 * the detokenizer never splits a UTF-8 sequence, so these are all the byte boundaries a
 * stream can show).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chatglm2 } from './parsers/chatglm2.js';
import { chatglm3 } from './parsers/chatglm3.js';
import { deepseekV3 } from './parsers/deepseek-v3.js';
import { deepseekV31 } from './parsers/deepseek-v31.js';
import { glm4 } from './parsers/glm4.js';
import { llama3 } from './parsers/llama3.js';
import { qwen1_5 } from './parsers/qwen1-5.js';
import { qwen2_5 } from './parsers/qwen2-5.js';
import { qwen3 } from './parsers/qwen3.js';
import { checkGolden, replay } from './testing.js';

const ctx = { toolNames: ['get_weather', 'get_time'] };
const W = { name: 'get_weather', arguments: '{"city": "Paris"}' };
const T = { name: 'get_time', arguments: '{"tz": "Europe/Paris"}' };
const U = { name: 'get_weather', arguments: '{"city": "東京 🌸", "note": "naïve \\"q\\""}' };

describe('hermes (qwen2_5, qwen3)', () => {
  for (const family of [qwen2_5, qwen3]) {
    it(`${family.name}: one call, exact model text`, () => {
      checkGolden(
        family,
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        {
          content: '',
          calls: [W],
        },
      );
    });
  }
  it('two parallel calls with content before them', () => {
    checkGolden(
      qwen3,
      'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"tz": "Europe/Paris"}}\n</tool_call>',
      { content: 'Let me check.', calls: [W, T] },
    );
  });
  it('unicode arguments', () => {
    checkGolden(qwen3, `<tool_call>\n{"name": "get_weather", "arguments": ${U.arguments}}\n</tool_call>`, {
      content: '',
      calls: [U],
    });
  });
  it('no call: the text verbatim, including what looks like the start of a marker', () => {
    checkGolden(qwen3, 'Use a <tool> tag, not <tool_c.\n', {
      content: 'Use a <tool> tag, not <tool_c.\n',
      calls: [],
    });
  });
  it('a tool without parameters gets "{}"', () => {
    checkGolden(qwen3, '<tool_call>\n{"name": "get_time"}\n</tool_call>', {
      content: '',
      calls: [{ name: 'get_time', arguments: '{}' }],
    });
  });
  it('a block that is not a call stays content', () => {
    checkGolden(qwen3, 'a <tool_call>oops</tool_call> b', {
      content: 'a <tool_call>oops</tool_call> b',
      calls: [],
    });
  });
});

describe('deepseek_v3 (V3-0324, R1-0528)', () => {
  const call = (n: string, a: string) =>
    `<｜tool▁call▁begin｜>function<｜tool▁sep｜>${n}\n\`\`\`json\n${a}\n\`\`\`<｜tool▁call▁end｜>`;
  it('one call', () => {
    checkGolden(deepseekV3, `<｜tool▁calls▁begin｜>${call(W.name, W.arguments)}<｜tool▁calls▁end｜>`, {
      content: '',
      calls: [W],
    });
  });
  it('two parallel calls after content, unicode', () => {
    checkGolden(
      deepseekV3,
      `I will look.<｜tool▁calls▁begin｜>${call(U.name, U.arguments)}\n${call(T.name, T.arguments)}<｜tool▁calls▁end｜>`,
      { content: 'I will look.', calls: [U, T] },
    );
  });
});

describe('deepseek_v31', () => {
  const call = (n: string, a: string) => `<｜tool▁call▁begin｜>${n}<｜tool▁sep｜>${a}<｜tool▁call▁end｜>`;
  it('two parallel calls, unicode', () => {
    checkGolden(
      deepseekV31,
      `<｜tool▁calls▁begin｜>${call(U.name, U.arguments)}${call(T.name, T.arguments)}<｜tool▁calls▁end｜>`,
      { content: '', calls: [U, T] },
    );
  });
  it('plain answer', () => {
    checkGolden(deepseekV31, 'Paris is sunny.', { content: 'Paris is sunny.', calls: [] });
  });
});

describe('llama3 JSON', () => {
  it('one call with parameters', () => {
    checkGolden(llama3, '{"name": "get_weather", "parameters": {"city": "Paris"}}', {
      content: '',
      calls: [W],
    });
  });
  it('python_tag, two calls separated by ;, unicode', () => {
    checkGolden(
      llama3,
      `<|python_tag|>{"name": "get_weather", "parameters": ${U.arguments}}; {"name": "get_time", "parameters": {"tz": "Europe/Paris"}}`,
      { content: '', calls: [U, T] },
    );
  });
  it('a JSON answer that is not a call is content', () => {
    checkGolden(llama3, '{"answer": 42}', { content: '{"answer": 42}', calls: [] });
  });
  it('prose is content', () => {
    checkGolden(llama3, 'The weather is {nice}.', { content: 'The weather is {nice}.', calls: [] });
  });
});

describe('qwen1_5_or_2 (✿FUNCTION✿)', () => {
  it('one call', () => {
    checkGolden(qwen1_5, '✿FUNCTION✿: get_weather\n✿ARGS✿: {"city": "Paris"}\n✿RESULT✿', {
      content: '',
      calls: [W],
    });
  });
  it('thought, then two calls, unicode', () => {
    checkGolden(
      qwen1_5,
      `I need both.\n✿FUNCTION✿: get_weather\n✿ARGS✿: ${U.arguments}\n✿FUNCTION✿: get_time\n✿ARGS✿: {"tz": "Europe/Paris"}\n✿RESULT✿`,
      { content: 'I need both.', calls: [U, T] },
    );
  });
});

describe('glm_4 (GLM-4-9B-Chat)', () => {
  it('one call', () => {
    checkGolden(glm4, 'get_weather\n{"city": "Paris"}', { content: '', calls: [W] }, ctx);
  });
  it('two calls split by <|assistant|>, unicode', () => {
    checkGolden(
      glm4,
      `get_weather\n${U.arguments}<|assistant|>get_time\n{"tz": "Europe/Paris"}`,
      { content: '', calls: [U, T] },
      ctx,
    );
  });
  it('prose, even starting with a tool-like word, is content', () => {
    checkGolden(
      glm4,
      'get_weather is a tool.\nIt needs a city.',
      { content: 'get_weather is a tool.\nIt needs a city.', calls: [] },
      ctx,
    );
    checkGolden(glm4, 'get\nthe answer', { content: 'get\nthe answer', calls: [] }, ctx);
  });
});

describe('chatglm3', () => {
  it('one call, Python keyword arguments become JSON', () => {
    checkGolden(
      chatglm3,
      "get_weather\n```python\ntool_call(city='Paris')\n```",
      {
        content: '',
        calls: [{ name: 'get_weather', arguments: '{"city": "Paris"}' }],
      },
      ctx,
    );
  });
  it('two calls, unicode, literals', () => {
    checkGolden(
      chatglm3,
      'get_weather\n```python\ntool_call(city=\'東京 🌸\', days=3, hourly=True, extra=None, tags=[\'a\', "b"])\n```<|assistant|>get_time\n```python\ntool_call(tz="Europe/Paris")\n```',
      {
        content: '',
        calls: [
          {
            name: 'get_weather',
            arguments: '{"city": "東京 🌸", "days": 3, "hourly": true, "extra": null, "tags": ["a", "b"]}',
          },
          T,
        ],
      },
      ctx,
    );
  });
  it('a normal reply is content', () => {
    checkGolden(
      chatglm3,
      '\nHello! How can I help?',
      { content: '\nHello! How can I help?', calls: [] },
      ctx,
    );
  });
});

describe('chatglm2', () => {
  it('returns the text as content, unparsed', () => {
    checkGolden(chatglm2, '<tool_call>{"name": "x"}</tool_call>', {
      content: '<tool_call>{"name": "x"}</tool_call>',
      calls: [],
    });
  });
});

describe('streaming deltas', () => {
  it('first delta carries index, id, type, name; later ones argument fragments only', async () => {
    const { ToolCallStream } = await import('./stream.js');
    const s = new ToolCallStream(qwen3, ctx, true, () => 'call_1');
    const d1 = s.update('<tool_call>\n{"name": "get_weather", "arguments": {"ci', false);
    assert.deepEqual(d1.toolCalls, [
      { index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } },
      { index: 0, function: { arguments: '{"ci' } },
    ]);
    const d2 = s.update(
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
      true,
    );
    assert.deepEqual(d2, {
      content: '',
      toolCalls: [{ index: 0, function: { arguments: 'ty": "Paris"}' } }],
    });
  });
  it('parallel_tool_calls false keeps the first call only', async () => {
    const { ToolCallStream } = await import('./stream.js');
    const s = new ToolCallStream(qwen3, ctx, false);
    s.update(
      '<tool_call>{"name": "get_weather", "arguments": {}}</tool_call><tool_call>{"name": "get_time", "arguments": {}}</tool_call>',
      true,
    );
    assert.deepEqual(
      s.result().calls.map((c) => c.function.name),
      ['get_weather'],
    );
  });
});

describe('every family on random mixes of its own syntax', () => {
  // Pieces of every family's syntax, JSON and prose: whatever a model may write. Streaming
  // such text must never throw and must add up to the unary parse.
  const PIECES = [
    '<tool_call>',
    '</tool_call>',
    '{"name": "get_weather", ',
    '"arguments": {"city": "P"}',
    '}',
    '{',
    '"',
    '<｜tool▁calls▁begin｜>',
    '<｜tool▁call▁begin｜>',
    '<｜tool▁sep｜>',
    '<｜tool▁call▁end｜>',
    '<｜tool▁calls▁end｜>',
    'function',
    'get_weather',
    'get_time',
    '\n',
    ' ',
    '```json\n',
    '```',
    '<|python_tag|>',
    '"parameters": {}',
    ';',
    '✿FUNCTION✿: ',
    '✿ARGS✿: ',
    '✿RESULT✿',
    '<|assistant|>',
    '```python\n',
    "tool_call(city='x')",
    'Hello',
    '東京',
  ];
  let seed = 12345;
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const families = [chatglm2, chatglm3, glm4, deepseekV3, deepseekV31, llama3, qwen1_5, qwen2_5, qwen3];
  for (const family of families) {
    it(family.name, () => {
      for (let k = 0; k < 150; k++) {
        const text = Array.from({ length: 1 + rand(12) }, () => PIECES[rand(PIECES.length)]).join('');
        const expected = family.parse(text, true, ctx);
        assert.deepEqual(replay(family, ctx, [...text], text), expected, JSON.stringify(text));
      }
    });
  }
});
