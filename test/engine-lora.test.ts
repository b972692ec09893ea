/**
 * Multi-LoRA in the engine, on the default model: requests name adapters; static adapters
 * from LoraModules, dynamic load/unload with MindIE/vLLM messages; the prefix cache keyed by
 * adapter identity (no sharing across adapters, reuse within one, no stale hit after a
 * reload from changed files); unloading lets running requests finish while new ones get
 * NOT_FOUND at once; one batch mixes adapters and the base model with the tokens each gets
 * alone.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { EngineError } from '../engine/errors.js';
import { loadEngine } from '../engine/load-engine.js';
import type { FinishEvent, GenerateEvent, GenerateRequest } from '../engine/types.js';
import { adapterFixture } from './adapter-fixtures.js';

let engine: EngineCore;
let scratch: string;
const model = ensureDefaultModel();
const path = (name: string) => adapterFixture(name).path;

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'prism-lora-'));
  chmodSync(scratch, 0o755);
  engine = await loadEngine(model, {
    maxBatchSize: 16,
    maxPrefillTokens: 512,
    kvCacheBytes: 64 << 20,
    maxSeqLen: 512,
    maxInputTokenLen: 400,
    cacheBlockSize: 16,
    threads: 2,
    lora: { maxLoras: 4, maxLoraRank: 16, modules: [{ name: 'qv', path: path('default-qv') }] },
  });
});
after(async () => {
  await engine?.close();
  rmSync(scratch, { recursive: true, force: true });
});

async function run(request: GenerateRequest) {
  const events: GenerateEvent[] = [];
  for await (const ev of engine.generate(request)) events.push(ev);
  return events.find((x): x is FinishEvent => x.type === 'finish')!;
}

const PROMPT = 'The quick brown fox jumps over the lazy dog. '.repeat(4) + 'Then it';
const greedy = (adapter: string | undefined, maxNewTokens = 8, text = PROMPT): GenerateRequest => ({
  prompt: { kind: 'text', text },
  params: { temperature: 0, maxNewTokens, ignoreEos: true },
  ...(adapter !== undefined ? { adapter } : {}),
});

test('static and dynamic adapters; the base model by no name or by its own name', async () => {
  assert.deepEqual(
    engine.adapters!.list().map((a) => a.name),
    ['qv'],
  );
  assert.equal(
    await engine.adapters!.load('all', path('default-all')),
    "Success: LoRA adapter 'all' added successfully.",
  );
  const base = await run(greedy(undefined));
  const byName = await run(greedy((await engine.info()).modelName));
  const qv = await run(greedy('qv'));
  const all = await run(greedy('all'));
  assert.deepEqual(byName.tokenIds, base.tokenIds);
  assert.notDeepEqual(qv.tokenIds, base.tokenIds);
  assert.notDeepEqual(all.tokenIds, base.tokenIds);
  assert.notDeepEqual(all.tokenIds, qv.tokenIds);
  // One batch mixing both adapters and the base gives each the tokens it gets alone.
  const mixed = await Promise.all(
    [greedy('qv'), greedy(undefined), greedy('all'), greedy('qv')].map((r) => run(r)),
  );
  assert.deepEqual(
    mixed.map((f) => f.tokenIds),
    [qv.tokenIds, base.tokenIds, all.tokenIds, qv.tokenIds],
  );
  engine.adapters!.unload('all');
});

test('an unknown adapter is NOT_FOUND at once', async () => {
  await assert.rejects(
    run(greedy('nope')),
    (e: unknown) =>
      e instanceof EngineError && e.code === 'NOT_FOUND' && /Model nope not found\./.test(e.message),
  );
});

test('prefix cache: no sharing across adapters, reuse within one, no stale hit after a reload', async () => {
  const text = 'A long shared system prompt about lighthouses and the sea. '.repeat(6) + 'Question:';
  const first = await run(greedy('qv', 4, text));
  assert.equal(first.usage!.cachedPromptTokens, 0);
  const again = await run(greedy('qv', 4, text));
  assert.ok(
    again.usage!.cachedPromptTokens >= 16,
    `same adapter reuses its prefix (${again.usage!.cachedPromptTokens})`,
  );
  assert.deepEqual(again.tokenIds, first.tokenIds);
  const base = await run(greedy(undefined, 4, text));
  assert.equal(base.usage!.cachedPromptTokens, 0, 'the base model does not hit the adapter blocks');
  const baseAgain = await run(greedy(undefined, 4, text));
  assert.ok(baseAgain.usage!.cachedPromptTokens >= 16);

  // Reload under the same name from changed files: new generation, no stale blocks.
  const dir = join(scratch, 'swap');
  cpSync(path('default-qv'), dir, { recursive: true });
  chmodSync(dir, 0o755);
  await engine.adapters!.load('swap', dir);
  const before = await run(greedy('swap', 4, text));
  assert.deepEqual(before.tokenIds, first.tokenIds, 'same files as qv: same tokens');
  engine.adapters!.unload('swap');
  rmSync(dir, { recursive: true });
  cpSync(path('default-all'), dir, { recursive: true });
  chmodSync(dir, 0o755);
  await engine.adapters!.load('swap', dir);
  const after = await run(greedy('swap', 4, text));
  assert.equal(after.usage!.cachedPromptTokens, 0, 'a reloaded adapter never hits blocks of its old weights');
  await engine.adapters!.load('all', path('default-all'));
  const fresh = await run(greedy('all', 4, text));
  assert.deepEqual(after.tokenIds, fresh.tokenIds, 'the reloaded adapter computes with its new weights');
  engine.adapters!.unload('swap');
  engine.adapters!.unload('all');
});

test('unloading lets running requests finish; new ones get NOT_FOUND at once; the slot comes back', async () => {
  await engine.adapters!.load('busy', path('default-mlp'));
  const resident = engine.adapters!.resident;
  // Unload once the request is decoding (its first token is out), not after a sleep: on a
  // quiet machine a short request can finish inside any fixed delay, and then nothing waits.
  const events = engine.generate(greedy('busy', 400))[Symbol.asyncIterator]();
  const first = await events.next();
  assert.equal(first.value?.type, 'token');
  const running = (async () => {
    for (;;) {
      const { value, done } = await events.next();
      if (done) throw new Error('the stream ended without a finish event');
      if (value.type === 'finish') return value;
    }
  })();
  assert.equal(engine.adapters!.unload('busy'), "Success: LoRA adapter 'busy' removed successfully.");
  await assert.rejects(
    run(greedy('busy')),
    (e: unknown) => e instanceof EngineError && e.code === 'NOT_FOUND',
  );
  await assert.rejects(
    engine.adapters!.load('busy', path('default-mlp')),
    /The LoRA adapter 'busy' is waiting to unload\./,
  );
  const done = await running;
  assert.equal(done.reason, 'length');
  assert.equal(done.tokenIds.length, 400);
  assert.equal(engine.adapters!.resident, resident - 1, 'the slot is freed once the last user ends');
  await engine.adapters!.load('busy', path('default-mlp'));
  engine.adapters!.unload('busy');
});

test('load rules: messages of the reference, one per rule', async () => {
  const a = engine.adapters!;
  await assert.rejects(a.load('qv', path('default-qv')), /The LoRA adapter 'qv' has already been added\./);
  await assert.rejects(a.load('-bad', path('default-qv')), /lora_name: must be 1-256 letters/);
  await assert.rejects(a.load('big', path('default-r64')), /LoRA rank 64 is greater than max_lora_rank 16\./);
  await assert.rejects(
    a.load('gone', '/nonexistent/adapter'),
    (e: unknown) =>
      e instanceof EngineError &&
      e.code === 'NOT_FOUND' &&
      /No adapter found for \/nonexistent\/adapter/.test(e.message),
  );
  await assert.rejects(a.load('dots', '/srv/../etc'), /lora_path: must not contain a '\.\.' component/);
  assert.throws(() => a.unload('never'), /The LoRA adapter 'never' cannot be found\./);
  await a.load('x1', path('default-mlp'));
  await a.load('x2', path('default-rslora'));
  await a.load('x3', path('default-all'));
  await assert.rejects(
    a.load('x4', path('default-qv')),
    /The number of LoRA adapters exceeds 'max_loras' \(4\)/,
  );
  for (const n of ['x1', 'x2', 'x3']) a.unload(n);
});

test('a static adapter that cannot load fails the start, naming its LoraModules entry', async () => {
  await assert.rejects(
    loadEngine(model, {
      threads: 1,
      maxSeqLen: 256,
      lora: { maxLoras: 0, maxLoraRank: 0, modules: [{ name: 'x', path: '/no/such/dir' }] },
    }),
    /LoraModules\[0\] 'x': path: No adapter found for \/no\/such\/dir/,
  );
});
