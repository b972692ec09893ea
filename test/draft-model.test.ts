/**
 * The draft-model proposer on the real default model, end to end. No smaller model with the
 * default model's vocabulary and useful weights exists here, so correctness is checked with
 * the default model as its own draft (greedy: every draft token must be accepted, which
 * fails if the draft's own paged KV is fed or rolled back wrongly) and with a smaller model
 * of the same vocabulary and random weights (a generated fixture: its drafts are refused, so
 * every step rolls the draft KV back). Seeded sampling mixes accepted and refused drafts.
 * A draft model with another vocabulary is refused at load, naming the field.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { loadEngine } from '../engine/load-engine.js';
import type { EngineOptions } from '../engine/options.js';
import type { GenerateRequest } from '../engine/types.js';
import { fixture } from './fixtures.js';
import { finish, SPECULATION_PROMPTS } from './speculation-prompts.js';

const base: EngineOptions = {
  maxBatchSize: 64,
  maxPrefillTokens: 2048,
  kvCacheBytes: 64 << 20,
  maxSeqLen: 256,
  cacheBlockSize: 16,
  threads: 2,
};

let plain: EngineCore;
let self: EngineCore;
before(async () => {
  plain = await loadEngine(ensureDefaultModel(), base);
  self = await loadEngine(ensureDefaultModel(), {
    ...base,
    speculative: {
      method: 'draft',
      draftModel: ensureDefaultModel(),
      numSpeculativeTokens: 4,
      adaptive: false,
    },
  });
});
after(async () => {
  await plain?.close();
  await self?.close();
});

const req = (text: string, params: GenerateRequest['params']): GenerateRequest => ({
  prompt: { kind: 'text', text },
  params,
});

test('the model as its own draft, greedy: the same tokens over 52 prompts, batched, and every draft accepted', async () => {
  assert.ok(SPECULATION_PROMPTS.length >= 50);
  const reqs = SPECULATION_PROMPTS.map((t) => req(t, { temperature: 0, maxNewTokens: 8, ignoreEos: true }));
  const before = (await self.status()).specDecode!;
  const [a, b] = await Promise.all([
    Promise.all(reqs.map((r) => finish(plain, r))),
    Promise.all(reqs.map((r) => finish(self, r))),
  ]);
  for (let i = 0; i < reqs.length; i++)
    assert.deepEqual(b[i].tokenIds, a[i].tokenIds, SPECULATION_PROMPTS[i]);
  const st = (await self.status()).specDecode!;
  assert.equal(st.method, 'draft');
  const drafted = st.numDraftTokens - before.numDraftTokens;
  assert.ok(drafted > 100, `drafted ${drafted}`);
  assert.equal(st.numAcceptedTokens - before.numAcceptedTokens, drafted, 'every draft token accepted');
});

test('seeded sampling: the same tokens per seed; greedy drafts of a sampled output are accepted and refused', async () => {
  const reqs = SPECULATION_PROMPTS.slice(0, 12).map((t, i) =>
    req(t, { temperature: 0.8, seed: 7 + i, maxNewTokens: 16, ignoreEos: true }),
  );
  const before = (await self.status()).specDecode!;
  const a = await Promise.all(reqs.map((r) => finish(plain, r)));
  const b = await Promise.all(reqs.map((r) => finish(self, r)));
  for (let i = 0; i < reqs.length; i++) assert.deepEqual(b[i].tokenIds, a[i].tokenIds);
  const st = (await self.status()).specDecode!;
  const accepted = st.numAcceptedTokens - before.numAcceptedTokens;
  const drafted = st.numDraftTokens - before.numDraftTokens;
  assert.ok(accepted > 0 && accepted < drafted, `accepted ${accepted} of ${drafted}: both kinds`);
});

test('a smaller model with the same vocabulary (random weights): drafts refused and rolled back, the same tokens', async () => {
  const e = await loadEngine(ensureDefaultModel(), {
    ...base,
    speculative: {
      method: 'draft',
      draftModel: fixture('llama-q8_0').path,
      numSpeculativeTokens: 3,
      adaptive: false,
    },
  });
  try {
    const reqs = SPECULATION_PROMPTS.slice(0, 8).map((t) =>
      req(t, { temperature: 0, maxNewTokens: 12, ignoreEos: true }),
    );
    const a = await Promise.all(reqs.map((r) => finish(plain, r)));
    const b = await Promise.all(reqs.map((r) => finish(e, r)));
    for (let i = 0; i < reqs.length; i++) assert.deepEqual(b[i].tokenIds, a[i].tokenIds);
    const st = (await e.status()).specDecode!;
    assert.ok(st.numDraftTokens > 20 && st.numAcceptedTokens < st.numDraftTokens / 2);
  } finally {
    await e.close();
  }
});

test('a draft model with another vocabulary, or none at the path, is refused naming the field', async () => {
  await assert.rejects(
    loadEngine(ensureDefaultModel(), {
      ...base,
      speculative: { method: 'draft', draftModel: fixture('qwen2-tied-f32').path },
    }),
    /speculative\.draftModel: the draft model's vocabulary differs from the served model's \(vocab_size/,
  );
  await assert.rejects(
    loadEngine(ensureDefaultModel(), {
      ...base,
      speculative: { method: 'draft', draftModel: '/nonexistent/draft.gguf', field: '--speculative' },
    }),
    /--draft-model: cannot load the draft model \/nonexistent\/draft.gguf/,
  );
});
