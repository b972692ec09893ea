import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ensureDefaultModel } from '../engine/default-model.js';
import { help, parseGenerateArgs } from './generate.js';

const root = fileURLToPath(new URL('..', import.meta.url));

function prism(...args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'generate', ...args], {
    cwd: root,
    encoding: 'utf8',
    input: '',
    timeout: 240_000,
  });
}

test('--help documents every flag', () => {
  const r = prism('--help');
  assert.equal(r.status, 0);
  for (const flag of [
    '--model',
    '--prompt',
    '--chat',
    '--max-tokens',
    '--temperature',
    '--top-p',
    '--top-k',
    '--seed',
    '--stats',
    '--help',
  ]) {
    assert.ok(r.stdout.includes(flag), flag);
    assert.ok(help.includes(flag));
  }
});

test('bad flags: a clear error and exit 2', () => {
  for (const [args, pattern] of [
    [['--bogus'], /Unknown option '--bogus'/],
    [['--prompt', 'x', '--max-tokens', 'many'], /--max-tokens: must be an integer >= 1, got 'many'/],
    [['--prompt', 'x', '--top-p', '1.5'], /--top-p: must be a number in \(0, 1\]/],
    [['--prompt', 'x', '--temperature', '-1'], /--temperature/],
    [['--prompt'], /argument missing/],
  ] as const) {
    const r = prism(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, pattern);
  }
});

test('argument parsing defaults', () => {
  const a = parseGenerateArgs(['--prompt', 'hi', '--chat', '--seed', '5']);
  assert.deepEqual(a, {
    model: undefined,
    prompt: 'hi',
    chat: true,
    maxTokens: 256,
    temperature: 0,
    topP: undefined,
    topK: undefined,
    seed: 5,
    stats: false,
  });
});

test('generates with the default model, streams text and prints --stats', () => {
  const model = ensureDefaultModel();
  const r = prism('--model', model, '--prompt', 'The capital of France is', '--max-tokens', '12', '--stats');
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.stdout.trim().length > 0, 'some text on stdout');
  assert.match(r.stderr, /load: \d+ ms/);
  assert.match(r.stderr, /prefill [\d.]+ tok\/s/);
  assert.match(r.stderr, /decode [\d.]+ tok\/s/);
  const chat = prism(
    '--chat',
    '--prompt',
    'Say hello.',
    '--max-tokens',
    '8',
    '--temperature',
    '0.7',
    '--seed',
    '3',
  );
  assert.equal(chat.status, 0, chat.stderr);
  const again = prism(
    '--chat',
    '--prompt',
    'Say hello.',
    '--max-tokens',
    '8',
    '--temperature',
    '0.7',
    '--seed',
    '3',
  );
  assert.equal(again.stdout, chat.stdout, 'same seed, same text');
});
