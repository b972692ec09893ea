/**
 * Sliding-window attention through the whole engine: a Mistral-shaped model whose every layer
 * slides over 64 positions (make-fixtures.py `mistral-window`, a llama GGUF with
 * `llama.attention.sliding_window`), given prompts several windows long. The block manager
 * releases the blocks behind the window (engine/block-manager.ts); these tests hold the
 * answers to what the same engine computes with nothing released to reuse — a prefix-cache
 * hit on blocks that were released, a run without the prefix cache, and concurrent requests
 * all give the same greedy tokens — and the numerics test holds the window itself to the
 * float reference. The same for a Gemma 3 shape (make-fixtures.py `gemma3`: five layers
 * sliding over 48 positions, then one global), whose KV pool keeps the two kinds of layer in
 * separate pages (native/src/kv_layout.h): the sliding layers' pages behind the window are
 * released and reused by other sequences while the global layer keeps every block.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { loadEngine } from '../engine/load-engine.js';
import type { FinishEvent, GenerateEvent, GenerateRequest } from '../engine/types.js';
import { fixture } from './fixtures.js';

const PASSAGE = readFileSync(join(projectRoot(), 'test', 'reference', 'passage.txt'), 'utf8');
let cached: EngineCore;
let uncached: EngineCore;
let gemmaCached: EngineCore;
let gemmaUncached: EngineCore;
/**
 * Gemma pool: kvBlocks 60, the memory of 60 blocks of all six layers = 360 pages of one layer ×
 * 16 positions (a block of the global layer takes one page, of the five sliding layers five).
 */
const GEMMA_BLOCKS = 60;
const GEMMA_PAGES = 6 * GEMMA_BLOCKS;

before(async () => {
  const path = fixture('mistral-window-gguf-f32').path;
  const options = {
    maxBatchSize: 8,
    maxPrefillTokens: 96,
    cacheBlockSize: 16,
    kvBlocks: 64,
    maxSeqLen: 1024,
    maxInputTokenLen: 900,
    threads: 2,
  };
  cached = await loadEngine(path, { ...options, prefixCache: true });
  uncached = await loadEngine(path, { ...options, prefixCache: false });
  const gemma = fixture('gemma3-gguf-f32').path;
  const gemmaOptions = { ...options, kvBlocks: GEMMA_BLOCKS, maxSeqLen: GEMMA_BLOCKS * 16 };
  gemmaCached = await loadEngine(gemma, { ...gemmaOptions, prefixCache: true });
  gemmaUncached = await loadEngine(gemma, { ...gemmaOptions, kvBlocks: 400, prefixCache: false });
});

after(async () => {
  await cached?.close();
  await uncached?.close();
  await gemmaCached?.close();
  await gemmaUncached?.close();
});

async function finish(e: EngineCore, request: GenerateRequest): Promise<FinishEvent> {
  let last: GenerateEvent | undefined;
  for await (const ev of e.generate(request)) last = ev;
  assert.equal(last?.type, 'finish');
  return last as FinishEvent;
}

const greedy = (text: string, maxNewTokens = 24): GenerateRequest => ({
  prompt: { kind: 'text', text },
  params: { temperature: 0, maxNewTokens, ignoreEos: true },
});

test('a prompt many windows long gives the same tokens with and without the prefix cache', async () => {
  const prompt = PASSAGE.slice(0, 1500);
  const first = await finish(cached, greedy(prompt));
  assert.ok(first.usage.promptTokens > 4 * 64, `prompt of ${first.usage.promptTokens} tokens`);
  const again = await finish(cached, greedy(prompt));
  // Reused blocks include ones released behind the window of the first run.
  assert.ok(again.usage.cachedPromptTokens >= 4 * 64, `${again.usage.cachedPromptTokens} cached tokens`);
  assert.deepEqual(again.tokenIds, first.tokenIds);
  const plain = await finish(uncached, greedy(prompt));
  assert.equal(plain.usage.cachedPromptTokens, 0);
  assert.deepEqual(plain.tokenIds, first.tokenIds);
});

test('concurrent long sequences in a pool that could not hold them without releasing', async () => {
  // Six ~300-token prompts + 64 tokens would need 6 × ~23 = ~140 blocks of 16 kept whole;
  // the pool has 64. Under the 64-token window each holds a handful of blocks.
  const prompts = [0, 1, 2, 3, 4, 5].map((i) => PASSAGE.slice(150 * i, 150 * i + 1400));
  const alone = [];
  for (const p of prompts) alone.push(await finish(uncached, greedy(p, 64)));
  const before = (await cached.status()).preemptions;
  const together = await Promise.all(prompts.map((p) => finish(cached, greedy(p, 64))));
  for (let i = 0; i < prompts.length; i++)
    assert.deepEqual(together[i].tokenIds, alone[i].tokenIds, `prompt ${i}`);
  // Kept whole they would not fit: the newest would be preempted to make room (with the
  // window's blocks kept, this run preempted 7 times).
  assert.equal((await cached.status()).preemptions, before, 'no sequence was preempted');
});

