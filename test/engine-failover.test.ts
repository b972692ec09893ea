/**
 * `prism gateway --engine A,B` when engine A dies: two real `prism engine` processes behind
 * the gateway's engine pool. SIGKILL of A mid-stream gives A's client a clean error event
 * (never a hang), B's stream finishes, new requests go to B at once, and A — restarted on the
 * same address — rejoins once its backoff has passed.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { GrpcEngineClient } from '../engine/service/client.js';
import { EnginePool } from '../gateways/engine-pool.js';
import { startGateway, type RunningGateway } from '../gateways/server.js';
import { freePortConfig, postJson } from './gateways-harness.js';

const dir = mkdtempSync(join(tmpdir(), 'prism-failover-'));
const address = (name: string): string => `unix:${join(dir, `${name}.sock`)}`;
const children = new Map<string, ChildProcess>();
let clients: GrpcEngineClient[];
let pool: EnginePool;
let gateway: RunningGateway;
let model: string;

function startEngine(name: string): ChildProcess {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'cli/main.ts', 'engine', '--listen', address(name), '--threads', '1'],
    { stdio: 'ignore' },
  );
  children.set(name, child);
  return child;
}

async function ready(client: GrpcEngineClient, ms = 180_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      await client.info();
      return;
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

before(async () => {
  startEngine('a');
  startEngine('b');
  clients = [new GrpcEngineClient(address('a')), new GrpcEngineClient(address('b'))];
  await Promise.all(clients.map((c) => ready(c)));
  pool = new EnginePool(clients);
  gateway = await startGateway({ engine: pool, config: freePortConfig() });
  model = (await pool.info()).modelName;
});

after(async () => {
  await gateway?.close();
  for (const c of clients ?? []) await c.close();
  for (const child of children.values()) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** Reads an SSE stream to its end; resolves with its text. */
async function readAll(res: Response, onFirst: () => void): Promise<string> {
  let text = '';
  let first = true;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    text += Buffer.from(chunk).toString('utf-8');
    if (first) {
      first = false;
      onFirst();
    }
  }
  return text;
}

test('engine A killed mid-stream: clean error for its client, B serves, A rejoins after backoff', async (t) => {
  const url = gateway.url('service');
  const stream = (): Promise<Response> =>
    fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        prompt: 'Once upon a time',
        max_tokens: 120,
        stream: true,
        ignore_eos: true,
      }),
    });
  const [r1, r2] = await Promise.all([stream(), stream()]);
  let started = 0;
  let bothStarted!: () => void;
  const both = new Promise<void>((r) => (bothStarted = r));
  const onFirst = (): void => {
    if (++started === 2) bothStarted();
  };
  const texts = Promise.all([readAll(r1, onFirst), readAll(r2, onFirst)]);
  await both;
  const running = await Promise.all(clients.map(async (c) => (await c.status()).running));
  assert.deepEqual(running, [1, 1], 'one stream on each engine');

  const killedAt = Date.now();
  children.get('a')!.kill('SIGKILL');
  const [s1, s2] = await texts;
  const endedIn = Date.now() - killedAt;
  t.diagnostic(`streams ended ${endedIn} ms after the kill`);
  const outcomes = [s1, s2].map((s) =>
    s.includes('data: [DONE]') && !s.includes('"error"') ? 'done' : 'error',
  );
  assert.deepEqual([...outcomes].sort(), ['done', 'error'], `${s1.slice(-300)}\n---\n${s2.slice(-300)}`);
  const failed = outcomes[0] === 'error' ? s1 : s2;
  assert.match(failed, /data: \{"error":\{"message":"[^"]+","type":"[^"]+"/, 'an OpenAI error event');

  // New requests go to B at once.
  for (let i = 0; i < 3; i++) {
    const t0 = Date.now();
    const r = await postJson(`${url}/v1/completions`, { model, prompt: 'Hi', max_tokens: 2 });
    assert.equal(r.status, 200, r.text);
    assert.ok(Date.now() - t0 < 5000, `request ${i} took ${Date.now() - t0} ms`);
  }
  assert.equal(pool.upCount, 1);

  // A returns on the same address; after its backoff the pool tries it again and it rejoins.
  startEngine('a');
  await ready(clients[0]);
  const until = Date.now() + 60000;
  let rejoinedAfter = -1;
  while (Date.now() < until) {
    await Promise.all(
      [0, 1].map(() => postJson(`${url}/v1/completions`, { model, prompt: 'Hi', max_tokens: 2 })),
    );
    if ((await clients[0].status()).requestsReceived > 0) {
      rejoinedAfter = Date.now() - killedAt;
      break;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  t.diagnostic(`A rejoined ${rejoinedAfter} ms after the kill`);
  assert.ok(rejoinedAfter > 0, 'engine A never received a request after it came back');
  assert.equal(pool.upCount, 2);
});
