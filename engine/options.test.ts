import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wholeLayout } from './kv-layout.js';
import {
  checkKvBlocks,
  kvBlocksForBudget,
  kvBytesPerBlock,
  minKvBlocks,
  resolveEngineOptions,
} from './options.js';

test('MindIE defaults and the effective maxInputTokenLen', () => {
  const o = resolveEngineOptions();
  assert.equal(o.maxBatchSize, 200);
  assert.equal(o.maxPrefillTokens, 8192);
  assert.equal(o.cacheBlockSize, 128);
  assert.equal(o.maxSeqLen, 2560);
  assert.equal(o.maxInputTokenLen, 2048);
  assert.equal(o.maxIterTimes, 512);
  assert.equal(o.maxPrefillBatchSize, 200);
  assert.equal(o.truncation, 0);
  assert.equal(o.schedulingPolicy, 'fcfs');
  assert.equal(resolveEngineOptions({ maxSeqLen: 1000, maxInputTokenLen: 2048 }).maxInputTokenLen, 999);
});

test("the model's context when no maxSeqLen is given: limits that fit it, capped by maxModelLen", () => {
  const o = resolveEngineOptions({}, 8192);
  assert.equal(o.contextFromModel, true);
  assert.deepEqual([o.maxSeqLen, o.maxInputTokenLen, o.maxIterTimes], [8192, 8191, 8192]);
  const capped = resolveEngineOptions({ maxModelLen: 1024 }, 8192);
  assert.deepEqual([capped.maxSeqLen, capped.maxInputTokenLen, capped.maxIterTimes], [1024, 1023, 1024]);
  // A cap above the model's context does not raise it.
  assert.equal(resolveEngineOptions({ maxModelLen: 100000 }, 8192).maxSeqLen, 8192);
  // A configured maxSeqLen (a MindIE config file) keeps MindIE's defaults around it.
  const configured = resolveEngineOptions({ maxSeqLen: 2560 }, 8192);
  assert.equal(configured.contextFromModel, false);
  assert.deepEqual([configured.maxInputTokenLen, configured.maxIterTimes], [2048, 512]);
  assert.throws(
    () => resolveEngineOptions({ maxSeqLen: 2560, maxModelLen: 1024 }, 8192),
    /maxModelLen: caps/,
  );
});

test('bad options name the field and rule', () => {
  assert.throws(() => resolveEngineOptions({ cacheBlockSize: 256 }), /cacheBlockSize: must be in \[1, 128\]/);
  assert.throws(() => resolveEngineOptions({ maxIterTimes: 5000 }), /maxIterTimes: must be in \[1, 2560\]/);
  assert.throws(() => resolveEngineOptions({ truncation: 2 as never }), /truncation/);
  assert.throws(
    () => resolveEngineOptions({ schedulingPolicy: 'lifo' as never }),
    /schedulingPolicy: must be one of fcfs, priority, got lifo/,
  );
  assert.throws(() => resolveEngineOptions({ maxBatchSize: 1.5 }), /maxBatchSize: must be an integer/);
});

test('an explicit kvBlocks must hold one sequence of maxSeqLen; sliding layers need only their window', () => {
  const kvBlocksError = (re: RegExp) => (e: Error & { field?: string }) =>
    e.field === 'kvBlocks' && re.test(e.message);
  // Every layer global: ceil(maxSeqLen / blockSize) blocks (2560 / 128 = 20).
  const whole = wholeLayout(30);
  checkKvBlocks(resolveEngineOptions({ kvBlocks: 20 }), whole);
  assert.throws(
    () => checkKvBlocks(resolveEngineOptions({ kvBlocks: 19 }), whole),
    kvBlocksError(/19 blocks of 128 tokens cannot hold one sequence of maxSeqLen 2560: it needs 20$/),
  );
  // Mistral, every layer sliding over 4,096: 32,768 tokens run in the window's blocks and a
  // prefill chunk's: ceil((4095 + 512) / 16) + 1 = 289 blocks, not 2,048.
  const mistral = wholeLayout(32, 4096);
  const long = { maxSeqLen: 32768, maxInputTokenLen: 32000, cacheBlockSize: 16, maxPrefillTokens: 512 };
  checkKvBlocks(resolveEngineOptions({ ...long, kvBlocks: 289 }), mistral);
  assert.throws(
    () => checkKvBlocks(resolveEngineOptions({ ...long, kvBlocks: 288 }), mistral),
    kvBlocksError(/it needs 289 \(its sliding-window layers keep only the window's blocks\)/),
  );
  // Gemma 3 (18 layers: 3 global, 15 sliding over 512; a page is 3 layers of one block, so a
  // block is 1 global page + 5 sliding pages): every global page of 2,048 blocks + 5 sliding
  // pages × (ceil((511 + 512) / 16) + 1 = 65) = 2,373 pages = 396 blocks of six pages.
  const gemma = {
    pageLayers: 3,
    pagesPerBlock: 6,
    groups: [
      { window: 0, pages: 1 },
      { window: 512, pages: 5 },
    ],
  };
  checkKvBlocks(resolveEngineOptions({ ...long, kvBlocks: 396 }), gemma);
  assert.throws(
    () => checkKvBlocks(resolveEngineOptions({ ...long, kvBlocks: 395 }), gemma),
    kvBlocksError(/needs 396/),
  );
  // Short sequences: the window bound never exceeds the whole context.
  checkKvBlocks(resolveEngineOptions({ maxSeqLen: 64, cacheBlockSize: 16, kvBlocks: 4 }), gemma);
  assert.throws(
    () => checkKvBlocks(resolveEngineOptions({ maxSeqLen: 64, cacheBlockSize: 16, kvBlocks: 3 }), gemma),
    kvBlocksError(/needs 4/),
  );
  checkKvBlocks(resolveEngineOptions({}), whole); // no kvBlocks: the budget decides (kvBlocksForBudget)
});

test('KV blocks from a memory budget (F16 K and V); a budget below one full sequence is an error', () => {
  const model = { numLayers: 30, numKvHeads: 3, headDim: 64 };
  const o = resolveEngineOptions({ kvCacheBytes: 64 << 20 });
  // 2 (K,V) * 30 * 3 * 64 * 2 bytes * 128 tokens = 2,949,120 bytes per block
  assert.equal(kvBytesPerBlock(o, model), 2949120);
  assert.equal(kvBlocksForBudget(o, model), Math.floor((64 << 20) / 2949120));
  // maxSeqLen 2560 / 128 = 20 blocks + 1 of headroom.
  assert.equal(minKvBlocks(o), 21);
  assert.equal(kvBlocksForBudget(resolveEngineOptions({ kvCacheBytes: 21 * 2949120 }), model), 21);
  assert.throws(
    () => kvBlocksForBudget(resolveEngineOptions({ kvCacheBytes: 21 * 2949120 - 1 }), model),
    (e: Error & { field?: string }) =>
      e.field === 'kvCacheBytes' &&
      /holds 20 blocks of 128 tokens; one sequence of maxSeqLen 2560 needs 21/.test(e.message),
  );
  // A shorter maxSeqLen needs a smaller pool: 2 MiB holds 5 blocks of 16 tokens here (3 needed).
  const short = resolveEngineOptions({ kvCacheBytes: 2 << 20, maxSeqLen: 32, cacheBlockSize: 16 });
  assert.equal(kvBlocksForBudget(short, model), 5);
});
