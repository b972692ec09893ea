import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EngineError } from './errors.js';
import { resolveParams } from './sampling-params.js';

const limits = { vocabSize: 100, maxNewTokensCap: 512, maxN: 8 };

test('defaults: sampling at temperature 1, max_new_tokens = the cap, a random reported seed', () => {
  const p = resolveParams({}, limits);
  assert.equal(p.temperature, 1);
  assert.equal(p.maxNewTokens, 512);
  assert.equal(p.n, 1);
  assert.equal(p.bestOf, 1);
  assert.ok(Number.isInteger(p.seed) && p.seed >= 0);
  assert.notEqual(resolveParams({}, limits).seed, resolveParams({}, limits).seed);
});

test("a request's draft cap: absent means the engine's, 0 means none", () => {
  assert.equal(resolveParams({}, limits).numSpeculativeTokens, undefined);
  assert.equal(resolveParams({ numSpeculativeTokens: 0 }, limits).numSpeculativeTokens, 0);
  assert.equal(resolveParams({ numSpeculativeTokens: 3 }, limits).numSpeculativeTokens, 3);
});

test('do_sample=false forces greedy; max_new_tokens is capped by maxIterTimes', () => {
  assert.equal(resolveParams({ doSample: false, temperature: 0.7 }, limits).temperature, 0);
  assert.equal(resolveParams({ maxNewTokens: 4000 }, limits).maxNewTokens, 512);
  assert.equal(resolveParams({ topLogprobs: 3 }, limits).logprobs, true);
});

test('each bad field is named with its rule', () => {
  const bad: [object, string, RegExp][] = [
    [{ topP: 0 }, 'params.top_p', /\(0, 1\]/],
    [{ temperature: Number.NaN }, 'params.temperature', /finite/],
    [{ repetitionPenalty: 0 }, 'params.repetition_penalty', /> 0/],
    [{ frequencyPenalty: -2.5 }, 'params.frequency_penalty', /\[-2, 2\]/],
    [{ n: 9 }, 'params.n', /\[1, 8\]/],
    [{ bestOf: 9 }, 'params.best_of', /<= 8/],
    [{ topLogprobs: 21 }, 'params.top_logprobs', /\[0, 20\]/],
    [{ truncate: 0 }, 'params.truncate', />= 1/],
    [{ seed: 1.5 }, 'params.seed', /integer/],
    [{ stop: 'x' }, 'params.stop', /list/],
    [{ ignoreEos: 1 }, 'params.ignore_eos', /boolean/],
    [{ numSpeculativeTokens: -1 }, 'params.num_speculative_tokens', />= 0/],
    [{ numSpeculativeTokens: 2.5 }, 'params.num_speculative_tokens', /integer/],
  ];
  for (const [params, field, rule] of bad) {
    assert.throws(
      () => resolveParams(params, limits),
      (e: unknown) =>
        e instanceof EngineError &&
        e.code === 'INVALID_ARGUMENT' &&
        e.field === field &&
        rule.test(e.message),
      field,
    );
  }
});
