/**
 * AdapterManager without a model (a recording backend): generations, deferred freeing
 * while users remain or a step runs, slots handed out on demand with LRU eviction of idle
 * adapters (never a pinned slot), a name reserved while its load runs, every failed stage
 * rolled back, and failures of the backend reported as the load's own error.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdapterManager, AdapterOpError, type AdapterBackend } from './manager.js';
import type { PeftAdapter } from './peft-reader.js';

function dirs(n: number): { root: string; paths: string[] } {
  const root = mkdtempSync(join(tmpdir(), 'prism-mgr-'));
  chmodSync(root, 0o755);
  const paths = Array.from({ length: n }, (_, i) => {
    const d = join(root, `a${i}`);
    mkdirSync(d);
    chmodSync(d, 0o755);
    for (const f of ['adapter_config.json', 'adapter_model.safetensors'])
      writeFileSync(join(d, f), '{}', { mode: 0o644 });
    return d;
  });
  return { root, paths };
}

const fake = (rank: number, dir = ''): PeftAdapter => ({
  dir,
  config: {} as PeftAdapter['config'],
  layers: [],
  rank,
});

/** A backend that logs every native call; handles are `h:<dir>` strings. */
function recording(rankOf: (dir: string) => number = () => 4) {
  const log: string[] = [];
  const live = new Set<string>();
  const backend: AdapterBackend = {
    read: (d) => Promise.resolve(fake(rankOf(d), d)),
    create: (a) => {
      const h = `h:${a.dir.slice(-2)}`;
      live.add(h);
      return Promise.resolve(h);
    },
    dispose: (h) => {
      live.delete(h as string);
      log.push(`dispose ${h as string}`);
    },
    bind: (slot, h) => log.push(`bind ${slot} ${h as string}`),
    unbind: (slot) => log.push(`unbind ${slot}`),
  };
  return { log, live, backend };
}

