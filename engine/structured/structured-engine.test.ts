/**
 * Structured output through the in-process engine on the real default model
 * (SmolLM2-135M-Instruct): every constraint kind, n > 1 and best_of (one matcher each),
 * seeds, stop strings, logprobs, max_tokens cuts, preemption, and the invalid cases.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ensureDefaultModel } from '../default-model.js';
import type { EngineCore } from '../engine-core.js';
import { loadEngine } from '../load-engine.js';
import type { Constraint, FinishEvent, GenerateEvent, GenerateRequest, SamplingParams } from '../types.js';
import type { StructuredTuning } from './tuning.js';

let engine: EngineCore;
/** The engine's structured-output switches (the overlap test flips them). */
const tuning: StructuredTuning = {};

before(async () => {
  engine = await loadEngine(
    ensureDefaultModel(),
    {
      maxBatchSize: 16,
      maxPrefillTokens: 512,
      kvCacheBytes: 64 << 20,
      maxSeqLen: 1024,
      maxInputTokenLen: 600,
      threads: 2,
    },
    { structuredTuning: tuning },
  );
});
after(async () => {
  await engine?.close();
});

async function run(
  constraint: Constraint | undefined,
  params: SamplingParams,
  text = 'Describe a person as JSON.',
) {
  const request: GenerateRequest = {
    prompt: { kind: 'chat', messages: [{ role: 'user', content: text }] },
    params,
    ...(constraint ? { constraint } : {}),
  };
  const events: GenerateEvent[] = [];
  for await (const ev of engine.generate(request)) events.push(ev);
  const finishes = events.filter((x): x is FinishEvent => x.type === 'finish');
  const streamed = (i: number) =>
    events.map((x) => (x.type === 'token' && x.index === i ? x.text : '')).join('');
  return { finishes, streamed, events };
}

const person = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 20 }, age: { type: 'integer' } },
  required: ['name', 'age'],
};

test('json_schema: the document parses and validates; EOS only where the grammar ends', async () => {
  const { finishes, streamed } = await run(
    { kind: 'json_schema', schema: JSON.stringify(person) },
    { maxNewTokens: 80, temperature: 0 },
  );
  const f = finishes[0];
  assert.equal(f.reason, 'stop', f.error);
  assert.equal(streamed(0), f.text);
  const doc = JSON.parse(f.text) as Record<string, unknown>;
  assert.ok(new Ajv2020().validate(person, doc), f.text);
  // additionalProperties defaults to false: only the two keys.
  assert.deepEqual(Object.keys(doc).sort(), ['age', 'name']);
});

test('json_object, regex, choice and grammar constraints hold', async () => {
  const obj = await run({ kind: 'json_object' }, { maxNewTokens: 60, temperature: 0 });
  if (obj.finishes[0].reason === 'stop') {
    const v = JSON.parse(obj.finishes[0].text) as unknown;
    assert.ok(v !== null && typeof v === 'object' && !Array.isArray(v));
  } else assert.equal(obj.finishes[0].reason, 'length');

  const re = await run(
    { kind: 'regex', pattern: '[0-9]{3}-[a-z]{2}' },
    { maxNewTokens: 20, temperature: 0.8, seed: 3 },
  );
  assert.match(re.finishes[0].text, /^[0-9]{3}-[a-z]{2}$/);

  const ch = await run(
    { kind: 'choice', choices: ['red', 'green', 'blue'] },
    { maxNewTokens: 10, temperature: 0 },
    'Pick a color.',
  );
  assert.ok(['red', 'green', 'blue'].includes(ch.finishes[0].text), ch.finishes[0].text);

  const gr = await run(
    { kind: 'grammar', ebnf: 'root ::= "yes" | "no" | "maybe " [0-9]' },
    { maxNewTokens: 10, temperature: 1, seed: 9 },
  );
  assert.match(gr.finishes[0].text, /^(yes|no|maybe [0-9])$/);
});

test('n > 1 and best_of: every choice is its own valid document; same seed → same documents', async () => {
  const c: Constraint = { kind: 'json_schema', schema: JSON.stringify(person) };
  const params = { maxNewTokens: 80, temperature: 1, seed: 42, n: 3 };
  const a = await run(c, params);
  const b = await run(c, params);
  assert.equal(a.finishes.length, 3);
  for (const f of a.finishes) {
    assert.equal(f.reason, 'stop', f.error);
    assert.ok(new Ajv2020().validate(person, JSON.parse(f.text)), f.text);
    assert.equal(a.streamed(f.index), f.text);
  }
  assert.deepEqual(
    a.finishes.map((f) => f.text),
    b.finishes.map((f) => f.text),
  );
  const best = await run(c, { maxNewTokens: 80, temperature: 1, seed: 5, n: 2, bestOf: 3 });
  assert.equal(best.finishes.length, 2);
  for (const f of best.finishes) assert.ok(new Ajv2020().validate(person, JSON.parse(f.text)), f.text);
});

