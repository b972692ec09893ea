/**
 * `prism engine` as a user runs it: --help, argument and config errors (exit 2 with a
 * message naming the problem), and a real start on a unix socket that stops cleanly (exit 0)
 * on SIGTERM after answering a request.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ensureDefaultModel } from '../engine/default-model.js';
import { connectEngine } from '../engine/service/client.js';
import { loadConfig } from '../config/load.js';
import { engineOptionsFromArgs, parseEngineArgs } from './engine.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = mkdtempSync(join(tmpdir(), 'prism-cli-engine-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function prism(...args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', join(root, 'cli', 'main.ts'), 'engine', ...args], {
    cwd: root,
    encoding: 'utf8',
  });
}

test('--help documents every flag', () => {
  const r = prism('--help');
  assert.equal(r.status, 0);
  for (const flag of [
    '--model',
    '--config',
    '--listen',
    '--threads',
    '--scheduling-policy',
    'SIGTERM',
    'unix:PATH',
  ])
    assert.match(r.stdout, new RegExp(flag));
});

test('argument errors exit 2 naming the flag and the rule', () => {
  assert.throws(
    () => parseEngineArgs(['--listen', 'nowhere']),
    /--listen: must be HOST:PORT, \[IPv6\]:PORT or unix:PATH, got 'nowhere'/,
  );
  assert.throws(
    () => parseEngineArgs(['--listen', '127.0.0.1:70000']),
    /--listen: port must be in \[0, 65535\]/,
  );
  assert.throws(() => parseEngineArgs(['--listen', 'unix:']), /unix socket path is empty/);
  assert.throws(() => parseEngineArgs(['--threads', '0']), /--threads: must be an integer in \[1, 1024\]/);
  assert.throws(() => parseEngineArgs(['--bogus']), /Unknown option '--bogus'/);
  assert.throws(
    () => parseEngineArgs(['--scheduling-policy', 'lifo']),
    /--scheduling-policy: must be one of fcfs, priority, got 'lifo'/,
  );
  assert.equal(parseEngineArgs(['--scheduling-policy', 'priority']).schedulingPolicy, 'priority');
  assert.deepEqual(parseEngineArgs(['--listen', '[::1]:0']), {
    model: undefined,
    config: undefined,
    listen: '[::1]:0',
  });
  const r = prism('--listen', 'nowhere');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /prism engine: --listen: must be HOST:PORT/);
});

test('an invalid config file exits 2 listing each problem', () => {
  const bad = join(dir, 'bad.json');
  writeFileSync(
    bad,
    JSON.stringify({ BackendConfig: { ScheduleConfig: { cacheBlockSize: 256, maxBatchSzie: 1 } } }),
  );
  const r = prism('--config', bad);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /BackendConfig\.ScheduleConfig\.cacheBlockSize: must be <= 128, got 256/);
  assert.match(r.stderr, /BackendConfig\.ScheduleConfig\.maxBatchSzie: unknown field/);
});

test('serves on a unix socket with a config file, then stops cleanly on SIGTERM', async () => {
  const model = ensureDefaultModel();
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      BackendConfig: {
        ModelDeployConfig: {
          maxSeqLen: 1024,
          maxInputTokenLen: 512,
          ModelConfig: [{ modelName: 'tiny-chat', modelWeightPath: model, npuMemSize: 1 }],
        },
        ScheduleConfig: {
          cacheBlockSize: 32,
          maxBatchSize: 8,
          maxPrefillBatchSize: 8,
          maxN: 8,
          maxPrefillTokens: 1024,
          maxIterTimes: 256,
          enablePrefixCache: true,
        },
      },
    }),
  );
  const socket = join(dir, 'engine.sock');
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(root, 'cli', 'main.ts'),
      'engine',
      '--config',
      config,
      '--listen',
      `unix:${socket}`,
    ],
    {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const deadline = Date.now() + 120_000;
    while (!stderr.includes('serving')) {
      assert.ok(Date.now() < deadline && child.exitCode === null, `engine did not start:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(stderr, /enablePrefixCache is deprecated and ignored/);
    const client = connectEngine(`unix:${socket}`);
    const info = await client.info();
    assert.equal(info.modelName, 'tiny-chat');
    assert.equal(info.blockSize, 32);
    assert.equal(info.maxBatchSize, 8);
    assert.equal(info.prefixCache, false, 'a config file without plugin_params has the prefix cache off');
    let text = '';
    for await (const e of client.generate({
      prompt: { kind: 'text', text: 'Hello' },
      params: { temperature: 0, maxNewTokens: 3, ignoreEos: true },
    })) {
      if (e.type === 'finish') text = e.text;
    }
    assert.ok(text.length > 0);
    await client.close();
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
    assert.match(stderr, /SIGTERM: draining/);
    assert.match(stderr, /stopped/);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});

test('every flag reaches the engine options: --task, --matryoshka-dimensions, --mmproj', () => {
  const args = parseEngineArgs([
    '--task',
    'embed',
    '--matryoshka-dimensions',
    '128,64',
    '--mmproj',
    '/models/mmproj-SmolVLM-256M.gguf',
  ]);
  const o = engineOptionsFromArgs(args, loadConfig(undefined));
  assert.deepEqual(o.pooling, { task: 'embed', matryoshkaDimensions: [64, 128] });
  assert.equal(o.mmproj, '/models/mmproj-SmolVLM-256M.gguf');
  assert.throws(() => parseEngineArgs(['--mmproj', '']), /--mmproj: must not be empty/);
});
