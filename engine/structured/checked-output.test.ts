/**
 * Schemas the grammar enforces only in part (schema/prepare.ts), through the in-process engine
 * on the default model: each completed choice is checked against the client's schema; one that
 * fails is sampled again from the prompt with a derived seed, up to 3 attempts, and then fails
 * with the reason; the output is held until checked (streamed as one delta); the same seed gives
 * the same answer. Forced tool calls' arguments are checked the same way.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ensureDefaultModel } from '../default-model.js';
import type { EngineCore } from '../engine-core.js';
import { loadEngine } from '../load-engine.js';
import type { FinishEvent, GenerateEvent, GenerateRequest, SamplingParams } from '../types.js';
import { MAX_ATTEMPTS, resampleSeed } from './choice-checks.js';

let engine: EngineCore;

before(async () => {
  engine = await loadEngine(ensureDefaultModel(), {
    maxBatchSize: 8,
    kvCacheBytes: 64 << 20,
    maxSeqLen: 512,
    threads: 2,
  });
});
after(async () => {
  await engine?.close();
});

async function run(schema: object, params: SamplingParams) {
  const request: GenerateRequest = {
    prompt: { kind: 'chat', messages: [{ role: 'user', content: 'Three letters as a JSON array.' }] },
    params,
    constraint: { kind: 'json_schema', schema: JSON.stringify(schema) },
  };
  const events: GenerateEvent[] = [];
  for await (const ev of engine.generate(request)) events.push(ev);
  return { events, finishes: events.filter((x): x is FinishEvent => x.type === 'finish') };
}

/** Three distinct letters: the grammar writes any three of a, b, c; uniqueness is checked. */
const letters = {
  type: 'array',
  items: { enum: ['a', 'b', 'c'] },
  minItems: 3,
  maxItems: 3,
  uniqueItems: true,
};

test('a checked schema: every completed choice is valid, held until checked, and reproducible', async () => {
  const resampled0 = engine.features.structured.resampledChoices;
  const params = { maxNewTokens: 40, temperature: 1, seed: 11, n: 4 };
  const { events, finishes } = await run(letters, params);
  assert.equal(finishes.length, 4);
  const ajv = new Ajv2020();
  for (const f of finishes) {
    if (f.reason === 'error') {
      assert.match(f.error ?? '', /does not satisfy the schema after 3 attempts.*duplicate/);
      continue;
    }
    assert.equal(f.reason, 'stop');
    assert.ok(ajv.validate(letters, JSON.parse(f.text)), f.text);
    // Held: the choice's text arrives in one token event, after the check.
    const tokens = events.filter((e) => e.type === 'token' && e.index === f.index);
    assert.equal(tokens.length, 1);
    assert.equal(tokens[0]!.type === 'token' && tokens[0]!.text, f.text);
  }
  // At temperature 1 over three letters, some first attempts repeat a letter (2/9 are
  // distinct): the check sent them back.
  assert.ok(engine.features.structured.resampledChoices > resampled0, 'no choice was resampled');
  // The same request and seed: the same answers (attempts' seeds are derived, not random).
  const again = await run(letters, params);
  assert.deepEqual(
    again.finishes.map((f) => [f.reason, f.text]),
    finishes.map((f) => [f.reason, f.text]),
  );
});

test('a choice that fails every attempt ends with an error naming the rule', async () => {
  const failed0 = engine.features.structured.failedChecks;
  const resampled0 = engine.features.structured.resampledChoices;
  // The grammar can only write ["a", "a"]: never unique.
  const impossible = { type: 'array', items: { const: 'a' }, minItems: 2, maxItems: 2, uniqueItems: true };
  const { events, finishes } = await run(impossible, { maxNewTokens: 20, temperature: 0 });
  assert.equal(finishes[0]!.reason, 'error');
  assert.match(finishes[0]!.error ?? '', /after 3 attempts .*must NOT have duplicate items/);
  // Nothing of the failed attempts was sent.
  assert.equal(events.filter((e) => e.type === 'token').length, 0);
  assert.equal(engine.features.structured.failedChecks - failed0, 1);
  assert.equal(engine.features.structured.resampledChoices - resampled0, MAX_ATTEMPTS - 1);
});

test('a document cut by max_tokens is not checked; exact schemas stream as before', async () => {
  const cut = await run(letters, { maxNewTokens: 2, temperature: 0 });
  assert.equal(cut.finishes[0]!.reason, 'length');
  const exact = await run(
    { type: 'array', items: { enum: ['a', 'b', 'c'] }, minItems: 3, maxItems: 3 },
    { maxNewTokens: 40, temperature: 0 },
  );
  assert.equal(exact.finishes[0]!.reason, 'stop');
  assert.ok(
    exact.events.filter((e) => e.type === 'token').length > 1,
    'an exact schema streams token by token',
  );
});

test('attempt seeds are derived: distinct from the first and from best_of siblings', () => {
  const s = 7n;
  const seeds = [1, 2, 3].map((k) => resampleSeed(s, k));
  assert.equal(new Set([s, ...seeds, s + 1n, s + 2n, s + 3n]).size, 7);
  assert.equal(resampleSeed(s, 1), resampleSeed(s, 1));
  assert.ok(resampleSeed((1n << 64n) - 1n, 3) < 1n << 64n);
});