test('Gemma 3: a prompt many windows long gives the same tokens from cached, released and fresh pages', async () => {
  const prompt = PASSAGE.slice(0, 1500);
  // The reference: a pool large enough that nothing freed is reused during the run.
  const plain = await finish(gemmaUncached, greedy(prompt));
  assert.ok(plain.usage.promptTokens > 4 * 48, `prompt of ${plain.usage.promptTokens} tokens`);
  const first = await finish(gemmaCached, greedy(prompt));
  assert.deepEqual(first.tokenIds, plain.tokenIds);
  // The hit needs every block of the global layer but only the window of the sliding ones.
  const again = await finish(gemmaCached, greedy(prompt));
  assert.ok(again.usage.cachedPromptTokens >= 4 * 48, `${again.usage.cachedPromptTokens} cached tokens`);
  assert.deepEqual(again.tokenIds, plain.tokenIds);
});

test('Gemma 3: concurrent long sequences fit a pool that holds their sliding layers only for the window', async () => {
  // Six ~300-token prompts + 64 tokens: ~23 blocks each, 6 pages per block kept whole = ~830
  // pages; the pool has 360. Each keeps ~23 pages of its global layer and ~4 blocks × 5 pages
  // of its sliding layers, so all six run at once; the sliding pages they let go are taken by
  // the others at once, so attention that read outside its window would change the tokens.
  const prompts = [0, 1, 2, 3, 4, 5].map((i) => PASSAGE.slice(150 * i, 150 * i + 1400));
  const alone = [];
  for (const p of prompts) alone.push(await finish(gemmaUncached, greedy(p, 64)));
  const blocks = Math.max(...alone.map((a) => Math.ceil((a.usage.promptTokens + 64) / 16)));
  assert.ok(6 * blocks * 6 > 2 * GEMMA_PAGES, `kept whole they would need ${6 * blocks * 6} pages`);
  const before = (await gemmaCached.status()).preemptions;
  const together = await Promise.all(prompts.map((p) => finish(gemmaCached, greedy(p, 64))));
  for (let i = 0; i < prompts.length; i++)
    assert.deepEqual(together[i].tokenIds, alone[i].tokenIds, `prompt ${i}`);
  const st = await gemmaCached.status();
  assert.equal(st.preemptions, before, 'no sequence was preempted');
  // kvBlocks counts blocks of every layer (the pool's memory); every page came back.
  assert.equal(st.totalBlocks, GEMMA_BLOCKS);
  assert.equal(st.freeBlocks, GEMMA_BLOCKS);
});

test('a sliding-window pool smaller than maxSeqLen at full attention runs a sequence longer than it', async () => {
  // kvBlocks × 16 tokens is below the sequence: the sliding layers hold only the window's
  // blocks and a prefill chunk's (engine/kv-layout.ts sequencePages). Mistral (window 64, chunks
  // of 96): ceil((63 + 96) / 16) + 1 = 11 blocks; Gemma 3 (window 48): every global page of
  // maxSeqLen 960 (60) + 5 sliding pages × 10 blocks = 110 pages = 19 blocks of six pages.
  const prompt = PASSAGE.slice(0, 2000);
  const base = { maxBatchSize: 2, maxPrefillTokens: 96, cacheBlockSize: 16, maxSeqLen: 960, threads: 2 };
  for (const [name, kvBlocks, reference] of [
    ['mistral-window-gguf-f32', 11, uncached],
    ['gemma3-gguf-f32', 19, gemmaUncached],
  ] as const) {
    const small = await loadEngine(fixture(name).path, { ...base, kvBlocks });
    try {
      const got = await finish(small, greedy(prompt));
      assert.ok(
        got.usage.promptTokens > kvBlocks * 16,
        `${name}: prompt of ${got.usage.promptTokens} tokens`,
      );
      assert.deepEqual(got.tokenIds, (await finish(reference, greedy(prompt))).tokenIds, name);
    } finally {
      await small.close();
    }
    // One block fewer cannot hold the window and a chunk beside the global layer's blocks.
    await assert.rejects(
      loadEngine(fixture(name).path, { ...base, kvBlocks: kvBlocks - 1 }),
      (e: Error & { field?: string }) =>
        e.field === 'kvBlocks' && /cannot hold one sequence of maxSeqLen 960: it needs/.test(e.message),
    );
  }
});
