/**
 * Images through the engine on the smolvlm-tiny fixture's text model (scripts/vision_fixtures.py),
 * with an image encoder whose rows are real rows of the model's own token table (the native
 * SigLIP encoder is native/src/vision/'s; this checks everything from its rows on):
 *  - the prompt's image tokens are transformers' Idefics3Processor's, id for id;
 *  - the rows are placed at the image-token positions: the greedy output equals that of the
 *    token prompt holding, at those positions, the tokens whose table rows were placed;
 *  - the prefix cache reuses the blocks of the same image and text, never those of another image;
 *  - a text prompt's image part (TGI's `![](url)`) is the chat's: the prompt holding the chat's
 *    rendering as text parts around it gets the chat's ids, scores, output and cached blocks;
 *  - structured output holds with an image in the prompt.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import type { EngineCore } from '../../engine/engine-core.js';
import { EngineError } from '../../engine/errors.js';
import { loadEngine } from '../../engine/load-engine.js';
import type {
  ChatMessage,
  FinishEvent,
  GenerateEvent,
  GenerateRequest,
  ImageInput,
} from '../../engine/types.js';
import { expandImages } from '../../engine/vision/idefics3-prompt.js';
import type { EncodedImage, ImageEncoder } from '../../engine/vision/image-encoder.js';
import {
  disposeModel,
  kernelTestHooks,
  loadModel,
  modelInfo,
  type ModelHandle,
} from '../../native/native.js';
import { fixture, pythonCommand } from '../fixtures.js';

const TOKENS_PER_TILE = 16;
/** The grid transformers' processor gives a 300 x 100 image at this fixture's sizes. */
const GRID = { rows: 2, cols: 4 };

/**
 * Rows of the model's token table: image token k of an image takes the row of token
 * `200 + (first pixel byte + k) % 4000`, so images with other pixels get other rows.
 */
class TableRowsEncoder implements ImageEncoder {
  readonly tokensPerTile = TOKENS_PER_TILE;
  constructor(
    private readonly model: ModelHandle,
    readonly hidden: number,
  ) {}
  /** The token ids whose rows image `img` is given. */
  static ids(img: ImageInput): number[] {
    const n = (GRID.rows * GRID.cols + 1) * TOKENS_PER_TILE;
    return Array.from({ length: n }, (_, k) => 200 + ((img.rgb[0]! + k) % 4000));
  }
  encode(images: readonly ImageInput[]): Promise<EncodedImage[]> {
    return Promise.resolve(
      images.map((img) => ({
        ...GRID,
        embeddings: kernelTestHooks.embeddingRows(this.model, Int32Array.from(TableRowsEncoder.ids(img))),
      })),
    );
  }
}

let engine: EngineCore;
let model: ModelHandle;
let encoder: TableRowsEncoder;
const dir = (): string => fixture('smolvlm-tiny').path;

before(async () => {
  model = await loadModel(dir());
  encoder = new TableRowsEncoder(model, modelInfo(model).hiddenSize);
  engine = await loadEngine(
    dir(),
    { threads: 2, cacheBlockSize: 16, maxSeqLen: 512, kvCacheBytes: 16 << 20, prefixCache: true },
    { imageEncoder: encoder },
  );
});
after(async () => {
  await engine.close();
  disposeModel(model);
});

/** A 300 x 100 image whose pixels start at `seed`. */
function image(seed: number): ImageInput {
  const rgb = new Uint8Array(300 * 100 * 3);
  for (let i = 0; i < rgb.length; i++) rgb[i] = (seed + i * 7) % 256;
  return { width: 300, height: 100, rgb, field: 'messages[0].content[0].image_url' };
}

const messages = (text: string): ChatMessage[] => [
  {
    role: 'user',
    content: text,
    parts: [
      { type: 'image', image: 0 },
      { type: 'text', text },
    ],
  },
];

const chat = (img: ImageInput, text: string, extra: Partial<GenerateRequest> = {}): GenerateRequest => ({
  prompt: { kind: 'chat', messages: messages(text) },
  params: { temperature: 0, ignoreEos: true, maxNewTokens: 8 },
  images: [img],
  ...extra,
});

