/**
 * The prompt a request-log line writes (with `logPrompts`): a prompt holding images keeps each
 * in its place as `[image N]` (TGI's inline `![](url)` in a text prompt, an image part of a chat
 * message), where its text alone would drop it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { GenerateRequest } from '../../engine/api.js';
import { promptText } from './request-log.js';

const image = { width: 1, height: 1, rgb: new Uint8Array(3), field: 'inputs.images[0]' };

test('a text prompt with image parts is logged with each image in place', () => {
  const request: GenerateRequest = {
    prompt: {
      kind: 'text',
      text: 'Describe  and ',
      parts: [
        { type: 'text', text: 'Describe ' },
        { type: 'image', image: 0 },
        { type: 'text', text: ' and ' },
        { type: 'image', image: 1 },
      ],
    },
    params: {},
    images: [image, image],
  };
  assert.equal(promptText(request), 'Describe [image 0] and [image 1]');
  assert.equal(promptText({ prompt: { kind: 'text', text: 'plain' }, params: {} }), 'plain');
});

test("a chat message's image parts are logged in place; a message without parts by its content", () => {
  const request: GenerateRequest = {
    prompt: {
      kind: 'chat',
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: 'What is it?',
          parts: [
            { type: 'image', image: 0 },
            { type: 'text', text: 'What is it?' },
          ],
        },
      ],
    },
    params: {},
    images: [image],
  };
  assert.deepEqual(JSON.parse(promptText(request)), [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: '[image 0]What is it?' },
  ]);
});
