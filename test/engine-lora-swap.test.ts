/**
 * Adapter loading and slot swapping in the engine, on the default model:
 *  - a load reads and converts its files off the event loop (the loop keeps turning);
 *  - two loads of one name at once: one succeeds, the other is refused at once;
 *  - a load that fails midway (files corrupt after the name was reserved) leaves nothing;
 *  - more adapters loaded (maxCpuLoras 6) than native slots (maxLoras 2): requests for
 *    non-resident adapters get a slot when one frees, and every adapter serves the tokens
 *    it serves alone, mixed in one busy batch with the base model.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, cpSync, mkdtempSync, rmSync, truncateSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { loadEngine } from '../engine/load-engine.js';
import { readPeftAdapter, type BaseShape } from '../engine/adapters/peft-reader.js';
import type { FinishEvent, GenerateEvent, GenerateRequest } from '../engine/types.js';
import { adapterFixture } from './adapter-fixtures.js';

let engine: EngineCore;
let scratch: string;
const model = ensureDefaultModel();
const path = (name: string) => adapterFixture(name).path;

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'prism-lora-swap-'));
  chmodSync(scratch, 0o755);
  engine = await loadEngine(model, {
    maxBatchSize: 16,
    maxPrefillTokens: 512,
    kvCacheBytes: 64 << 20,
    maxSeqLen: 512,
    maxInputTokenLen: 400,
    cacheBlockSize: 16,
    threads: 2,
    lora: { maxLoras: 2, maxCpuLoras: 6, maxLoraRank: 64, modules: [] },
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

/** SmolLM2-135M's shapes (readPeftAdapter refuses the adapter if they were wrong). */
const SHAPE: BaseShape = {
  format: 'gguf',
  numLayers: 30,
  hiddenSize: 576,
  intermediateSize: 1536,
  numHeads: 9,
  numKvHeads: 3,
  headDim: 64,
};

const PROMPT = 'The quick brown fox jumps over the lazy dog. '.repeat(4) + 'Then it';
const greedy = (adapter: string | undefined): GenerateRequest => ({
  prompt: { kind: 'text', text: PROMPT },
  params: { temperature: 0, maxNewTokens: 8, ignoreEos: true },
  ...(adapter !== undefined ? { adapter } : {}),
});

test('a load reads and converts off the event loop', async () => {
  let done = false;
  let turns = 0;
  let last = performance.now();
  let longest = 0;
  const spin = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    turns++;
    if (!done) setImmediate(spin);
  };
  const loading = engine.adapters!.load('big', path('default-r64')).finally(() => (done = true));
  setImmediate(spin);
  assert.equal(await loading, "Success: LoRA adapter 'big' added successfully.");
  engine.adapters!.unload('big');
  // Done on the JS thread (~20 M values to parse and check), the load would resolve before the first turn, or stall the loop
  // for about a whole synchronous read (measured here, on the same machine, right after).
  const t = performance.now();
  readPeftAdapter(path('default-r64'), SHAPE);
  const syncRead = performance.now() - t;
  assert.ok(turns >= 5, `the event loop turned ${turns} times during the load`);
  assert.ok(
    longest < 0.75 * syncRead,
    `longest event-loop stall ${longest.toFixed(1)} ms vs ${syncRead.toFixed(1)} ms for a read on the JS thread`,
  );
});

test('two loads of one name at once: one succeeds, the other is refused at once', async () => {
  const results = await Promise.allSettled([
    engine.adapters!.load('dup', path('default-qv')),
    engine.adapters!.load('dup', path('default-all')),
  ]);
  assert.equal(results[0].status, 'fulfilled');
  assert.equal(results[1].status, 'rejected');
  assert.match(
    String((results[1] as PromiseRejectedResult).reason),
    /The LoRA adapter 'dup' is being loaded\./,
  );
  assert.deepEqual(
    engine.adapters!.list().map((a) => a.path),
    [path('default-qv')],
  );
  engine.adapters!.unload('dup');
});

test('a load that fails midway leaves nothing behind', async () => {
  const dir = join(scratch, 'torn');
  cpSync(path('default-all'), dir, { recursive: true });
  chmodSync(dir, 0o755);
  const weights = join(dir, 'adapter_model.safetensors');
  truncateSync(weights, Math.floor(statSync(weights).size / 2));
  const resident = engine.adapters!.resident;
  await assert.rejects(
    engine.adapters!.load('torn', dir),
    /Call to load LoRA method failed: The LoRA adapter 'torn' is invalid\..*data_offsets/,
  );
  assert.equal(engine.adapters!.resident, resident);
  assert.deepEqual(engine.adapters!.list(), []);
  // The name is free, and the place it held against maxCpuLoras too.
  assert.equal(
    await engine.adapters!.load('torn', path('default-all')),
    "Success: LoRA adapter 'torn' added successfully.",
  );
  engine.adapters!.unload('torn');
});

test('more adapters loaded than slots: each gets a slot when one frees and serves its own tokens', async () => {
  const a = engine.adapters!;
  const names = ['qv', 'all', 'rslora', 'mlp', 'r64'];
  for (const n of names) await a.load(n, path(`default-${n}`));
  assert.equal(a.list().length, 5);
  assert.equal(a.limits.maxLoras, 2);
  const base = await run(greedy(undefined));
  const alone = new Map<string, readonly number[]>();
  for (const n of names) alone.set(n, (await run(greedy(n))).tokenIds);
  for (const n of names) assert.notDeepEqual(alone.get(n), base.tokenIds, `${n} changes the output`);
  assert.equal(new Set(names.map((n) => alone.get(n)!.join())).size, names.length, 'five different outputs');
  // qv lost its slot to later adapters; it comes back with its own matrices.
  assert.equal(a.resolve('qv').entry!.slot, -1);
  assert.deepEqual((await run(greedy('qv'))).tokenIds, alone.get('qv'));

  // All at once: 5 adapters and the base, twice each, through 2 slots.
  const swapsBefore = a.swaps;
  const order = [...names, undefined, ...names.toReversed(), undefined];
  const mixed = await Promise.all(order.map((n) => run(greedy(n))));
  mixed.forEach((f, i) => {
    const n = order[i];
    assert.deepEqual(f.tokenIds, n === undefined ? base.tokenIds : alone.get(n), `${n ?? 'base'} in the mix`);
  });
  assert.ok(a.swaps - swapsBefore >= 3, `slots were rebound while serving (${a.swaps - swapsBefore} swaps)`);
  for (const n of names) a.unload(n);
  assert.equal(a.resident, 0);
});
