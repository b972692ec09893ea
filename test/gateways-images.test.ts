/**
 * Image parts over the wire on the real server (default model, a text-only one): every family's
 * image part reaches the engine decoded (a file under --allowed-local-media-path and a fetched
 * URL included) and is refused there with a 400 naming the part, since the model has no vision
 * encoder (TGI's inline `![](URL)` is text to a text-only model, as in TGI); 200 hostile image parts (test/fuzz/hostile-images.ts) each get a 4xx naming their
 * part, never a 5xx, and the server still serves text afterwards, and so do the same values as
 * Anthropic image blocks and MindIE `image_url` items; the Python `openai` SDK's image
 * parts (chat and Responses) arrive in the shape the gateways read.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';
import { DEFAULT_MEDIA } from '../gateways/shared/images/media-config.js';
import {
  freePortConfig,
  MODEL_NAME,
  postJson,
  runPythonClient,
  startHarness,
  type Harness,
} from './gateways-harness.js';
import { rng } from '../bench/soak/soak.js';
import { hostileImageUrl, hostileKit, type HostileKit } from './fuzz/hostile-images.js';

const CASES = 200;
const SEED = 20261202;

let h: Harness;
let kit: HostileKit;
let dir: string;
let remote: Server;
let remoteUrl: string;
before(async () => {
  kit = await hostileKit();
  dir = mkdtempSync(join(tmpdir(), 'prism-images-'));
  writeFileSync(join(dir, 'cat.png'), kit.valid.png);
  remote = createServer((_req, res) => res.end(kit.valid.jpeg));
  await new Promise<void>((r) => remote.listen(0, '127.0.0.1', r));
  remoteUrl = `http://127.0.0.1:${(remote.address() as { port: number }).port}/cat.jpg`;
  h = await startHarness(
    freePortConfig({
      media: { ...DEFAULT_MEDIA, allowedLocalMediaPath: dir, fetchRemote: true, fetchTimeoutMs: 2000 },
    }),
    { engine: { maxIterTimes: 8 } },
  );
});
after(async () => {
  await h?.close();
  remote?.closeAllConnections();
  remote?.close();
  rmSync(dir, { recursive: true, force: true });
});

const chat = (imageUrl: unknown) => ({
  model: MODEL_NAME,
  max_tokens: 4,
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: imageUrl },
      ],
    },
  ],
});
const TEXT_ONLY = /image input is not supported by this model: smollm2-test is a text-only model/;

test('a text-only model refuses a decoded image with a 400 naming the part, from every source and family', async () => {
  const sources = [
    { url: `data:image/png;base64,${kit.valid.png.toString('base64')}` },
    { url: `data:image/webp;base64,${kit.valid.webp.toString('base64')}`, detail: 'auto' },
    `data:image/gif;base64,${kit.valid.gif.toString('base64')}`,
    { url: pathToFileURL(join(dir, 'cat.png')).href },
    { url: remoteUrl },
  ];
  for (const source of sources) {
    const r = await postJson(`${h.url}/v1/chat/completions`, chat(source));
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.param, 'messages[0].content[1].image_url', r.text);
    assert.match(r.json.error.message, TEXT_ONLY);
  }
  const png = `data:image/png;base64,${kit.valid.png.toString('base64')}`;
  const responses = await postJson(`${h.url}/v1/responses`, {
    model: MODEL_NAME,
    input: [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'hi' },
          { type: 'input_image', image_url: png },
        ],
      },
    ],
  });
  assert.equal(responses.status, 400, responses.text);
  assert.equal(responses.json.error.param, 'input[0].content[1].image_url');
  assert.match(responses.json.error.message, TEXT_ONLY);
  const fileId = await postJson(`${h.url}/v1/responses`, {
    model: MODEL_NAME,
    input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-1' }] }],
  });
  assert.equal(fileId.status, 400, fileId.text);
  assert.equal(fileId.json.error.param, 'input[0].content[0].file_id');
  // TGI reads `![](URL)` as an image only for a model that takes images (its router chunks
  // `inputs` for vision-language models alone): here the markdown is prompt text.
  const inputs = `Describe ![](${png}) please`;
  const tgi = await postJson(`${h.url}/generate`, {
    inputs,
    parameters: { max_new_tokens: 2, details: true, decoder_input_details: true },
  });
  assert.equal(tgi.status, 200, tgi.text);
  const prefill = (tgi.json.details.prefill as { text: string }[]).map((t) => t.text).join('');
  assert.ok(prefill.endsWith(inputs), prefill.slice(0, 200));
  // Text with no image is served as before, by every route.
  const plain = await postJson(`${h.url}/generate`, {
    inputs: 'Say ![x](alt) hi',
    parameters: { max_new_tokens: 2 },
  });
  assert.equal(plain.status, 200, plain.text);
});

test(`fuzz: ${CASES} hostile image parts each get a 4xx naming the part, never a 5xx`, async () => {
  const rand = rng(SEED);
  const statuses: Record<string, number> = {};
  const failures: string[] = [];
  const cases = Array.from({ length: CASES }, (_, i) => hostileImageUrl(kit, rand, i));
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < CASES; i = next++) {
      const r = await postJson(`${h.url}/v1/chat/completions`, chat(cases[i]));
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      const param: unknown = r.json?.error?.param;
      if (
        r.status < 400 ||
        r.status >= 500 ||
        typeof param !== 'string' ||
        !param.startsWith('messages[0].content[1]')
      )
        failures.push(`case ${i} (${i % 10}): ${r.status} ${r.text.slice(0, 300)}`);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  assert.deepEqual(failures.slice(0, 10), [], JSON.stringify(statuses));
  assert.equal(statuses['400'], CASES, JSON.stringify(statuses));
  const ok = await postJson(`${h.url}/v1/chat/completions`, {
    model: MODEL_NAME,
    max_tokens: 2,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
  });
  assert.equal(ok.status, 200, ok.text);
});

/** A hostile `image_url` value as an Anthropic image block: a data: URL as a base64 source, else a url source, else the value as the source. */
function anthropicBlock(value: unknown): object {
  const v = value as { url?: unknown; detail?: unknown } | null;
  if (v === null || typeof v !== 'object' || typeof v.url !== 'string')
    return { type: 'image', source: value };
  const extra = v.detail !== undefined ? { detail: v.detail } : {};
  const m = /^data:([^;,]*);base64,(.*)$/s.exec(v.url);
  const source = m ? { type: 'base64', media_type: m[1], data: m[2] } : { type: 'url', url: v.url };
  return { type: 'image', source, ...extra };
}

