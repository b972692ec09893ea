/** Request bodies, curl export and image checks of the playground (pure functions; the browser test covers the page). */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import {
  chatBody,
  completionBody,
  curlCommand,
  DEFAULT_SETTINGS,
  SettingsError,
  stopStrings,
} from './request.js';
import { DEFAULT_MAX_IMAGE_BYTES, formatBytes, imageLimit, imageRefusal, MAX_IMAGES } from './image-files.js';
import { DEFAULT_MEDIA } from '../../shared/images/media-config.js';

const base = { ...DEFAULT_SETTINGS, model: 'm', system: 'Be brief.', seed: 7, top_k: 40, stop: 'END,\\n\\n' };

test('chat body: system prompt first, sampling fields, streaming with usage, empty fields left out', () => {
  const body = chatBody({ ...base, top_p: null }, [
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: 'broken', error: 'HTTP 500' },
  ]);
  assert.deepEqual(body, {
    model: 'm',
    temperature: 0.7,
    top_k: 40,
    max_tokens: 256,
    seed: 7,
    stop: ['END', '\n\n'],
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ],
    stream: true,
    stream_options: { include_usage: true },
  });
});

test('chat body: logprobs, json_schema response_format, tools and the tool-result turn', () => {
  const calls = [{ id: 'c1', type: 'function' as const, function: { name: 'f', arguments: '{}' } }];
  const body = chatBody(
    {
      ...base,
      system: '',
      logprobs: true,
      top_logprobs: 2,
      responseFormat: 'json_schema',
      toolsOn: true,
      toolChoice: 'required',
    },
    [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: '', tool_calls: calls },
      { role: 'tool', content: '{"c":21}', tool_call_id: 'c1' },
    ],
    false,
  );
  assert.equal(body.logprobs, true);
  assert.equal(body.top_logprobs, 2);
  assert.deepEqual(body.response_format, {
    type: 'json_schema',
    json_schema: { name: 'answer', schema: JSON.parse(DEFAULT_SETTINGS.schema) },
  });
  assert.deepEqual(body.tools, JSON.parse(DEFAULT_SETTINGS.tools));
  assert.equal(body.tool_choice, 'required');
  assert.equal(body.stream, undefined);
  assert.deepEqual(body.messages, [
    { role: 'user', content: 'weather?' },
    { role: 'assistant', content: '', tool_calls: calls },
    { role: 'tool', content: '{"c":21}', tool_call_id: 'c1' },
  ]);
  assert.deepEqual(chatBody({ ...base, responseFormat: 'json_object' }, []).response_format, {
    type: 'json_object',
  });
});

test('chat body: a message with images becomes image_url parts then its text; text-only stays a string', () => {
  const png = 'data:image/png;base64,iVBORw0KGgo=';
  const gif = 'data:image/gif;base64,R0lGODlh';
  const body = chatBody({ ...base, system: '' }, [
    { role: 'user', content: 'What is in these?', images: [png, gif] },
    { role: 'assistant', content: 'Two pictures.' },
    { role: 'user', content: 'And this?', images: [] },
    { role: 'user', content: '', images: [png] },
  ]);
  assert.deepEqual(body.messages, [
    {
      role: 'user',
      content: [
        { type: 'image_url', image_url: { url: png } },
        { type: 'image_url', image_url: { url: gif } },
        { type: 'text', text: 'What is in these?' },
      ],
    },
    { role: 'assistant', content: 'Two pictures.' },
    { role: 'user', content: 'And this?' },
    // An image sent without words: no empty text part.
    { role: 'user', content: [{ type: 'image_url', image_url: { url: png } }] },
  ]);
});

test('attachable images: a card with "image" among input_modalities, the types and byte limit the server holds to', () => {
  assert.equal(imageLimit(undefined), null);
  assert.equal(imageLimit({ id: 't', input_modalities: ['text'] }), null);
  assert.equal(imageLimit({ id: 'old' }), null, 'a card without input_modalities offers no images');
  assert.equal(imageLimit({ id: 'v', input_modalities: ['text', 'image'], max_image_bytes: 1000 }), 1000);
  assert.equal(imageLimit({ id: 'v', input_modalities: ['text', 'image'] }), DEFAULT_MAX_IMAGE_BYTES);
  // The server's own defaults (gateways/shared/images/media-config.ts).
  assert.equal(DEFAULT_MAX_IMAGE_BYTES, DEFAULT_MEDIA.maxImageBytes);
  assert.equal(MAX_IMAGES, DEFAULT_MEDIA.maxImages);

  for (const type of ['image/png', 'image/jpeg', 'image/webp', 'image/gif'])
    assert.equal(imageRefusal({ name: 'a', type, size: 1000 }, 1000), null, type);
  assert.equal(
    imageRefusal({ name: 'scan.tiff', type: 'image/tiff', size: 10 }, 1000),
    'scan.tiff: not a PNG, JPEG, WebP or GIF image (image/tiff)',
  );
  assert.match(imageRefusal({ name: 'x', type: '', size: 10 }, 1000)!, /\(unknown type\)$/);
  assert.equal(
    imageRefusal({ name: 'big.png', type: 'image/png', size: 21 * 1024 * 1024 }, DEFAULT_MAX_IMAGE_BYTES),
    "big.png: 21 MiB is over the server's limit of 20 MiB per image",
  );
  assert.equal(formatBytes(1536), '1.5 KiB');
  assert.equal(formatBytes(900), '900 bytes');
});

test('settings typed wrong are named, not sent', () => {
  assert.throws(
    () => chatBody({ ...base, responseFormat: 'json_schema', schema: '{' }, []),
    (e: unknown) => {
      assert.ok(e instanceof SettingsError);
      assert.match(e.message, /^JSON schema: not valid JSON/);
      return true;
    },
  );
  assert.throws(
    () => chatBody({ ...base, responseFormat: 'json_schema', schema: '[]' }, []),
    /JSON schema: must be a JSON object/,
  );
  assert.throws(() => chatBody({ ...base, toolsOn: true, tools: '{}' }, []), /Tools: must be a JSON array/);
});

test('completion body: prompt and logprobs as a count', () => {
  const body = completionBody({ ...base, logprobs: true, top_logprobs: 3 }, 'Once upon');
  assert.equal(body.prompt, 'Once upon');
  assert.equal(body.logprobs, 3);
  assert.deepEqual(body.stream_options, { include_usage: true });
  assert.deepEqual(stopStrings(' , a,,b'), [' ', ' a', 'b'], 'kept as typed: spaces matter');
});

test('curl export is one shell command that sends exactly the body, the key only by variable', () => {
  const body = { messages: [{ role: 'user', content: 'it\'s a "test" $HOME `x`' }] };
  const cmd = curlCommand('https://127.0.0.1:8443', '/v1/chat/completions', body, true);
  assert.match(cmd, /^curl -N 'https:\/\/127\.0\.0\.1:8443\/v1\/chat\/completions'/);
  assert.match(cmd, /Authorization: Bearer \$PRISM_API_KEY/);
  // The shell hands curl the body unchanged: let bash parse the -d word and print it.
  const dWord = cmd.slice(cmd.indexOf("-d '") + 3);
  const printed = execFileSync('bash', ['-c', `printf %s ${dWord}`], { encoding: 'utf-8' });
  assert.deepEqual(JSON.parse(printed), body);
  assert.doesNotMatch(curlCommand('http://h', '/v1/completions', {}, false), /Authorization/);
});
