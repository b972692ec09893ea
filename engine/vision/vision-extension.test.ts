import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EngineError } from '../errors.js';
import type { ContentPart, GenerateRequest, ImageInput } from '../types.js';
import { VisionInputs } from './vision-extension.js';

const vision = new VisionInputs({
  modelName: 'smol',
  vision: undefined,
  encoder: undefined,
  tokenizer: undefined as never,
  maxInputTokenLen: 1024,
  maxPrefillTokens: 2048,
});
const img = (field: string, w = 2, h = 1, bytes = w * h * 3): ImageInput => ({
  width: w,
  height: h,
  rgb: new Uint8Array(bytes),
  field,
});
const chat = (images: ImageInput[], image = 0): GenerateRequest => ({
  prompt: {
    kind: 'chat',
    messages: [
      {
        role: 'user',
        content: 'hi',
        parts: [
          { type: 'text', text: 'hi' },
          { type: 'image', image },
        ],
      },
    ],
  },
  params: {},
  images,
});

const text = (parts: ContentPart[], images: ImageInput[]): GenerateRequest => ({
  prompt: { kind: 'text', text: '', parts },
  params: {},
  images,
});

function refused(request: GenerateRequest, field: string, rule: RegExp): void {
  assert.throws(
    () => vision.check(request),
    (e: unknown) =>
      e instanceof EngineError && e.code === 'INVALID_ARGUMENT' && e.field === field && rule.test(e.message),
  );
}

test('a request without images is not the extension’s', () => {
  assert.equal(vision.check({ prompt: { kind: 'text', text: 'hi' }, params: {} }), undefined);
});

test('a text-only model refuses a well-formed image naming its part', () => {
  refused(
    chat([img('messages[0].content[1].image_url')]),
    'messages[0].content[1].image_url',
    /smol is a text-only model/,
  );
  refused(
    {
      prompt: { kind: 'text', text: 'a', parts: [{ type: 'image', image: 0 }] },
      params: {},
      images: [img('inputs.images[0]')],
    },
    'inputs.images[0]',
    /text-only/,
  );
});

test('malformed images and parts (a gRPC caller without a gateway) are told what is wrong first', () => {
  refused(chat([img('f', 2, 2, 5)]), 'f', /holds 5 bytes; a 2x2 RGB image is 12/);
  refused(chat([img('f', 0, 2, 0)]), 'f', /positive integers/);
  refused(chat([img('f')], 3), 'prompt.chat.messages[0].parts[1].image', /names image 3; the request has 1/);
  refused(
    { prompt: { kind: 'tokens', ids: [1, 2] }, params: {}, images: [img('')] },
    'images[0]',
    /a token-ids prompt has no place for an image/,
  );
  refused(
    { prompt: { kind: 'text', text: 'a' }, params: {}, images: [img('inputs.images[0]')] },
    'inputs.images[0]',
    /no content part of the prompt places this image/,
  );
  refused(
    text(
      [
        { type: 'text', text: 'a' },
        { type: 'image', image: 2 },
      ],
      [img('x'), img('y')],
    ),
    'prompt.text.parts[1].image',
    /names image 2; the request has 2/,
  );
});

test("a text prompt's text is its parts with the processor's <image> at each image part", () => {
  const request = text(
    [
      { type: 'text', text: 'and' },
      { type: 'image', image: 0 },
      { type: 'text', text: ' more' },
      { type: 'image', image: 1 },
    ],
    [img('inputs.images[0]'), img('inputs.images[1]')],
  );
  assert.deepEqual(vision.promptInput(request.prompt), { kind: 'text', text: 'and<image> more<image>' });
  const tokens: GenerateRequest['prompt'] = { kind: 'tokens', ids: [1] };
  assert.equal(vision.promptInput(tokens), tokens);
});

test("Gemma 3: a text prompt's and a rendered chat's <start_of_image> become Gemma3Processor's image sequence, as text", () => {
  const gemma3 = new VisionInputs({
    modelName: 'gemma3',
    vision: 'gemma3',
    encoder: { tokensPerTile: 2, hidden: 4, encode: () => Promise.resolve([]) },
    tokenizer: undefined as never,
    maxInputTokenLen: 1024,
    maxPrefillTokens: 2048,
  });
  const request = text(
    [
      { type: 'text', text: 'see' },
      { type: 'image', image: 0 },
    ],
    [img('inputs.images[0]')],
  );
  const image = '\n\n<start_of_image><image_soft_token><image_soft_token><end_of_image>\n\n';
  assert.deepEqual(gemma3.promptInput(request.prompt), { kind: 'text', text: `see${image}` });
  assert.equal(gemma3.promptText('user\n<start_of_image>what'), `user\n${image}what`);
  // Other families' text is left as the template wrote it.
  assert.equal(vision.promptText('user\n<image>what'), 'user\n<image>what');
});

test('a vision model without its encoder in this engine answers 501 naming the part', () => {
  const noEncoder = new VisionInputs({
    modelName: 'smolvlm',
    vision: 'idefics3',
    encoder: undefined,
    tokenizer: undefined as never,
    maxInputTokenLen: 1024,
    maxPrefillTokens: 2048,
  });
  assert.throws(
    () => noEncoder.check(chat([img('messages[0].content[1].image_url')])),
    (e: unknown) =>
      e instanceof EngineError &&
      e.code === 'UNIMPLEMENTED' &&
      e.field === 'messages[0].content[1].image_url' &&
      /no image encoder for smolvlm/.test(e.message),
  );
});
