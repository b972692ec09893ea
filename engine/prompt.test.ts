import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EngineError } from './errors.js';
import { promptTokens } from './prompt.js';
import { BOS, CharTokenizer } from './testing/char-tokenizer.js';

const tok = new CharTokenizer();
const limits = { maxInputTokenLen: 5, truncation: 0 as const };

test('text, token ids and chat prompts become token ids', async () => {
  assert.deepEqual(await promptTokens(tok, { kind: 'text', text: 'ab' }, undefined, limits, undefined), [
    BOS,
    65,
    66,
  ]);
  assert.deepEqual(
    await promptTokens(
      tok,
      { kind: 'text', text: 'ab', addSpecialTokens: false },
      undefined,
      limits,
      undefined,
    ),
    [65, 66],
  );
  assert.deepEqual(
    await promptTokens(tok, { kind: 'tokens', ids: [1, 2] }, undefined, limits, undefined),
    [1, 2],
  );
  const chat = await promptTokens(
    tok,
    { kind: 'chat', messages: [{ role: 'user', content: 'h' }], addGenerationPrompt: false },
    undefined,
    { ...limits, maxInputTokenLen: 50 },
    undefined,
  );
  assert.equal(chat.length, '[user]h'.length);
});

test('truncate keeps the last tokens; truncation modes cut right or left', async () => {
  const ids = { kind: 'tokens' as const, ids: [1, 2, 3, 4, 5, 6, 7] };
  assert.deepEqual(await promptTokens(tok, ids, 3, limits, undefined), [5, 6, 7]);
  assert.deepEqual(
    await promptTokens(tok, ids, undefined, { maxInputTokenLen: 5, truncation: -1 }, undefined),
    [1, 2, 3, 4, 5],
  );
  assert.deepEqual(
    await promptTokens(tok, ids, undefined, { maxInputTokenLen: 5, truncation: 1 }, undefined),
    [3, 4, 5, 6, 7],
  );
  await assert.rejects(
    () => promptTokens(tok, ids, undefined, limits, undefined),
    /7 tokens, more than maxInputTokenLen \(5\)/,
  );
});

test('a tokenizer failure is INVALID_ARGUMENT on the prompt field', async () => {
  const broken = Object.assign(Object.create(tok) as CharTokenizer, {
    encodeAsync: () => Promise.reject(new Error('bad bytes')),
  });
  await assert.rejects(
    () => promptTokens(broken, { kind: 'text', text: 'x' }, undefined, limits, undefined),
    (e: unknown) =>
      e instanceof EngineError &&
      e.code === 'INVALID_ARGUMENT' &&
      e.field === 'prompt.text' &&
      /bad bytes/.test(e.message),
  );
});
