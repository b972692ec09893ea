/**
 * JSONSchemaBench coverage on the default model, a fixed sample of 100 schemas per category
 * (bench/jsonschemabench.ts runs the full sets): every completed output must parse and
 * validate against its schema (ajv + ajv-formats), no constrained request may fail after its
 * grammar compiled, and at most 5% of the schemas that pass the keyword checks may fail to
 * compile. Refusals (a keyword the grammar cannot enforce) are counted, not failures: they
 * are the engine telling the client the truth. Reads ../shared/data/jsonschemabench (CI lays
 * shared/ beside the clone) or $PRISM_SHARED_DIR/data/jsonschemabench.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { resultTable, runJsonSchemaBench, refusalSummary } from '../bench/jsonschemabench.js';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { loadEngine } from '../engine/load-engine.js';

let engine: EngineCore;
before(async () => {
  engine = await loadEngine(ensureDefaultModel(), {
    maxBatchSize: 16,
    maxSeqLen: 512,
    kvCacheBytes: 64 << 20,
    threads: 2,
  });
});
after(async () => {
  await engine?.close();
});

test('JSONSchemaBench sample: completed outputs all valid, compiles where the checks pass', async () => {
  const results = await runJsonSchemaBench(engine, { perCategory: 100, maxTokens: 32, concurrency: 16 });
  console.log(`${resultTable(results)}\n${refusalSummary(results)}`);
  for (const r of results) {
    assert.equal(r.schemas, 100, r.category);
    assert.deepEqual(r.invalidSamples, [], `${r.category}: invalid outputs`);
    assert.equal(r.errors, 0, `${r.category}: requests failed after compiling`);
    assert.ok(
      r.compileFailed <= 0.05 * (r.schemas - r.refused),
      `${r.category}: ${r.compileFailed} compile failures`,
    );
    assert.ok(r.completed + r.length + r.checkFailed === r.compiled, r.category);
  }
  assert.ok(
    results.reduce((s, r) => s + r.completed, 0) >= 40,
    'too few documents completed to say anything about validity',
  );
});
