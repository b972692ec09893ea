/**
 * `prism gateway --engine A,B`: the engine pool spreads requests over two real engines (each
 * behind its own gRPC server) and skips an engine that has gone away.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ensureDefaultModel } from '../engine/default-model.js';
import { loadEngine } from '../engine/load-engine.js';
import { GrpcEngineClient } from '../engine/service/client.js';
import { startEngineServer, type RunningEngineServer } from '../engine/service/server.js';
import { EnginePool } from '../gateways/engine-pool.js';
import { startGateway, type RunningGateway } from '../gateways/server.js';
import { freePortConfig, MODEL_NAME, postJson } from './gateways-harness.js';

const dir = mkdtempSync(join(tmpdir(), 'prism-pool-'));
const servers: RunningEngineServer[] = [];
const clients: GrpcEngineClient[] = [];
let gateway: RunningGateway;

before(async () => {
  for (const name of ['a', 'b']) {
    const engine = await loadEngine(ensureDefaultModel(), {
      modelName: MODEL_NAME,
      maxSeqLen: 512,
      kvCacheBytes: 32 << 20,
      maxBatchSize: 8,
      threads: 1,
    });
    const server = await startEngineServer(engine, {
      listen: `unix:${join(dir, `${name}.sock`)}`,
      log: () => {},
    });
    servers.push(server);
    clients.push(new GrpcEngineClient(server.address));
  }
  gateway = await startGateway({ engine: new EnginePool(clients), config: freePortConfig() });
});

after(async () => {
  await gateway?.close();
  for (const c of clients) await c.close();
  for (const s of servers) await s.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

test('concurrent requests are spread over the engines', async () => {
  const url = gateway.url('service');
  const answers = await Promise.all(
    Array.from({ length: 4 }, (_, i) =>
      postJson(`${url}/v1/completions`, { prompt: `Story number ${i}:`, max_tokens: 3, temperature: 0 }),
    ),
  );
  assert.ok(answers.every((a) => a.status === 200));
  const received = await Promise.all(clients.map(async (c) => (await c.status()).requestsReceived));
  assert.ok(
    received.every((n) => n >= 1),
    `requests per engine: ${received.join(', ')}`,
  );
  const metrics = await (await fetch(`${gateway.url('metrics')}/metrics`)).text();
  const total = Number(/^request_received_total\{[^}]*\} (\d+)/m.exec(metrics)![1]);
  assert.equal(
    total,
    received.reduce((a, b) => a + b, 0),
  );
});

test('an engine that went away is skipped', async () => {
  await servers[0].shutdown();
  const url = gateway.url('service');
  for (let i = 0; i < 3; i++) {
    const r = await postJson(`${url}/generate`, { inputs: 'Hello', parameters: { max_new_tokens: 2 } });
    assert.equal(r.status, 200, r.text);
  }
});
