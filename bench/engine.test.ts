import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBenchArgs } from './engine.js';

test('bench:engine defaults follow the issue: 2 threads, 3 runs, 32 × 128 decode, 512 prefill', () => {
  const args = parseBenchArgs([]);
  assert.notEqual(args, 'help');
  if (args === 'help') return;
  assert.deepEqual(args.engines, ['llama.cpp', 'prism']);
  assert.equal(args.threads, 2);
  assert.equal(args.runs, 3);
  assert.equal(args.warmup, 1);
  assert.equal(args.sequences, 32);
  assert.equal(args.promptTokens, 32);
  assert.equal(args.newTokens, 128);
  assert.equal(args.prefillTokens, 512);
  assert.equal(args.output, 'table');
  assert.deepEqual([...args.measures], ['single', 'aggregate', 'prefill']);
});

test('bench:engine flags are parsed and bad values named', () => {
  const args = parseBenchArgs(['--model', 'm.gguf', '--engine', 'llama.cpp', '--runs', '5', '--json']);
  if (args === 'help') return;
  assert.equal(args.modelPath, 'm.gguf');
  assert.deepEqual(args.engines, ['llama.cpp']);
  assert.equal(args.runs, 5);
  assert.equal(args.output, 'json');
  assert.equal(parseBenchArgs(['--help']), 'help');
  assert.throws(() => parseBenchArgs(['--runs', '0']), /--runs must be an integer ≥ 1, got '0'/);
  assert.throws(() => parseBenchArgs(['--threads', '1.5']), /--threads must be an integer/);
  assert.throws(() => parseBenchArgs(['--new-tokens', '1']), /--new-tokens must be an integer ≥ 2/);
  assert.throws(
    () => parseBenchArgs(['--engine', 'vllm']),
    /--engine must be one of both, llama\.cpp, prism/,
  );
  assert.throws(() => parseBenchArgs(['--json', '--markdown']), /exclusive/);
  assert.throws(() => parseBenchArgs(['--bogus']), /Unknown option/);
  const some = parseBenchArgs(['--measures', 'prefill,single']);
  assert.ok(
    some !== 'help' &&
      some.measures.has('prefill') &&
      some.measures.has('single') &&
      !some.measures.has('aggregate'),
  );
  assert.throws(
    () => parseBenchArgs(['--measures', 'single,decode']),
    /--measures takes a comma-separated subset .* got 'decode'/,
  );
});