async function finish(events: AsyncIterable<GenerateEvent>): Promise<FinishEvent> {
  let last: FinishEvent | undefined;
  for await (const e of events) if (e.type === 'finish') last = e;
  assert.ok(last);
  return last;
}

/** The prompt's ids with the image expanded (the engine's template, tokenizer and expansion). */
async function expandedPrompt(text: string): Promise<{ ids: number[]; positions: Int32Array }> {
  const rendered = await engine.applyChatTemplate(messages(text), true);
  const ids = await engine.tokenize(rendered, false);
  const one = async (s: string) => (await engine.tokenize(s, false))[0]!;
  const tokenIds = {
    fake: await one('<fake_token_around_image>'),
    image: await one('<image>'),
    global: await one('<global-img>'),
    newline: await one('\n'),
    newlines: await engine.tokenize('\n\n', false),
  };
  const rowCol = new Map<string, number>();
  for (let r = 1; r <= GRID.rows; r++)
    for (let c = 1; c <= GRID.cols; c++) rowCol.set(`${r},${c}`, await one(`<row_${r}_col_${c}>`));
  return expandImages(ids, [GRID], TOKENS_PER_TILE, {
    ...tokenIds,
    rowCol: (r, c) => rowCol.get(`${r},${c}`)!,
  });
}

test("the prompt's image tokens are Idefics3Processor's", async () => {
  const text = 'What is in this image?';
  const script = `
import json, sys, numpy as np
from PIL import Image
from transformers import AutoProcessor
p = AutoProcessor.from_pretrained(sys.argv[1])
y, x = np.mgrid[0:100, 0:300]
img = Image.fromarray(np.stack([x % 256, y % 256, (x * y) % 256], -1).astype(np.uint8))
msgs = [{'role': 'user', 'content': [{'type': 'image'}, {'type': 'text', 'text': sys.argv[2]}]}]
prompt = p.apply_chat_template(msgs, add_generation_prompt=True)
print(json.dumps(p(text=prompt, images=[img], return_tensors='np')['input_ids'][0].tolist()))
`;
  const out = execFileSync(pythonCommand(), ['-c', script, dir(), text], {
    encoding: 'utf8',
    env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error' },
  });
  const want = JSON.parse(out.trim().split('\n').at(-1)!) as number[];
  const got = await expandedPrompt(text);
  assert.deepEqual(got.ids, want);
  assert.equal(got.positions.length, (GRID.rows * GRID.cols + 1) * TOKENS_PER_TILE);
});

test("the image's rows are placed at its tokens: the prompt holding their tokens scores the same", async () => {
  const img = image(3);
  const text = 'Describe it, with the colours and the shapes you see.';
  const params = { temperature: 0, ignoreEos: true, maxNewTokens: 4, promptLogprobs: 2 };
  const viaImage = await finish(engine.generate(chat(img, text, { params })));
  const { ids, positions } = await expandedPrompt(text);
  const tokens = async (prompt: number[]) =>
    finish(engine.generate({ prompt: { kind: 'tokens', ids: prompt }, params }));
  // The placeholders' own rows score the text after the image otherwise: the check can fail.
  const unplaced = await tokens([...ids]);
  const rowTokens = TableRowsEncoder.ids(img);
  positions.forEach((p, k) => (ids[p] = rowTokens[k]!));
  const viaTokens = await tokens(ids);
  assert.equal(viaImage.usage.promptTokens, ids.length);
  // The text after the image, scored in the context of the placed rows: bit for bit the same.
  const after = (f: FinishEvent) => f.promptLogprobs!.slice(positions.at(-1)! + 1);
  assert.ok(after(viaImage).length > 10);
  assert.deepEqual(after(viaImage), after(viaTokens));
  assert.deepEqual(viaImage.tokenIds, viaTokens.tokenIds);
  assert.notDeepEqual(after(unplaced), after(viaTokens));
});

test('the prefix cache reuses the same image and text, never another image', async () => {
  const text = 'Which colours are there, and where?';
  const first = await finish(engine.generate(chat(image(11), text)));
  const again = await finish(engine.generate(chat(image(11), text)));
  assert.ok(again.usage.cachedPromptTokens >= 16, `reused ${again.usage.cachedPromptTokens} tokens`);
  assert.deepEqual(again.tokenIds, first.tokenIds);
  // Same size, other pixels: not one block of it comes from the cache.
  const other = await finish(engine.generate(chat(image(12), text)));
  assert.equal(other.usage.cachedPromptTokens, 0);
});

