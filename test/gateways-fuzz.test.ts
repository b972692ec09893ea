/**
 * The gateway fuzzer in CI (test/fuzz/): 2,000 generated and mutated requests against every
 * route of every family on one in-process server. Every reply must be 2xx or 4xx in the
 * family's error shape (documented exceptions in fuzz.ts), with no stack trace and no hang;
 * the server must still answer afterwards and its RSS stay bounded. The seed is fixed so a
 * failure here reproduces with `npm run fuzz -- --seed 20261123 --cases 2000`; FUZZ_SEED
 * overrides it. `npm run fuzz -- --cases N` runs more.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MODEL_NAME, postJson, type Harness } from './gateways-harness.js';
import { closeFuzzAgent, runFuzz } from './fuzz/fuzz.js';
import { rssMb, startFuzzServer } from './fuzz/server.js';

const CASES = 2000;
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20261123;
/** RSS may grow this much over the run after warm-up (V8 heap for the largest bodies, caches). */
const RSS_GROWTH_LIMIT_MB = 400;

let h: Harness;
before(async () => {
  h = await startFuzzServer();
});
after(async () => {
  closeFuzzAgent();
  await h?.close();
});

test(`fuzz: ${CASES} generated requests to every route keep every invariant`, async () => {
  const rss: number[] = [];
  const report = await runFuzz(
    { service: h.url, management: h.managementUrl, metrics: h.metricsUrl },
    {
      cases: CASES,
      seed: SEED,
      servedModel: MODEL_NAME,
      concurrency: 4,
      onProgress: (done) => {
        if (done % 200 === 0) rss.push(rssMb());
      },
    },
  );
  const problems = report.failures.slice(0, 10).map((f) => JSON.stringify(f));
  assert.equal(report.failures.length, 0, `seed ${SEED}:\n${problems.join('\n')}`);
  assert.equal(report.cases, CASES);
  // The cases reach the handlers: a good share answered 2xx, and 4xx of several kinds.
  assert.ok((report.byStatus['200'] ?? 0) > CASES / 5, JSON.stringify(report.byStatus));
  for (const s of ['400', '404', '422'])
    assert.ok((report.byStatus[s] ?? 0) > 0, `no ${s} in ${JSON.stringify(report.byStatus)}`);
  // Bounded memory: the peak after the first tenth stays within the limit of that first sample.
  const warm = rss[0];
  const peak = Math.max(...rss);
  assert.ok(
    peak - warm < RSS_GROWTH_LIMIT_MB,
    `RSS grew from ${warm} to ${peak} MB (samples ${rss.join(' ')})`,
  );
  // Still serving, and serving right.
  assert.equal((await fetch(`${h.url}/health`)).status, 200);
  const r = await postJson(`${h.url}/v1/chat/completions`, {
    model: MODEL_NAME,
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 2,
  });
  assert.equal(r.status, 200, r.text);
  assert.ok(r.json.choices[0].message.content.length > 0);
  const status = await h.client.status();
  assert.equal(status.running + status.waiting, 0);
  assert.equal(status.freeBlocks, status.totalBlocks, 'every KV block is free again');
});