test('max_tokens cuts the document: finish reason length', async () => {
  const { finishes } = await run(
    { kind: 'json_schema', schema: JSON.stringify(person) },
    { maxNewTokens: 4, temperature: 0 },
  );
  assert.equal(finishes[0].reason, 'length');
  assert.equal(finishes[0].tokenIds.length, 4);
});

test('logprobs are of the masked distribution (every chosen token had mass under the mask)', async () => {
  const { events } = await run(
    { kind: 'choice', choices: ['alpha', 'beta'] },
    { maxNewTokens: 8, temperature: 0, logprobs: true, topLogprobs: 3 },
  );
  const lps = events.flatMap((e) => (e.type === 'token' ? (e.logprobs ?? []) : []));
  assert.ok(lps.length > 0);
  for (const lp of lps) {
    assert.ok(lp.logprob <= 0 && lp.logprob > -50, String(lp.logprob));
    // Alternatives outside the grammar have no probability at all.
    for (const t of lp.top) assert.ok(Number.isFinite(t.logprob) || t.logprob === -Infinity);
  }
  const total = lps.reduce((s, x) => s + Math.exp(x.logprob), 0);
  assert.ok(total > 0);
});

test('stop strings still apply inside a constrained document', async () => {
  const { finishes } = await run(
    { kind: 'regex', pattern: 'abc(def)+' },
    { maxNewTokens: 20, temperature: 0, stop: ['de'] },
  );
  assert.equal(finishes[0].reason, 'stop');
  assert.equal(finishes[0].text, 'abc');
});

test('twelve constrained requests batched together all validate', async () => {
  const c: Constraint = { kind: 'json_schema', schema: JSON.stringify(person) };
  const all = await Promise.all(
    Array.from({ length: 12 }, (_, i) => run(c, { maxNewTokens: 60, temperature: 0.7, seed: i })),
  );
  for (const r of all) {
    const f = r.finishes[0];
    if (f.reason === 'length') continue;
    assert.equal(f.reason, 'stop', f.error);
    assert.ok(new Ajv2020().validate(person, JSON.parse(f.text)), f.text);
  }
});

