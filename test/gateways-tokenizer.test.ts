/**
 * The tokenizer routes of vLLM (/tokenize with `prompt` or `messages`, /detokenize) and of
 * llama.cpp server (/tokenize with `content`, /detokenize, /apply-template) on the real
 * default model: their bodies told apart on the shared paths, counts that match what the
 * generation routes count, and the errors.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MODEL_NAME, postJson, startHarness, type Harness } from './gateways-harness.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(async () => {
  await h?.close();
});

const messages = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'What is the capital of France?' },
];
const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  },
];

test('vLLM /tokenize: text and messages (with tools), counted as the generation routes count them', async () => {
  const text = await postJson(`${h.url}/tokenize`, {
    prompt: 'The capital of France is',
    return_token_strs: true,
  });
  assert.equal(text.status, 200, text.text);
  assert.equal(text.json.count, text.json.tokens.length);
  assert.equal(text.json.max_model_len, 1024);
  assert.equal(text.json.token_strs.join(''), 'The capital of France is');
  const completion = await postJson(`${h.url}/v1/completions`, {
    prompt: 'The capital of France is',
    max_tokens: 1,
  });
  assert.equal(text.json.count, completion.json.usage.prompt_tokens);

  for (const extra of [{}, { tools }]) {
    const chat = await postJson(`${h.url}/tokenize`, { model: MODEL_NAME, messages, ...extra });
    assert.equal(chat.status, 200, chat.text);
    assert.equal(chat.json.token_strs, null);
    const answered = await postJson(`${h.url}/v1/chat/completions`, { messages, max_tokens: 1, ...extra });
    assert.equal(chat.json.count, answered.json.usage.prompt_tokens, JSON.stringify(extra));
  }

  const back = await postJson(`${h.url}/detokenize`, { model: MODEL_NAME, tokens: text.json.tokens });
  assert.equal(back.status, 200);
  assert.equal(back.json.prompt, 'The capital of France is');
  assert.equal(back.json.content, back.json.prompt);
});

test('llama.cpp /tokenize (with_pieces), /apply-template and the same prompt through vLLM’s body', async () => {
  const plain = await postJson(`${h.url}/tokenize`, { content: 'Hello world' });
  assert.equal(plain.status, 200);
  assert.ok(plain.json.tokens.every((t: unknown) => typeof t === 'number'));
  const pieces = await postJson(`${h.url}/tokenize`, { content: 'Hello world', with_pieces: true });
  assert.deepEqual(
    pieces.json.tokens.map((t: { id: number }) => t.id),
    plain.json.tokens,
  );
  assert.equal(pieces.json.tokens.map((t: { piece: string }) => t.piece).join(''), 'Hello world');

  const applied = await postJson(`${h.url}/apply-template`, { messages });
  assert.equal(applied.status, 200);
  assert.match(
    applied.json.prompt,
    /<\|im_start\|>user\nWhat is the capital of France\?<\|im_end\|>\n<\|im_start\|>assistant\n$/,
  );
  const ofPrompt = await postJson(`${h.url}/tokenize`, { content: applied.json.prompt });
  const ofMessages = await postJson(`${h.url}/tokenize`, { messages });
  assert.deepEqual(ofPrompt.json.tokens, ofMessages.json.tokens);
});

test('tokenizer routes: bodies of neither server, bad fields, ignored fields', async () => {
  const neither = await postJson(`${h.url}/tokenize`, { text: 'x' });
  assert.equal(neither.status, 400);
  assert.match(
    neither.json.error.message,
    /needs `content` \(llama\.cpp's \/tokenize\), or `prompt` or `messages`/,
  );
  const bad = await postJson(`${h.url}/detokenize`, { tokens: [1, -2] });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'tokens[1]');
  const big = await postJson(`${h.url}/detokenize`, { tokens: [10_000_000] });
  assert.equal(big.status, 400);
  assert.equal(big.json.error.param, 'ids[0]');
  const kw = await postJson(`${h.url}/tokenize`, { messages, chat_template_kwargs: { messages: [] } });
  assert.equal(kw.status, 400);
  assert.equal(kw.json.error.param, 'prompt.chat_template_kwargs.messages');
  const unknown = await postJson(`${h.url}/tokenize`, { content: 'x', n_probs: 3 });
  assert.equal(unknown.status, 200);
  assert.equal(unknown.headers.get('x-prism-ignored-fields'), 'n_probs');
  const model = await postJson(`${h.url}/tokenize`, { prompt: 'x', model: 'gpt-4o' });
  assert.equal(model.status, 404);
});