test('structured output holds with an image in the prompt', async () => {
  const choices = ['a red square', 'a blue circle', 'nothing'];
  const f = await finish(
    engine.generate(
      chat(image(5), 'What is it?', {
        params: { temperature: 0.8, seed: 7, maxNewTokens: 32 },
        constraint: { kind: 'choice', choices },
      }),
    ),
  );
  assert.ok(choices.includes(f.text), `got ${JSON.stringify(f.text)}`);
});

/** The chat prompt's rendering as a text prompt: its text parts around the image part. */
async function asTextPrompt(
  img: ImageInput,
  text: string,
  params: GenerateRequest['params'],
): Promise<GenerateRequest> {
  const [before, after, ...more] = (await engine.applyChatTemplate(messages(text), true)).split('<image>');
  assert.equal(more.length, 0);
  return {
    prompt: {
      kind: 'text',
      text: before! + after!,
      parts: [
        { type: 'text', text: before! },
        { type: 'image', image: 0 },
        { type: 'text', text: after! },
      ],
    },
    params,
    images: [img],
  };
}

test("a text prompt's image part is the chat's: the same prompt, scores and output, and the same cached blocks", async () => {
  const text = 'Tell me about the picture.';
  const params = { temperature: 0, ignoreEos: true, maxNewTokens: 6, promptLogprobs: 1 };
  const viaText = await finish(engine.generate(await asTextPrompt(image(21), text, params)));
  const viaChat = await finish(engine.generate(chat(image(21), text, { params })));
  const { ids } = await expandedPrompt(text);
  assert.deepEqual(
    viaText.promptLogprobs!.map((p) => p.tokenId),
    ids,
  );
  assert.deepEqual(viaChat.promptLogprobs, viaText.promptLogprobs);
  assert.deepEqual(viaChat.tokenIds, viaText.tokenIds);
  // The image's hash keys a text prompt's blocks as a chat's: the same image reuses them...
  const noLogprobs = { temperature: 0, ignoreEos: true, maxNewTokens: 6 };
  const again = await finish(engine.generate(await asTextPrompt(image(21), text, noLogprobs)));
  assert.ok(again.usage.cachedPromptTokens >= 16, `reused ${again.usage.cachedPromptTokens} tokens`);
  assert.deepEqual(again.tokenIds, viaText.tokenIds);
  // ...and another image of the same size none of them.
  const other = await finish(engine.generate(await asTextPrompt(image(22), text, noLogprobs)));
  assert.equal(other.usage.cachedPromptTokens, 0);
});

test('a text holding <image> itself, or image parts out of order or twice, are refused naming the field', async () => {
  await assert.rejects(
    finish(engine.generate(chat(image(1), '<image> and more'))),
    /holds 2 image placeholder tokens \(<image>\) for 1 images/,
  );
  const textPrompt = (...order: number[]): GenerateRequest => ({
    prompt: {
      kind: 'text',
      text: 'a b',
      parts: order.flatMap((image) => [
        { type: 'text' as const, text: 'a ' },
        { type: 'image' as const, image },
      ]),
    },
    params: { maxNewTokens: 1 },
    images: [image(1), image(2)],
  });
  const refused = (field: string, rule: RegExp) => (e: unknown) =>
    e instanceof EngineError && e.code === 'INVALID_ARGUMENT' && e.field === field && rule.test(e.message);
  await assert.rejects(
    finish(engine.generate(textPrompt(1, 0))),
    refused('prompt.text.parts[1].image', /names image 1 where image 0 comes next: .* in order, each once/),
  );
  await assert.rejects(
    finish(engine.generate(textPrompt(0, 0, 1))),
    refused('prompt.text.parts[3].image', /names image 0 where image 1 comes next/),
  );
  await assert.rejects(
    finish(engine.generate({ prompt: { kind: 'tokens', ids: [5, 6] }, params: {}, images: [image(1)] })),
    refused('messages[0].content[0].image_url', /a token-ids prompt has no place for an image/),
  );
});
