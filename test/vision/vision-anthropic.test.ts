/**
 * Images on Anthropic's Messages API and MindIE's /infer, on the smolvlm-tiny fixture (its
 * native image encoder) behind the real server. The unmodified `anthropic` SDK sends an
 * `image` block (base64 PNG) and gets the prompt and greedy answer the `openai` SDK's
 * `image_url` part gets with the same picture (test/clients/vision_anthropic.py): the same
 * prompt token count, every full block of it read from the prefix cache the OpenAI call filled
 * (the cache key holds the token ids and the image's pixels), and the same text. A `url`
 * source (fetched, and a file:// URL under --allowed-local-media-path) and an image in a
 * tool_result's content do the same against their OpenAI twins; MindIE's `image_url` inputs
 * item (a data: URL, and an absolute local path) gives OpenAI chat's prompt too.
 * count_tokens refuses an image block (400 naming it).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import { DEFAULT_MEDIA } from '../../gateways/shared/images/media-config.js';
import { fixture } from '../fixtures.js';
import { hostileKit } from '../fuzz/hostile-images.js';
import {
  freePortConfig,
  postJson,
  runPythonClient,
  startHarness,
  type Harness,
  type JsonBody,
} from '../gateways-harness.js';

const MODEL = 'smolvlm-tiny';
const TEXT = 'What is in this picture?';

let h: Harness;
let png: Buffer;
let dir: string;
let remote: Server;
let remoteUrl: string;
before(async () => {
  png = (await hostileKit()).valid.png;
  dir = mkdtempSync(join(tmpdir(), 'prism-vision-anthropic-'));
  writeFileSync(join(dir, 'cat.png'), png);
  remote = createServer((_req, res) => res.end(png));
  await new Promise<void>((r) => remote.listen(0, '127.0.0.1', r));
  remoteUrl = `http://127.0.0.1:${(remote.address() as { port: number }).port}/cat.png`;
  h = await startHarness(
    freePortConfig({
      media: { ...DEFAULT_MEDIA, allowedLocalMediaPath: dir, fetchRemote: true, fetchTimeoutMs: 5000 },
    }),
    { modelPath: fixture(MODEL).path, modelName: MODEL },
  );
});
after(async () => {
  await h?.close();
  remote?.closeAllConnections();
  remote?.close();
  rmSync(dir, { recursive: true, force: true });
});

const dataUrl = (): string => `data:image/png;base64,${png.toString('base64')}`;

/** The prompt tokens, prefix-cache hits and generated ids of one request, from the engine's counters. */
async function counted(
  send: () => Promise<JsonBody>,
): Promise<{ res: JsonBody; prompt: number; hits: number }> {
  const before = await h.engine.status();
  const res = await send();
  const after = await h.engine.status();
  return {
    res,
    prompt: after.promptTokens - before.promptTokens,
    hits: after.prefixCacheHits - before.prefixCacheHits,
  };
}

/** The same prompt as one the OpenAI call sent just before: same length, every full block cached. */
async function samePrompt(
  label: string,
  got: { prompt: number; hits: number },
  openaiPrompt: number,
): Promise<void> {
  const { blockSize } = await h.engine.status();
  assert.equal(got.prompt, openaiPrompt, `${label}: prompt tokens`);
  assert.ok(got.hits > 0 && got.hits >= got.prompt - blockSize, `${label}: ${JSON.stringify(got)}`);
}