test('generations, slots on demand and deferred freeing', async () => {
  const { root, paths } = dirs(3);
  const { log, live, backend } = recording((d) => (d.endsWith('a2') ? 16 : 4));
  let stepping = false;
  const m = new AdapterManager({ maxLoras: 2, maxLoraRank: 8, dynamic: true }, backend, () => stepping);
  try {
    await m.load('x', paths[0]);
    await m.load('y', paths[1]);
    await assert.rejects(
      m.load('z', paths[1]),
      /exceeds 'max_loras' \(2\), and none are currently unloading/,
    );
    assert.deepEqual(log, [], 'a load binds no slot until a request needs one');
    const x = m.resolve('x');
    assert.match(x.cacheExtra, /x\0\d+$/);
    assert.equal(m.slotFor(x.entry!.generation, new Set()), 0);
    assert.equal(m.slotFor(x.entry!.generation, new Set([0])), 0, 'its own slot, even pinned');
    m.acquire(x.entry);
    m.unload('x');
    assert.throws(() => m.resolve('x'), /Model x not found\./);
    stepping = true;
    m.release(x.entry);
    assert.deepEqual(log, ['bind 0 h:a0'], 'not while a step runs');
    stepping = false;
    m.betweenSteps();
    assert.deepEqual(log, ['bind 0 h:a0', 'unbind 0', 'dispose h:a0']);
    await m.load('x', paths[0]);
    const again = m.resolve('x');
    assert.notEqual(again.cacheExtra, x.cacheExtra, 'a reload is a new generation');
    m.unload('y');
    await assert.rejects(m.load('big', paths[2]), /LoRA rank 16 is greater than max_lora_rank 8\./);
    assert.deepEqual([...live], ['h:a0'], 'y freed at once (no users); the refused load left nothing');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('more adapters loaded than slots: LRU eviction of idle slots, never a pinned one', async () => {
  const { root, paths } = dirs(4);
  const { log, backend } = recording();
  const m = new AdapterManager({ maxLoras: 2, maxCpuLoras: 4, maxLoraRank: 8, dynamic: true }, backend);
  try {
    for (const [i, p] of paths.entries()) await m.load(`a${i}`, p);
    const gen = (i: number) => m.resolve(`a${i}`).entry!.generation;
    await assert.rejects(m.load('a4', paths[0]), /exceeds 'max_cpu_loras' \(4\)/);
    assert.equal(m.slotFor(gen(0), new Set()), 0);
    assert.equal(m.slotFor(gen(1), new Set([0])), 1);
    // Both slots pinned (running sequences use them): a third adapter waits.
    assert.equal(m.slotFor(gen(2), new Set([0, 1])), -1);
    assert.equal(m.resolve('a2').entry!.slot, -1);
    // Slot 1 pinned: the least recently used unpinned one (0) goes to a2.
    assert.equal(m.slotFor(gen(2), new Set([1])), 0);
    assert.equal(m.resolve('a0').entry!.slot, -1, 'a0 lost its slot');
    m.slotFor(gen(1), new Set()); // a1 used again: a2 is now the least recent
    assert.equal(m.slotFor(gen(3), new Set()), 0, 'LRU: a2 (slot 0) is evicted, not a1');
    assert.equal(m.slotFor(gen(0), new Set([0])), 1);
    assert.deepEqual(log, ['bind 0 h:a0', 'bind 1 h:a1', 'bind 0 h:a2', 'bind 0 h:a3', 'bind 1 h:a0']);
    assert.equal(m.swaps, 5);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a name is reserved while it loads: a second load is refused; the limit counts it', async () => {
  const { root, paths } = dirs(2);
  const { backend } = recording();
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const slow: AdapterBackend = { ...backend, read: async (d) => (await gate, backend.read(d)) };
  const m = new AdapterManager({ maxLoras: 1, maxLoraRank: 8, dynamic: true }, slow);
  try {
    const first = m.load('x', paths[0]);
    await assert.rejects(m.load('x', paths[1]), /The LoRA adapter 'x' is being loaded\./);
    await assert.rejects(m.load('y', paths[1]), /exceeds 'max_loras' \(1\)/);
    assert.deepEqual(m.list(), [], 'not listed before it is ready');
    release();
    assert.equal(await first, "Success: LoRA adapter 'x' added successfully.");
    await assert.rejects(m.load('x', paths[1]), /has already been added/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a load failing at any stage leaves nothing behind', async () => {
  const { root, paths } = dirs(1);
  const { log, live, backend } = recording();
  let failCreate = true;
  const flaky: AdapterBackend = {
    ...backend,
    create: (a) =>
      failCreate
        ? Promise.reject(new RangeError('createAdapter: layer 3 q: A is [8 x 10], expected [8 x 576]'))
        : backend.create(a),
  };
  try {
    const m = new AdapterManager({ maxLoras: 1, maxLoraRank: 8, dynamic: true }, flaky);
    await assert.rejects(
      m.load('x', paths[0]),
      (e: unknown) =>
        e instanceof AdapterOpError && /load LoRA method failed: createAdapter: layer 3/.test(e.message),
    );
    assert.equal(m.resident, 0);
    assert.deepEqual(m.list(), []);
    // The name and the only place are free again (not "is being loaded", not over max_loras).
    failCreate = false;
    assert.equal(await m.load('x', paths[0]), "Success: LoRA adapter 'x' added successfully.");
    assert.deepEqual([...live], ['h:a0']);
    // Refused on rank: checked before the native copy is made, so nothing to undo.
    const strict = new AdapterManager({ maxLoras: 1, maxLoraRank: 2, dynamic: true }, backend);
    await assert.rejects(strict.load('y', paths[0]), /LoRA rank 4 is greater than max_lora_rank 2/);
    assert.equal(strict.resident, 0);
    assert.deepEqual([...live], ['h:a0']);
    assert.deepEqual(log, []);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("backend failures are the load's own error; dynamic loading off is UNAVAILABLE", async () => {
  const { root, paths } = dirs(1);
  const { backend } = recording();
  try {
    const failing = new AdapterManager(
      { maxLoras: 1, maxLoraRank: 8, dynamic: true },
      {
        ...backend,
        read: () => Promise.reject(Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' })),
      },
    );
    await assert.rejects(
      failing.load('x', paths[0]),
      (e: unknown) => e instanceof AdapterOpError && /is invalid\. EACCES/.test(e.message),
    );
    const off = new AdapterManager({ maxLoras: 1, maxLoraRank: 0, dynamic: false }, backend);
    await assert.rejects(
      off.load('x', paths[0]),
      (e: unknown) => e instanceof AdapterOpError && e.code === 'UNAVAILABLE',
    );
    assert.equal(await off.load('x', paths[0], true), "Success: LoRA adapter 'x' added successfully.");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
