import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kvBlocksForBudget, kvBytesPerBlock, minKvBlocks, resolveEngineOptions } from './options.js';

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
  assert.equal(resolveEngineOptions({ maxSeqLen: 1000, maxInputTokenLen: 2048 }).maxInputTokenLen, 999);
});

test('bad options name the field and rule', () => {
  assert.throws(() => resolveEngineOptions({ cacheBlockSize: 256 }), /cacheBlockSize: must be in \[1, 128\]/);
  assert.throws(() => resolveEngineOptions({ maxIterTimes: 5000 }), /maxIterTimes: must be in \[1, 2560\]/);
  assert.throws(() => resolveEngineOptions({ truncation: 2 as never }), /truncation/);
  assert.throws(() => resolveEngineOptions({ maxBatchSize: 1.5 }), /maxBatchSize: must be an integer/);
  assert.throws(() => resolveEngineOptions({ kvBlocks: 2 }), /cannot hold one sequence/);
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
