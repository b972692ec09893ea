/**
 * KV-cache events (engine/kv-events.ts) from the real engine on the default model: a ZeroMQ
 * subscriber decodes every message the way llm-d's indexer does (test/k8s/kv-event-mirror.ts)
 * and rebuilds the set of cached blocks; after each phase — prompts sharing prefixes, a pool
 * small enough for LRU evictions, a static adapter, an adapter loaded, unloaded and loaded again
 * at run time — the rebuilt set must equal the block manager's own contents exactly: the same
 * 64-bit hashes, the same tokens per block, the right adapter on each block.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDefaultModel, projectRoot } from '../engine/default-model.js';
import type { BlockManager } from '../engine/block-manager.js';
import type { EngineCore } from '../engine/engine-core.js';
import { externalBlockHash, type KvEventPublisher } from '../engine/kv-events.js';
import { loadEngine } from '../engine/load-engine.js';
import type { GenerateRequest } from '../engine/types.js';
import { adapterFixture } from './adapter-fixtures.js';
import { KvEventMirror } from './k8s/kv-event-mirror.js';
// @ts-expect-error -- a plain .mjs module without types
import { ensureVenv } from '../scripts/python-env.mjs';

const BLOCK = 16;
const KV_BLOCKS = 40;
const TOPIC = 'kv@10.0.0.7:8000@kv-test';

let dir: string;
let engine: EngineCore;
let publisher: KvEventPublisher;
let mirror: KvEventMirror;

/** Deterministic token ids (a small LCG), away from the special tokens at the start of the vocabulary. */
function tokens(seed: number, n: number): number[] {
  let x = seed * 7919 + 17;
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return 1000 + (x % 20000);
  });
}

async function generate(ids: readonly number[], adapter?: string): Promise<void> {
  const r: GenerateRequest = {
    prompt: { kind: 'tokens', ids },
    params: { maxNewTokens: 3, doSample: false, ignoreEos: true },
    ...(adapter ? { adapter } : {}),
  };
  for await (const ev of engine.generate(r)) if (ev.type === 'finish') assert.notEqual(ev.reason, 'error');
}

/** The block manager's contents, keyed as the events key them. */
function engineBlocks(): Map<bigint, number[]> {
  const out = new Map<bigint, number[]>();
  for (const [key, toks] of (engine['blocks'] as BlockManager).cachedBlocks())
    out.set(externalBlockHash(key), [...toks]);
  return out;
}

/** Waits until every batch published so far has arrived, then compares the mirror with the engine. */
async function assertMirrorIsEngine(): Promise<void> {
  await publisher.idle();
  await mirror.waitFor(publisher.sent);
  const want = engineBlocks();
  const got = new Map([...mirror.blocks].map(([h, b]) => [h, [...b.tokens]]));
  assert.deepEqual(got, want);
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'prism-kv-events-'));
  const endpoint = `ipc://${join(dir, 'kv.sock')}`;
  engine = await loadEngine(
    ensureDefaultModel(),
    {
      modelName: 'kv-test',
      maxSeqLen: 256,
      maxInputTokenLen: 200,
      cacheBlockSize: BLOCK,
      kvBlocks: KV_BLOCKS,
      maxBatchSize: 4,
      threads: 2,
      lora: {
        maxLoras: 2,
        maxLoraRank: 16,
        modules: [{ name: 'qv', path: adapterFixture('default-qv').path }],
      },
      kvEvents: { endpoint, topic: TOPIC },
    },
    { onKvEvents: (p) => (publisher = p) },
  );
  // Subscribes after the engine started: the publisher holds its events until then.
  mirror = new KvEventMirror(endpoint);
});

