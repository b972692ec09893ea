/**
 * Tool calling through the engine core: a scripted runner makes the "model" write a hermes
 * call; the finish event carries the parsed call and finish reason tool_calls, the token
 * events' chat deltas add up to it, and the request checks fail the right way.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EngineCore } from '../engine-core.js';
import { EngineError } from '../errors.js';
import { resolveEngineOptions } from '../options.js';
import { CharTokenizer } from '../testing/char-tokenizer.js';
import { ScriptedSim } from '../testing/scripted-sim.js';
import type { EngineInfo, FinishEvent, GenerateEvent, GenerateRequest } from '../types.js';

function engine(script: string): EngineCore {
  return new EngineCore({
    runner: new ScriptedSim([script]),
    tokenizer: new CharTokenizer(),
    options: resolveEngineOptions({
      cacheBlockSize: 4,
      maxSeqLen: 1500,
      maxInputTokenLen: 1200,
      kvBlocks: 512,
    }),
    info: { modelName: 'sim', architecture: 'llama' } as EngineInfo,
  });
}

const tools = [
  { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
];

function chat(extra: Partial<Extract<GenerateRequest['prompt'], { kind: 'chat' }>> = {}): GenerateRequest {
  return {
    prompt: { kind: 'chat', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, ...extra },
    params: { maxNewTokens: 200 },
  };
}

async function collect(it: AsyncIterable<GenerateEvent>) {
  const events: GenerateEvent[] = [];
  for await (const e of it) events.push(e);
  return {
    tokens: events.filter((e) => e.type === 'token'),
    finish: events.find((e): e is FinishEvent => e.type === 'finish')!,
  };
}

const CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>';

test('a call in the output: parsed calls, finish reason tool_calls, deltas add up', async () => {
  const core = engine(CALL);
  const { tokens, finish } = await collect(core.generate(chat()));
  assert.equal(finish.reason, 'tool_calls');
  assert.equal(finish.text, CALL);
  assert.equal(finish.chat?.content, '');
  assert.deepEqual(
    finish.chat?.toolCalls.map((c) => c.function),
    [{ name: 'get_weather', arguments: '{"city": "Paris"}' }],
  );
  assert.match(finish.chat?.toolCalls[0].id ?? '', /^call_[A-Za-z0-9]{24}$/);
  let args = '';
  let content = '';
  for (const t of tokens) {
    content += t.chat?.content ?? '';
    for (const d of t.chat?.toolCalls ?? []) {
      if (d.id !== undefined) assert.equal(d.id, finish.chat?.toolCalls[0].id);
      args += d.function.arguments ?? '';
    }
  }
  assert.equal(content, '');
  assert.equal(args, '{"city": "Paris"}');
  assert.equal(finish.decodeTimesMs?.length, finish.tokenIds.length - 1);
  await core.close();
});

test('tool_choice none: no parsing, the text is the content', async () => {
  const core = engine(CALL);
  const { finish } = await collect(core.generate(chat({ toolChoice: 'none' })));
  assert.equal(finish.reason, 'stop');
  assert.equal(finish.chat, undefined);
  await core.close();
});

test('required / named tool_choice need a grammar vocabulary (forced calls: forced-calls.test.ts); bad ones INVALID_ARGUMENT', async () => {
  const core = engine('');
  const fails = async (r: GenerateRequest, code: string, pattern: RegExp) =>
    assert.rejects(
      collect(core.generate(r)),
      (e: unknown) => e instanceof EngineError && e.code === code && pattern.test(e.message),
    );
  // The character tokenizer has no vocabulary for a grammar to mask.
  await fails(
    chat({ toolChoice: 'required' }),
    'INVALID_ARGUMENT',
    /tool_choice: this engine has no tokenizer vocabulary/,
  );
  await fails(chat({ toolChoice: { function: 'get_weather' } }), 'INVALID_ARGUMENT', /tool_choice/);
  await fails(chat({ tools: [], toolChoice: 'required' }), 'INVALID_ARGUMENT', /tool_choice: needs tools/);
  await fails(
    chat({ toolChoice: { function: 'nope' } }),
    'INVALID_ARGUMENT',
    /'nope', which is not one of the tools/,
  );
  await fails(chat({ tools: [{ name: 'bad name!' }] }), 'INVALID_ARGUMENT', /tools\[0\]\.name/);
  await fails(chat({ tools: [...tools, ...tools] }), 'INVALID_ARGUMENT', /used by an earlier tool/);
  await fails(
    chat({
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
        },
        { role: 'tool', content: 'sunny', toolCallId: 'call_2' },
      ],
    }),
    'INVALID_ARGUMENT',
    /prompt\.messages\[2\]\.tool_call_id: 'call_2' is not the id of a tool call of an earlier assistant message/,
  );
  await core.close();
});

test('the two-step flow: a tool result answered with content', async () => {
  const core = engine('It is sunny in Paris.');
  const { finish } = await collect(
    core.generate(
      chat({
        messages: [
          { role: 'user', content: 'Weather in Paris?' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [
              {
                id: 'call_1',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city": "Paris"}' },
              },
            ],
          },
          { role: 'tool', content: 'sunny', toolCallId: 'call_1' },
        ],
      }),
    ),
  );
  assert.equal(finish.reason, 'stop');
  assert.equal(finish.chat?.content, 'It is sunny in Paris.');
  assert.deepEqual(finish.chat?.toolCalls, []);
  await core.close();
});

test('applyChatTemplate renders earlier calls the way generate does (built-in format for a template without tool_calls)', async () => {
  const core = engine('');
  const text = await core.applyChatTemplate([
    { role: 'user', content: 'hi' },
    {
      role: 'assistant',
      content: '',
      toolCalls: [
        { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Oslo"}' } },
      ],
    },
    { role: 'tool', content: 'sunny', toolCallId: 'c1' },
  ]);
  assert.equal(
    text,
    '[user]hi[assistant]<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>' +
      '[user]<tool_response>\nsunny\n</tool_response>[assistant]',
  );
  await core.close();
});