async function openaiChat(messages: object[]): Promise<JsonBody> {
  const r = await postJson(`${h.url}/v1/chat/completions`, {
    model: MODEL,
    max_tokens: 4,
    temperature: 0,
    messages,
  });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

async function anthropic(body: object): Promise<JsonBody> {
  return postJson(`${h.url}/v1/messages`, { model: MODEL, max_tokens: 4, temperature: 0, ...body });
}

test('the anthropic SDK sends a base64 image block: the prompt and greedy answer of the openai SDK’s image_url part', async () => {
  const r = await runPythonClient('vision_anthropic.py', [h.url, MODEL]);
  const imageTokens = 13 * 16;
  assert.ok(r.openai.promptTokens > imageTokens, JSON.stringify(r));
  const { blockSize } = await h.engine.status();
  for (const call of ['created', 'streamed'] as const) {
    const u = r[call].usage;
    assert.equal(
      u.input_tokens + u.cache_read_input_tokens,
      r.openai.promptTokens,
      `${call}: ${JSON.stringify(r)}`,
    );
    assert.ok(
      u.cache_read_input_tokens >= r.openai.promptTokens - blockSize,
      `${call}: ${JSON.stringify(u)}`,
    );
    assert.equal(r[call].text, r.openai.text, call);
    assert.equal(u.output_tokens, 6);
  }
  assert.deepEqual(r.bad_media_type, [
    'BadRequestError',
    400,
    "messages[0].content[0].source.media_type: must be one of image/jpeg, image/png, image/gif, image/webp; got 'image/bmp'",
  ]);
});

test('url sources (fetched over http, a file:// URL) and a tool_result image give their OpenAI twins’ prompts', async () => {
  const question = { type: 'text', text: TEXT };
  const openai = await counted(() =>
    openaiChat([{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl() } }, question] }]),
  );
  for (const url of [remoteUrl, pathToFileURL(join(dir, 'cat.png')).href]) {
    const got = await counted(() =>
      anthropic({
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url } }, question] }],
      }),
    );
    assert.equal(got.res.status, 200, got.res.text);
    await samePrompt(url, got, openai.prompt);
    assert.equal(got.res.json.content[0].text, openai.res.choices[0].message.content, url);
  }
  // An image a tool returned: OpenAI's tool message with an image part, Anthropic's tool_result.
  const call = { id: 'call_1', type: 'function', function: { name: 'snapshot', arguments: '{}' } };
  const openaiTool = await counted(() =>
    openaiChat([
      { role: 'user', content: 'Take a snapshot.' },
      { role: 'assistant', content: null, tool_calls: [call] },
      {
        role: 'tool',
        tool_call_id: 'call_1',
        content: [{ type: 'image_url', image_url: { url: dataUrl() } }, question],
      },
    ]),
  );
  const image = {
    type: 'image',
    source: { type: 'base64', media_type: 'image/png', data: png.toString('base64') },
  };
  const tool = await counted(() =>
    anthropic({
      messages: [
        { role: 'user', content: 'Take a snapshot.' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'snapshot', input: {} }] },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'call_1', content: [image, question] }],
        },
      ],
    }),
  );
  assert.equal(tool.res.status, 200, tool.res.text);
  await samePrompt('tool_result', tool, openaiTool.prompt);
  assert.ok(openaiTool.prompt > 13 * 16, JSON.stringify(openaiTool));
});

test('count_tokens refuses an image block, naming it; text is counted as before', async () => {
  const image = {
    type: 'image',
    source: { type: 'base64', media_type: 'image/png', data: png.toString('base64') },
  };
  const r = await postJson(`${h.url}/v1/messages/count_tokens`, {
    model: MODEL,
    messages: [{ role: 'user', content: [image] }],
  });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.error.type, 'invalid_request_error');
  assert.match(r.json.error.message, /^messages\[0\]\.content\[0\]\.type: counting an image block's tokens/);
  const text = await postJson(`${h.url}/v1/messages/count_tokens`, {
    model: MODEL,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  assert.equal(text.status, 200, text.text);
  assert.ok(text.json.input_tokens > 0);
});

test("MindIE's /infer image_url inputs item (a data: URL, an absolute local path) gives OpenAI chat's prompt", async () => {
  const openai = await counted(() =>
    openaiChat([
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: dataUrl() } },
          { type: 'text', text: TEXT },
        ],
      },
    ]),
  );
  for (const imageUrl of [dataUrl(), join(dir, 'cat.png')]) {
    const got = await counted(() =>
      postJson(`${h.url}/infer`, {
        inputs: [
          { type: 'image_url', image_url: imageUrl },
          { type: 'text', text: TEXT },
        ],
        parameters: { max_new_tokens: 4, do_sample: false, details: true },
      }),
    );
    assert.equal(got.res.status, 200, got.res.text);
    await samePrompt(imageUrl.slice(0, 30), got, openai.prompt);
    assert.equal(got.res.json.generated_text, openai.res.choices[0].message.content);
    assert.equal(got.res.json.details.generated_tokens, 4);
  }
});
