/**
 * Speculative decoding through the whole engine loop, on the paged-KV simulator (whose
 * "model" is a hash of the context it reads back out of the blocks, so any stale or
 * misplaced K/V changes the output). A test proposer predicts that model and gets a share of
 * its tokens wrong on purpose, so every step mixes accepted and refused drafts: the outputs
 * must equal a run without speculation, refused drafts' blocks must go back to the pool, and
 * no block may be keyed by a draft token.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BlockCacheObserver } from '../block-manager.js';
import { EngineCore } from '../engine-core.js';
import { resolveEngineOptions, type EngineOptions } from '../options.js';
import { CharTokenizer } from '../testing/char-tokenizer.js';
import { PagedKvSim, simHash, simSample } from '../testing/paged-kv-sim.js';
import type { EngineInfo, FinishEvent, GenerateEvent, GenerateRequest } from '../types.js';
import type { DraftAsk, Proposer } from './proposer.js';

const VOCAB = 95; // printable characters only: no EOS from the "model"

/** Proposes the simulator's own next tokens, with every `wrongEvery`-th one (by context hash) wrong. */
class OracleProposer implements Proposer {
  readonly method = 'ngram';
  readonly costly = false;
  asked = 0;
  constructor(private readonly wrongEvery: number) {}
  propose(asks: readonly DraftAsk[]): number[][] {
    return asks.map(({ seq, k }) => {
      this.asked++;
      const ctx = [...seq.tokens];
      const out: number[] = [];
      for (let i = 0; i < k; i++) {
        const h = simHash(ctx);
        const sp = seq.sampling;
        let t = simSample(h, VOCAB, sp.temperature > 0, sp.seed, seq.numOutput + i).token;
        if (this.wrongEvery > 0 && h % this.wrongEvery === 0) t = (t + 1) % VOCAB;
        out.push(t);
        ctx.push(t);
      }
      return out;
    });
  }
  release(): void {}
  close(): void {}
}

function engine(
  proposer: Proposer | null,
  opts: EngineOptions = {},
  kvBlocks = 96,
  blockSize = 4,
  observer?: BlockCacheObserver,
) {
  const options = resolveEngineOptions({
    cacheBlockSize: blockSize,
    maxSeqLen: 200,
    maxInputTokenLen: 100,
    kvBlocks,
    ...opts,
  });
  const sim = new PagedKvSim(kvBlocks, blockSize, VOCAB);
  const core = new EngineCore({
    runner: sim,
    tokenizer: new CharTokenizer(),
    options,
    info: { modelName: 'sim' } as EngineInfo,
    ...(observer ? { blockObserver: observer } : {}),
    ...(proposer ? { speculation: { proposer, options: { numSpeculativeTokens: 4, fixedK: true } } } : {}),
  });
  return { core, sim };
}

async function finishes(it: AsyncIterable<GenerateEvent>): Promise<FinishEvent[]> {
  const out: FinishEvent[] = [];
  const streamed = new Map<number, number[]>();
  for await (const e of it) {
    if (e.type === 'finish') out.push(e);
    else streamed.set(e.index, [...(streamed.get(e.index) ?? []), ...e.tokenIds]);
  }
  // The streamed tokens add up to the finish event's (several per event with speculation).
  for (const f of out) if (streamed.has(f.index)) assert.deepEqual(streamed.get(f.index), f.tokenIds);
  return out;
}

const req = (text: string, params: GenerateRequest['params'] = {}): GenerateRequest => ({
  prompt: { kind: 'text', text },
  params: { temperature: 0, ignoreEos: true, maxNewTokens: 30, ...params },
});

const PROMPTS = ['hello world', 'speculate', 'abc abc abc', 'x', 'the quick brown fox', 'zzzz'];

async function runAll(core: EngineCore, reqs: GenerateRequest[]): Promise<FinishEvent[][]> {
  return Promise.all(reqs.map((r) => finishes(core.generate(r))));
}

test('greedy and seeded outputs are the same with and without speculation, while drafts are accepted and refused', async () => {
  const reqs = [
    ...PROMPTS.map((p) => req(p)),
    ...PROMPTS.map((p, i) => req(p, { temperature: 0.8, seed: 100 + i })),
  ];
  const plain = engine(null);
  const spec = engine(new OracleProposer(3));
  const a = await runAll(plain.core, reqs);
  const b = await runAll(spec.core, reqs);
  assert.deepEqual(
    b.map((f) => f.map((x) => x.tokenIds)),
    a.map((f) => f.map((x) => x.tokenIds)),
  );
  assert.deepEqual(
    b.map((f) => f.map((x) => x.text)),
    a.map((f) => f.map((x) => x.text)),
  );
  const st = (await spec.core.status()).specDecode!;
  assert.ok(st.numAcceptedTokens > 0 && st.numAcceptedTokens < st.numDraftTokens, JSON.stringify(st));
  assert.equal(
    st.acceptedPerPosition.reduce((x, y) => x + y, 0),
    st.numAcceptedTokens,
  );
  for (let i = 1; i < st.acceptedPerPosition.length; i++)
    assert.ok(st.acceptedPerPosition[i] <= st.acceptedPerPosition[i - 1]);
  assert.ok(
    spec.sim.steps < plain.sim.steps,
    `fewer steps with speculation (${spec.sim.steps} vs ${plain.sim.steps})`,
  );
  const s = await spec.core.status();
  assert.equal(s.freeBlocks, s.totalBlocks, 'every block back in the pool');
  await plain.core.close();
  await spec.core.close();
});

