/**
 * AdapterManager without a model (a recording backend): slots, generations, deferred
 * unbinding while users remain or a step runs, and failures of the backend reported as the
 * load's own error.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdapterManager, AdapterOpError } from './manager.js';
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

const fake = (rank: number): PeftAdapter => ({
  dir: '',
  config: {} as PeftAdapter['config'],
  layers: [],
  rank,
});

test('slots, generations and deferred unbinding', () => {
  const { root, paths } = dirs(3);
  const log: string[] = [];
  let stepping = false;
  const m = new AdapterManager(
    { maxLoras: 2, maxLoraRank: 8, dynamic: true },
    {
      read: (d) => fake(d.endsWith('a2') ? 16 : 4),
      bind: (slot) => log.push(`bind ${slot}`),
      unbind: (slot) => log.push(`unbind ${slot}`),
    },
    () => stepping,
  );
  try {
    m.load('x', paths[0]);
    m.load('y', paths[1]);
    assert.throws(() => m.load('z', paths[1]), /exceeds 'max_loras' \(2\)/);
    const x = m.resolve('x');
    assert.equal(x.slot, 0);
    assert.match(x.cacheExtra, /x\0\d+$/);
    m.acquire(x.entry);
    m.unload('x');
    assert.throws(() => m.resolve('x'), /Model x not found\./);
    assert.deepEqual(log, ['bind 0', 'bind 1'], 'a used adapter keeps its slot');
    stepping = true;
    m.release(x.entry);
    assert.deepEqual(log, ['bind 0', 'bind 1'], 'not while a step runs');
    stepping = false;
    m.betweenSteps();
    assert.deepEqual(log, ['bind 0', 'bind 1', 'unbind 0']);
    m.load('x', paths[0]);
    const again = m.resolve('x');
    assert.equal(again.slot, 0);
    assert.notEqual(again.cacheExtra, x.cacheExtra, 'a reload is a new generation');
    m.unload('y');
    assert.throws(() => m.load('big', paths[2]), /LoRA rank 16 is greater than max_lora_rank 8\./);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("backend failures are the load's own error; dynamic loading off is UNAVAILABLE", () => {
  const { root, paths } = dirs(1);
  try {
    const failing = new AdapterManager(
      { maxLoras: 1, maxLoraRank: 8, dynamic: true },
      {
        read: () => {
          throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
        },
        bind: () => {},
        unbind: () => {},
      },
    );
    assert.throws(
      () => failing.load('x', paths[0]),
      (e: unknown) => e instanceof AdapterOpError && /is invalid\. EACCES/.test(e.message),
    );
    const off = new AdapterManager(
      { maxLoras: 1, maxLoraRank: 0, dynamic: false },
      { read: () => fake(1), bind: () => {}, unbind: () => {} },
    );
    assert.throws(
      () => off.load('x', paths[0]),
      (e: unknown) => e instanceof AdapterOpError && e.code === 'UNAVAILABLE',
    );
    assert.equal(off.load('x', paths[0], true), "Success: LoRA adapter 'x' added successfully.");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