test('invalid constraints fail the request with INVALID_ARGUMENT naming the field', async () => {
  const bad: [unknown, RegExp][] = [
    // (What the grammar cannot enforce is checked on the document, checked-output.test.ts;
    // what no document matches is refused.)
    [{ kind: 'json_schema', schema: '{"$ref":"#"}' }, /constraint\.schema: is a cycle of references/],
    [{ kind: 'json_schema', schema: '{"type":"strin"}' }, /constraint\.schema.*type/],
    [
      { kind: 'json_schema', schema: '{"type":"integer","minimum":5,"maximum":3}' },
      /^constraint\.schema\.minimum: the range is empty: no integer satisfies minimum 5, maximum 3: no document matches the schema$/,
    ],
    [
      { kind: 'json_schema', schema: '{"type":"integer","maximum":"3"}' },
      /constraint\.schema\.maximum: is not valid JSON Schema/,
    ],
    [{ kind: 'json_schema', schema: 'not json' }, /constraint\.schema: is not JSON/],
    [{ kind: 'regex', pattern: '(ab' }, /constraint: the grammar does not compile/],
    [{ kind: 'choice', choices: [] }, /constraint\.choices/],
    [{ kind: 'nope' }, /constraint\.kind: unknown constraint kind/],
  ];
  for (const [constraint, re] of bad) {
    await assert.rejects(
      run(constraint as Constraint, { maxNewTokens: 4 }),
      (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT' && re.test(e.message),
      JSON.stringify(constraint),
    );
  }
});

test('preemption, chunked prefill and the prefix cache keep every matcher right', async () => {
  // 8 blocks of 16 tokens for 4 sequences of ~30 prompt + up to 40 output tokens: they must
  // preempt and recompute; prefill goes in chunks of 16; the second round hits the cache.
  const tiny = await loadEngine(ensureDefaultModel(), {
    cacheBlockSize: 16,
    kvBlocks: 8,
    maxSeqLen: 128,
    maxBatchSize: 4,
    maxPrefillTokens: 16,
    prefixCache: true,
    threads: 2,
  });
  try {
    const schema = {
      type: 'object',
      properties: { items: { type: 'array', items: { type: 'string', maxLength: 8 }, minItems: 3 } },
      required: ['items'],
    };
    const runOn = async (seed: number) => {
      const events: GenerateEvent[] = [];
      for await (const ev of tiny.generate({
        prompt: { kind: 'chat', messages: [{ role: 'user', content: 'List some fruits as JSON, please.' }] },
        params: { maxNewTokens: 40, temperature: 0.9, seed },
        constraint: { kind: 'json_schema', schema: JSON.stringify(schema) },
      }))
        events.push(ev);
      return events.find((x): x is FinishEvent => x.type === 'finish')!;
    };
    const first = await Promise.all([1, 2, 3, 4].map(runOn));
    const again = await Promise.all([1, 2, 3, 4].map(runOn));
    const status = await tiny.status();
    assert.ok(status.preemptions > 0, 'the pool was meant to force preemption');
    assert.ok(
      again.some((f) => f.usage.cachedPromptTokens > 0),
      'the second round should hit the prefix cache',
    );
    for (const f of [...first, ...again]) {
      assert.notEqual(f.reason, 'error', f.error);
      if (f.reason === 'stop') assert.ok(new Ajv2020().validate(schema, JSON.parse(f.text)), f.text);
      else assert.ok(f.text.startsWith('{'), f.text);
    }
    // Same seed, same document, whatever was preempted or cached.
    assert.deepEqual(
      again.map((f) => f.text),
      first.map((f) => f.text),
    );
  } finally {
    await tiny.close();
  }
});

test('jump-forward: forced tokens are appended without sampling; text, stream, usage and limits stay right', async () => {
  const c: Constraint = { kind: 'json_schema', schema: JSON.stringify(person) };
  const check = (r: Awaited<ReturnType<typeof run>>) => {
    const f = r.finishes[0];
    const streamedIds = r.events.flatMap((e) => (e.type === 'token' ? e.tokenIds : []));
    assert.deepEqual(streamedIds, f.tokenIds);
    assert.equal(r.streamed(0), f.text);
    assert.equal(f.usage.completionTokens, f.tokenIds.length);
    return f;
  };
  const before = engine.features.structured.jumpedTokens;
  const on = check(await run(c, { maxNewTokens: 80, temperature: 0.8, seed: 11 }));
  assert.equal(on.reason, 'stop', on.error);
  assert.ok(new Ajv2020().validate(person, JSON.parse(on.text)), on.text);
  assert.ok(
    engine.features.structured.jumpedTokens > before,
    'keys and punctuation should have been jumped over',
  );
  // Some steps returned more than one token: the forced ones came with the sampled one.
  // Same seed → same document (jumps depend on the grammar, not on timing).
  assert.equal(check(await run(c, { maxNewTokens: 80, temperature: 0.8, seed: 11 })).text, on.text);

  // max_tokens inside a forced run: cut exactly there.
  for (const n of [2, 3, 5]) {
    const f = check(await run(c, { maxNewTokens: n, temperature: 0 }));
    assert.equal(f.reason, 'length');
    assert.equal(f.tokenIds.length, n);
  }
  // A stop string inside the forced text ends the choice there.
  const stopped = check(await run(c, { maxNewTokens: 80, temperature: 0, stop: ['"age'] }));
  assert.equal(stopped.reason, 'stop');
  assert.ok(!stopped.text.includes('"age'), stopped.text);
  assert.ok(stopped.text.startsWith('{"name": "'), stopped.text);

  // Off for logprobs (an appended token has no sampled logprob): one logprob per token.
  const jumped = engine.features.structured.jumpedTokens;
  const lp = await run(c, { maxNewTokens: 40, temperature: 0, logprobs: true });
  const lps = lp.events.flatMap((e) => (e.type === 'token' ? (e.logprobs ?? []) : []));
  assert.equal(lps.length, lp.finishes[0].tokenIds.length);
  assert.equal(engine.features.structured.jumpedTokens, jumped);
});

test('masks during the forward pass: same documents as masks before the step', async () => {
  const c: Constraint = { kind: 'json_schema', schema: JSON.stringify(person) };
  const docs = async (overlap: boolean) => {
    tuning.overlapMasks = overlap;
    const late0 = engine.features.structured.lateSteps;
    const all = await Promise.all(
      [1, 2, 3, 4].map((seed) => run(c, { maxNewTokens: 60, temperature: 0.8, seed })),
    );
    return { texts: all.map((r) => r.finishes[0].text), late: engine.features.structured.lateSteps - late0 };
  };
  const saved = tuning.overlapMasks;
  try {
    const before = await docs(false);
    const during = await docs(true);
    assert.equal(before.late, 0);
    assert.ok(during.late > 0, 'some steps should have started before their masks');
    assert.deepEqual(during.texts, before.texts);
    for (const t of during.texts)
      if (t.endsWith('}')) assert.ok(new Ajv2020().validate(person, JSON.parse(t)), t);
  } finally {
    tuning.overlapMasks = saved;
  }
});