test(`fuzz: the ${CASES} hostile parts as Anthropic image blocks and MindIE image_url items: each a 4xx naming it`, async () => {
  const rand = rng(SEED + 1);
  const failures: string[] = [];
  const statuses: Record<string, number> = {};
  const cases = Array.from({ length: CASES }, (_, i) => hostileImageUrl(kit, rand, i));
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < CASES; i = next++) {
      const value = cases[i] as { url?: unknown } | null;
      const anthropic = await postJson(`${h.url}/v1/messages`, {
        model: MODEL_NAME,
        max_tokens: 4,
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'What is this?' }, anthropicBlock(value)] },
        ],
      });
      const mindie = await postJson(`${h.url}/infer`, {
        inputs: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: value !== null && typeof value === 'object' ? value.url : value },
        ],
        parameters: { max_new_tokens: 2 },
      });
      for (const [family, r, status, message, prefix] of [
        ['anthropic', anthropic, 400, anthropic.json?.error?.message, 'messages[0].content[1]'],
        ['mindie', mindie, 422, mindie.json?.error, 'inputs[1].image_url'],
      ] as const) {
        statuses[`${family} ${r.status}`] = (statuses[`${family} ${r.status}`] ?? 0) + 1;
        if (r.status !== status || typeof message !== 'string' || !message.startsWith(prefix))
          failures.push(`${family} case ${i} (${i % 10}): ${r.status} ${r.text.slice(0, 300)}`);
      }
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  assert.deepEqual(failures.slice(0, 10), [], JSON.stringify(statuses));
});

test('the openai SDK (Python) sends an image in chat and Responses; the refusal reaches it as a BadRequestError naming the part', async () => {
  const r = await runPythonClient('openai_images.py', [`${h.url}/v1`, MODEL_NAME]);
  assert.equal(r.chat.status, 400, JSON.stringify(r));
  assert.equal(r.chat.param, 'messages[0].content[1].image_url');
  assert.match(r.chat.message, TEXT_ONLY);
  assert.equal(r.responses.status, 400, JSON.stringify(r));
  assert.equal(r.responses.param, 'input[0].content[1].image_url');
  assert.match(r.responses.message, TEXT_ONLY);
});
