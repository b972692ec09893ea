/**
 * The built-in chat templates of GGUF files that carry none: Gemma 3's turn format, exactly
 * as Gemma 3's own template writes it (system text folded into the first user turn, the
 * assistant spelled `model`), and its end-of-turn token among the stop ids.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderChatTemplate } from './chat-template.js';
import { builtinChatTemplate } from './builtin-templates.js';

const gemma = builtinChatTemplate('gemma3')!;

test('Gemma 3: system folded into the first user turn, assistant as model, generation prompt', () => {
  const text = renderChatTemplate(
    gemma,
    [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!' },
      { role: 'user', content: 'And?' },
    ],
    { addGenerationPrompt: true, bosToken: '<bos>' },
  );
  assert.equal(
    text,
    '<bos><start_of_turn>user\nYou are terse.\n\nHi<end_of_turn>\n' +
      '<start_of_turn>model\nHello!<end_of_turn>\n' +
      '<start_of_turn>user\nAnd?<end_of_turn>\n<start_of_turn>model\n',
  );
});

test('Gemma 3: turns must alternate; other architectures have no built-in template', () => {
  assert.throws(
    () =>
      renderChatTemplate(
        gemma,
        [
          { role: 'user', content: 'a' },
          { role: 'user', content: 'b' },
        ],
        { addGenerationPrompt: true, bosToken: '<bos>' },
      ),
    /alternate/,
  );
  assert.equal(builtinChatTemplate('llama'), null);
  assert.equal(builtinChatTemplate(undefined), null);
});