after(async () => {
  await engine?.close();
  await mirror?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('KV-cache events rebuild the engine cached-block set exactly', () => {
  const shared = tokens(1, 3 * BLOCK);

  test('prompts sharing a prefix: stored once, chained to their parents', async () => {
    await Promise.all([1, 2, 3].map((i) => generate([...shared, ...tokens(10 + i, BLOCK + 5)])));
    await generate([...shared, ...tokens(11, BLOCK + 5)]); // a repeat: nothing new is stored
    await assertMirrorIsEngine();
    assert.deepEqual([...mirror.topics], [TOPIC]);
    assert.equal(mirror.counts.cleared, 1, 'the first batch clears what a subscriber held for this pod');
    // The shared prefix is three blocks, stored once, the second chained to the first.
    const [b0, b1] = [0, 1].map((i) => [...mirror.blocks].find(([, b]) => b.tokens[0] === shared[i * BLOCK]));
    assert.ok(b0 && b1);
    assert.equal(b0[1].parent, null);
    assert.equal(b1[1].parent, b0[0]);
    assert.deepEqual(b1[1].tokens, shared.slice(BLOCK, 2 * BLOCK));
    for (const b of mirror.blocks.values()) {
      assert.equal(b.blockSize, BLOCK);
      assert.equal(b.medium, 'CPU');
      assert.equal(b.loraName, null);
    }
  });

  test('an adapter keys its own blocks and names itself on them', async () => {
    await generate([...shared, ...tokens(11, BLOCK + 5)], 'qv');
    await assertMirrorIsEngine();
    const qv = [...mirror.blocks.values()].filter((b) => b.loraName === 'qv');
    assert.ok(qv.length >= 4, 'the same prompt under qv is stored again, under qv');
    assert.ok(qv.every((b) => b.loraId !== null && b.loraId > 0));
  });

  test('an adapter loaded, unloaded and loaded again gets new blocks under a new lora_id', async () => {
    const path = adapterFixture('default-all').path;
    await engine.loadAdapter('dyn', path);
    const prompt = [...shared, ...tokens(30, 2 * BLOCK)];
    await generate(prompt, 'dyn');
    await assertMirrorIsEngine();
    await engine.unloadAdapter('dyn');
    await engine.loadAdapter('dyn', path);
    await generate(prompt, 'dyn');
    await assertMirrorIsEngine();
    const ids = new Set(mirror.storedLora.filter((l) => l.loraName === 'dyn').map((l) => l.loraId));
    assert.equal(ids.size, 2, 'two loads of dyn, two lora_ids');
  });

  test('a pool too small for every prompt evicts least recently used blocks', async () => {
    const before = mirror.counts.removed;
    for (let i = 0; i < 3; i++) await generate(tokens(100 + i, 5 * BLOCK + 3));
    await Promise.all([0, 1].map((i) => generate(tokens(200 + i, 5 * BLOCK + 1))));
    await assertMirrorIsEngine();
    assert.ok(mirror.counts.removed > before, 'evictions were published');
    assert.ok(mirror.blocks.size <= KV_BLOCKS);
  });

  test("vLLM's own event types decode every message (msgspec, declared as vLLM declares them)", () => {
    const root = projectRoot();
    const bin = ensureVenv(root, 'deploy/.venv', 'deploy/requirements.txt') as string;
    const r = spawnSync(join(bin, 'python'), ['test/k8s/vllm_kv_events.py'], {
      cwd: root,
      input: mirror.payloads.map((p) => p.toString('hex')).join('\n') + '\n',
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    const decoded = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.deepEqual(decoded, {
      batches: mirror.counts.batches,
      BlockStored: mirror.counts.stored,
      BlockRemoved: mirror.counts.removed,
      AllBlocksCleared: mirror.counts.cleared,
      loraNames: ['dyn', 'qv'],
      mediums: ['CPU'],
    });
  });

  test('closing the engine clears every block', async () => {
    const sent = publisher.sent;
    await engine.close();
    await mirror.waitFor(sent + 1n);
    assert.equal(mirror.blocks.size, 0);
    assert.equal(mirror.counts.cleared, 2);
  });
});
