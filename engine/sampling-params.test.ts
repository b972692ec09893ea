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
    [{ minP: 1.5 }, 'params.min_p', /\[0, 1\]/],
    [{ typicalP: 0 }, 'params.typical_p', /\(0, 1\]/],
    [{ logitBias: [1] }, 'params.logit_bias', /object/],
    [{ logitBias: { 100: 1 } }, 'params.logit_bias.100', /token id in \[0, 100\)/],
    [{ logitBias: { '-1': 1 } }, 'params.logit_bias.-1', /token id/],
    [{ logitBias: { 5: 100.5 } }, 'params.logit_bias.5', /\[-100, 100\]/],
    [
      { logitBias: Object.fromEntries(Array.from({ length: 301 }, (_, i) => [i, 1])) },
      'params.logit_bias',
      /at most 300/,
    ],
    [{ badWords: 'x' }, 'params.bad_words', /list/],
    [{ badWords: [' '] }, 'params.bad_words[0]', /non-space/],
    [{ priority: 0.5 }, 'params.priority', /integer/],
    [{ useBeamSearch: true, temperature: 0, minP: 0.1 }, 'params.min_p', /use_beam_search/],
    [{ useBeamSearch: true, temperature: 0, typicalP: 0.9 }, 'params.typical_p', /use_beam_search/],
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

test('min_p, typical_p, logit_bias, bad_words and priority: their off values by default, and as given', () => {
  const off = resolveParams({}, limits);
  assert.deepEqual([off.minP, off.typicalP, off.logitBias, off.badWords, off.priority], [0, 1, null, [], 0]);
  const on = resolveParams(
    { minP: 0.05, typicalP: 0.9, logitBias: { 7: -100, 3: 2.5 }, badWords: ['no'], priority: -3 },
    limits,
  );
  assert.deepEqual([on.minP, on.typicalP, on.badWords, on.priority], [0.05, 0.9, ['no'], -3]);
  assert.deepEqual([...on.logitBias!.tokens], [3, 7]);
  assert.deepEqual([...on.logitBias!.values], [2.5, -100]);
  assert.equal(resolveParams({ logitBias: {} }, limits).logitBias, null);
});
