/**
 * Self-speculation by layer skipping on the real default model (30 layers), end to end:
 * greedy output token-for-token the same as without speculation over 52 prompts, batched,
 * with drafts refused (an early exit) and accepted; a draft that runs every layer (it then
 * IS the model) has every token accepted, in a pool small enough that drafts cross block
 * boundaries into scratch pages and sequences are preempted, which checks that the draft
 * reads the target's KV at the right places and never corrupts it; the same with a LoRA
 * adapter, which the draft pass must apply as the verify pass does.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { loadEngine } from '../engine/load-engine.js';
import type { EngineOptions } from '../engine/options.js';
import type { GenerateRequest } from '../engine/types.js';
import { adapterFixture } from './adapter-fixtures.js';
import { finish, SPECULATION_PROMPTS } from './speculation-prompts.js';

const base: EngineOptions = {
  maxBatchSize: 64,
  maxPrefillTokens: 2048,
  kvCacheBytes: 96 << 20,
  maxSeqLen: 256,
  cacheBlockSize: 16,
  threads: 2,
};
const LAYERS = 30;

let plain: EngineCore;
before(async () => {
  plain = await loadEngine(ensureDefaultModel(), base);
});
after(async () => {
  await plain?.close();
});

const greedy = (
  text: string,
  maxNewTokens: number,
  extra: Partial<GenerateRequest> = {},
): GenerateRequest => ({
  prompt: { kind: 'text', text },
  params: { temperature: 0, maxNewTokens, ignoreEos: true },
  ...extra,
});

test('greedy: the same tokens as without speculation over 52 prompts, batched; early-exit drafts accepted and refused', async () => {
  const e = await loadEngine(ensureDefaultModel(), {
    ...base,
    speculative: { method: 'layer-skip', draftLayers: 24, numSpeculativeTokens: 3, adaptive: false },
  });
  try {
    const reqs = SPECULATION_PROMPTS.map((t) => greedy(t, 8));
    assert.ok(reqs.length >= 50);
    const [a, b] = await Promise.all([
      Promise.all(reqs.map((r) => finish(plain, r))),
      Promise.all(reqs.map((r) => finish(e, r))),
    ]);
    for (let i = 0; i < reqs.length; i++)
      assert.deepEqual(b[i].tokenIds, a[i].tokenIds, SPECULATION_PROMPTS[i]);
    const st = (await e.status()).specDecode!;
    assert.equal(st.method, 'layer-skip');
    assert.ok(st.numAcceptedTokens > 0, `accepted ${st.numAcceptedTokens} of ${st.numDraftTokens}`);
    assert.ok(st.numAcceptedTokens < st.numDraftTokens, 'some drafts were refused (rolled back)');
  } finally {
    await e.close();
  }
});

test('a draft of every layer is the model: every token accepted across block boundaries and preemption', async () => {
  // 16-token blocks, 5 draft tokens: drafts run past a sequence's blocks into scratch pages;
  // 24 blocks for 8 sequences of ~60 tokens: some are preempted and recomputed.
  const tiny: EngineOptions = { ...base, kvBlocks: 24 };
  const e = await loadEngine(ensureDefaultModel(), {
    ...tiny,
    speculative: { method: 'layer-skip', draftLayers: LAYERS, numSpeculativeTokens: 5, adaptive: false },
  });
  try {
    const reqs = SPECULATION_PROMPTS.slice(0, 8).map((t) => greedy(t, 40));
    const x = await Promise.all(reqs.map((r) => finish(plain, r)));
    const y = await Promise.all(reqs.map((r) => finish(e, r)));
    for (let i = 0; i < reqs.length; i++) assert.deepEqual(y[i].tokenIds, x[i].tokenIds);
    const s = await e.status();
    assert.ok(s.preemptions > 0, 'the pool was small enough to preempt');
    assert.equal(s.freeBlocks, s.totalBlocks);
    assert.ok(s.specDecode!.numDraftTokens > 40);
    assert.equal(s.specDecode!.numAcceptedTokens, s.specDecode!.numDraftTokens, 'every draft token accepted');
  } finally {
    await e.close();
  }
});

test('LoRA: the draft pass applies the sequence adapter (a full-depth draft is all accepted), same tokens', async () => {
  const lora = {
    maxLoras: 2,
    maxLoraRank: 16,
    modules: [{ name: 'qv', path: adapterFixture('default-qv').path }],
  };
  const a = await loadEngine(ensureDefaultModel(), { ...base, lora });
  const b = await loadEngine(ensureDefaultModel(), {
    ...base,
    lora,
    speculative: { method: 'layer-skip', draftLayers: LAYERS, numSpeculativeTokens: 4, adaptive: false },
  });
  try {
    const reqs = SPECULATION_PROMPTS.slice(0, 6).map((t, i) =>
      greedy(t, 16, i % 2 === 0 ? { adapter: 'qv' } : {}),
    );
    const x = await Promise.all(reqs.map((r) => finish(a, r)));
    const y = await Promise.all(reqs.map((r) => finish(b, r)));
    for (let i = 0; i < reqs.length; i++) assert.deepEqual(y[i].tokenIds, x[i].tokenIds);
    const st = (await b.status()).specDecode!;
    assert.ok(st.numDraftTokens > 0);
    assert.equal(st.numAcceptedTokens, st.numDraftTokens, 'a draft without the adapter would be refused');
  } finally {
    await a.close();
    await b.close();
  }
});
