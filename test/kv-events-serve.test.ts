/**
 * `prism serve --kv-events-endpoint`, end to end: a real `prism serve` process publishes on the
 * endpoint the flag names, under the default topic `kv@$POD_IP:<service port>@<model>`, and a
 * chat request over HTTP shows up as BlockStored events; a bad endpoint or a topic without an
 * endpoint is a usage error (exit 2) naming the flag.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run as runServe } from '../cli/serve.js';
import { projectRoot } from '../engine/default-model.js';
import { KvEventMirror } from './k8s/kv-event-mirror.js';

const root = projectRoot();
const main = join(root, 'cli', 'main.ts');

test('usage errors name the flag (exit 2)', async () => {
  for (const [args, message] of [
    [['--kv-events-endpoint', 'http://x:1'], /--kv-events-endpoint: must be tcp:\/\/HOST:PORT/],
    [['--kv-events-topic', 'kv@a@b'], /--kv-events-topic: needs --kv-events-endpoint/],
  ] as const) {
    let said = '';
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => ((said += String(chunk)), true)) as typeof write;
    try {
      assert.equal(await runServe([...args]), 2);
    } finally {
      process.stderr.write = write;
    }
    assert.match(said, message);
  }
});

test('prism serve publishes its KV-cache events under the default topic', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'prism-kv-serve-'));
  const endpoint = `ipc://${join(dir, 'kv.sock')}`;
  const port = 20000 + Math.floor(Math.random() * 20000);
  const mirror = new KvEventMirror(endpoint);
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      main,
      'serve',
      '--port',
      String(port),
      '--threads',
      '2',
      '--kv-events-endpoint',
      endpoint,
    ],
    { cwd: root, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, POD_IP: '10.1.2.3' } },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const deadline = Date.now() + 120_000;
    while (!stderr.includes('service listener on')) {
      assert.ok(Date.now() < deadline && child.exitCode === null, `prism serve did not start:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const r = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'SmolLM2-135M-Instruct.Q4_1',
        // About 200 prompt tokens: more than one block of 128.
        messages: [{ role: 'user', content: 'The quick brown fox jumps over the lazy dog. '.repeat(20) }],
        max_tokens: 8,
        temperature: 0,
      }),
    });
    assert.equal(r.status, 200);
    const until = Date.now() + 10_000;
    while (mirror.counts.stored === 0) {
      assert.ok(Date.now() < until, 'no BlockStored within 10 s of the answer');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.deepEqual([...mirror.topics], [`kv@10.1.2.3:${port}@SmolLM2-135M-Instruct.Q4_1`]);
    for (const b of mirror.blocks.values()) assert.equal(b.blockSize, 128);
  } finally {
    child.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
    await mirror.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
