import { test } from 'node:test';
import assert from 'node:assert/strict';
import { speculativeFromFlags } from './speculative-flags.js';

const error = (m: string) => new Error(m);

test('--speculative and its companions become the engine option', () => {
  assert.deepEqual(
    speculativeFromFlags({ speculative: 'ngram', 'num-speculative-tokens': '8' }, undefined, error),
    {
      method: 'ngram',
      numSpeculativeTokens: 8,
      field: '--speculative',
    },
  );
  assert.deepEqual(
    speculativeFromFlags({ speculative: 'draft', 'draft-model': 'd.gguf' }, undefined, error),
    {
      method: 'draft',
      draftModel: 'd.gguf',
      field: '--speculative',
    },
  );
  assert.deepEqual(
    speculativeFromFlags({ speculative: 'layer-skip', 'draft-layers': '20' }, undefined, error),
    { method: 'layer-skip', draftLayers: 20, field: '--speculative' },
  );
  assert.equal(speculativeFromFlags({}, undefined, error), undefined);
});

test('the flags replace the config file plugin; --num-speculative-tokens alone adjusts it', () => {
  const fromConfig = { method: 'ngram' as const, numSpeculativeTokens: 3, field: 'P' };
  assert.equal(speculativeFromFlags({}, fromConfig, error), fromConfig);
  assert.equal(speculativeFromFlags({ speculative: 'layer-skip' }, fromConfig, error)?.method, 'layer-skip');
  assert.equal(
    speculativeFromFlags({ 'num-speculative-tokens': '6' }, fromConfig, error)?.numSpeculativeTokens,
    6,
  );
});

test('bad flags name the flag and the rule', () => {
  const bad = (v: Parameters<typeof speculativeFromFlags>[0], re: RegExp) =>
    assert.throws(() => speculativeFromFlags(v, undefined, error), re);
  bad({ speculative: 'eagle' }, /--speculative: must be ngram, draft or layer-skip, got 'eagle'/);
  bad(
    { speculative: 'ngram', 'num-speculative-tokens': '0' },
    /--num-speculative-tokens: must be an integer in \[1, 16\]/,
  );
  bad({ speculative: 'ngram', 'num-speculative-tokens': '17' }, /\[1, 16\]/);
  bad({ speculative: 'draft' }, /--speculative draft: needs --draft-model/);
  bad({ speculative: 'ngram', 'draft-model': 'x' }, /--draft-model: needs --speculative draft/);
  bad({ 'num-speculative-tokens': '4' }, /needs --speculative/);
  bad({ speculative: 'ngram', 'draft-layers': '4' }, /--draft-layers: needs --speculative layer-skip/);
  bad(
    { speculative: 'layer-skip', 'draft-layers': '0' },
    /--draft-layers: must be a positive integer, got '0'/,
  );
});