test('a tiny pool preempts sequences with drafts in flight: the same outputs, every block back', async () => {
  const reqs = PROMPTS.map((p, i) =>
    req(p, { maxNewTokens: 40, ...(i % 2 ? { temperature: 1, seed: i } : {}) }),
  );
  const plain = engine(null, { maxSeqLen: 64 }, 24);
  const spec = engine(new OracleProposer(4), { maxSeqLen: 64 }, 24);
  const a = await runAll(plain.core, reqs);
  const b = await runAll(spec.core, reqs);
  assert.deepEqual(
    b.map((f) => f[0].tokenIds),
    a.map((f) => f[0].tokenIds),
  );
  const s = await spec.core.status();
  assert.ok(s.preemptions > 0, 'the pool was small enough to preempt');
  assert.equal(s.freeBlocks, s.totalBlocks);
  await plain.core.close();
  await spec.core.close();
});

test('no block is ever keyed by a draft token, even when every draft is refused', async () => {
  const stored: number[][] = [];
  const observer: BlockCacheObserver = {
    stored: (_key, _parent, tokens) => stored.push([...tokens]),
    removed: () => {},
  };
  const spec = engine(new OracleProposer(1), {}, 96, 4, observer);
  const [[f]] = await runAll(spec.core, [req('keyed blocks', { maxNewTokens: 24 })]);
  const verified = [...new CharTokenizer().encode('keyed blocks'), ...f.tokenIds];
  assert.ok(stored.length >= 6);
  stored.forEach((tokens, i) => assert.deepEqual(tokens, verified.slice(i * 4, i * 4 + 4), `block ${i}`));
  const st = (await spec.core.status()).specDecode!;
  assert.equal(st.numAcceptedTokens, 0);
  assert.ok(st.numDraftTokens > 0);
  await spec.core.close();
});

test('limits and stop strings inside an accepted draft end the output where they would without speculation', async () => {
  const plain = engine(null);
  const spec = engine(new OracleProposer(0));
  const [[ref]] = await runAll(plain.core, [req('stop here', { maxNewTokens: 30 })]);
  const stop = ref.text.slice(9, 11);
  const reqs = [
    req('stop here', { maxNewTokens: 7 }),
    req('stop here', { maxNewTokens: 30, stop: [stop] }),
    req('stop here', { maxNewTokens: 30, stop: [stop], includeStopStrInOutput: true }),
  ];
  const a = await runAll(plain.core, reqs);
  const b = await runAll(spec.core, reqs);
  for (let i = 0; i < reqs.length; i++) {
    assert.equal(b[i][0].text, a[i][0].text, `request ${i}`);
    assert.equal(b[i][0].reason, a[i][0].reason);
    assert.deepEqual(b[i][0].tokenIds, a[i][0].tokenIds);
  }
  assert.equal(b[0][0].tokenIds.length, 7);
  await plain.core.close();
  await spec.core.close();
});

test('n and best_of: each choice speculates on its own and gives what it gives without speculation', async () => {
  const r = req('forks', { n: 2, bestOf: 3, temperature: 0.9, seed: 7, maxNewTokens: 20 });
  const plain = engine(null);
  const spec = engine(new OracleProposer(5));
  const [a] = await runAll(plain.core, [r]);
  const [b] = await runAll(spec.core, [r]);
  assert.deepEqual(
    b.map((f) => f.tokenIds),
    a.map((f) => f.tokenIds),
  );
  assert.ok((await spec.core.status()).specDecode!.numAcceptedTokens > 0);
  await plain.core.close();
  await spec.core.close();
});

test('the adaptive k stops proposing for a sequence whose drafts are refused', async () => {
  const options = resolveEngineOptions({ cacheBlockSize: 4, maxSeqLen: 200, kvBlocks: 96 });
  const sim = new PagedKvSim(96, 4, VOCAB);
  const core = new EngineCore({
    runner: sim,
    tokenizer: new CharTokenizer(),
    options,
    info: { modelName: 'sim' } as EngineInfo,
    speculation: { proposer: new OracleProposer(1), options: { numSpeculativeTokens: 4 } },
  });
  await runAll(core, [req('always wrong', { maxNewTokens: 60 })]);
  const st = (await core.status()).specDecode!;
  assert.equal(st.numAcceptedTokens, 0);
  assert.ok(st.numDrafts <= 3, `drafts sent after they kept failing: ${st.numDrafts}`);
  await core.close();
});
