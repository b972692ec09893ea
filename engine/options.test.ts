import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kvBlocksForBudget, resolveEngineOptions } from './options.js';

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

test('KV blocks from a memory budget (F16 K and V), never fewer than one full sequence', () => {
  const model = { numLayers: 30, numKvHeads: 3, headDim: 64 };
  const o = resolveEngineOptions({ kvCacheBytes: 64 << 20 });
  // 2 (K,V) * 30 * 3 * 64 * 2 bytes * 128 tokens = 2,949,120 bytes per block
  assert.equal(kvBlocksForBudget(o, model), Math.floor((64 << 20) / 2949120));
  assert.equal(kvBlocksForBudget(resolveEngineOptions({ kvCacheBytes: 1 << 20 }), model), 21);
});
