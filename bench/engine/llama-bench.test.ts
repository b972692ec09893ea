import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBatchedBench, parseLlamaBench } from './llama-bench.js';
import { againstBestPeer } from './report.js';

// Trimmed from this llama.cpp build's own output (llama-bench -o json; batched-bench jsonl).
const BENCH = `[
  { "build_commit": "unknown", "build_number": 0, "backends": "CPU", "n_threads": 2,
    "n_prompt": 0, "n_gen": 31, "n_depth": 32, "avg_ns": 1550000000, "avg_ts": 20.0, "samples_ts": [ 20.0 ] }
]`;
const BATCHED = `main: n_kv_max = 1024
{"n_kv_max": 1024, "pp": 32, "tg": 32, "pl": 16, "n_kv": 1024, "t_pp": 4.5, "speed_pp": 113.7, "t_tg": 10.2, "speed_tg": 50.2, "t": 14.7, "speed": 69.6}`;

test('llama-bench JSON: the tok/s of the test asked for, anything else refused', () => {
  assert.equal(parseLlamaBench(BENCH, { nPrompt: 0, nGen: 31 }).avg_ts, 20);
  assert.throws(
    () => parseLlamaBench(BENCH, { nPrompt: 512, nGen: 0 }),
    /ran pp0\/tg31, expected pp512\/tg0/,
  );
  assert.throws(() => parseLlamaBench('error: failed to load model', { nPrompt: 0, nGen: 31 }), /no JSON/);
  assert.throws(() => parseLlamaBench('[]', { nPrompt: 0, nGen: 31 }), /no test with a positive avg_ts/);
});

test('llama-batched-bench jsonl: S_TG of the sequences × tokens asked for', () => {
  assert.equal(parseBatchedBench(BATCHED, { npl: 16, ntg: 32 }), 50.2);
  assert.throws(
    () => parseBatchedBench(BATCHED, { npl: 8, ntg: 32 }),
    /no result for 8 sequences × 32 tokens/,
  );
});

test('ratios are against the faster llama.cpp peer, named', () => {
  assert.deepEqual(againstBestPeer({ 'llama.cpp': 20, 'llama.cpp source': 25, prism: 30 }), {
    peer: 'llama.cpp source',
    ratio: 1.2,
  });
  assert.deepEqual(againstBestPeer({ 'llama.cpp': 20, prism: 30 }), { peer: 'llama.cpp', ratio: 1.5 });
  assert.equal(againstBestPeer({ 'llama.cpp': 20 }), undefined);
  assert.equal(againstBestPeer({ prism: 20 }), undefined);
});
