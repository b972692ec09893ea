import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEFAULT_FIXED_SPECULATIVE_TOKENS,
  DEFAULT_SPECULATIVE_TOKENS,
  MAX_SPECULATIVE_TOKENS,
  resolveSpeculative,
} from './options.js';

test('the cap on draft tokens: the one given, else 15 with the adaptive k and 5 without it', () => {
  assert.equal(DEFAULT_SPECULATIVE_TOKENS, 15);
  assert.equal(DEFAULT_FIXED_SPECULATIVE_TOKENS, 5);
  assert.equal(resolveSpeculative({ method: 'ngram' })?.numSpeculativeTokens, 15);
  assert.equal(resolveSpeculative({ method: 'ngram', adaptive: true })?.numSpeculativeTokens, 15);
  assert.equal(resolveSpeculative({ method: 'ngram', adaptive: false })?.numSpeculativeTokens, 5);
  // A cap the user gives means what vLLM's num_speculative_tokens means, adaptive or not.
  assert.equal(resolveSpeculative({ method: 'ngram', numSpeculativeTokens: 5 })?.numSpeculativeTokens, 5);
  assert.equal(
    resolveSpeculative({ method: 'ngram', numSpeculativeTokens: 12, adaptive: false })?.numSpeculativeTokens,
    12,
  );
  assert.throws(
    () => resolveSpeculative({ method: 'ngram', numSpeculativeTokens: MAX_SPECULATIVE_TOKENS + 1 }),
    /speculative\.numSpeculativeTokens: must be an integer in \[1, 16\]/,
  );
});
