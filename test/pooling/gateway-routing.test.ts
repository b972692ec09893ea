/**
 * One gateway over engines of different models (`prism gateway --engine A,B`): an embedder and
 * a generation model, each behind its real gRPC server, routed by the model a request names;
 * each refuses the other's kind of request with a 400 naming the model.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadServedEngine } from '../../engine/load-engine.js';
import { GrpcEngineClient } from '../../engine/service/client.js';
import { startEngineServer, type RunningEngineServer } from '../../engine/service/server.js';
import { EnginePool } from '../../gateways/engine-pool.js';
import { startGateway, type RunningGateway } from '../../gateways/server.js';
import { fixture } from '../fixtures.js';
import { freePortConfig, getJson, postJson } from '../gateways-harness.js';

const dir = mkdtempSync(join(tmpdir(), 'prism-routing-'));
const servers: RunningEngineServer[] = [];
const pools: EnginePool[] = [];
let gateway: RunningGateway;
let url: string;

async function engineAt(path: string, name: string): Promise<EnginePool> {
  const { engine } = await loadServedEngine(path, {
    modelName: name,
    threads: 2,
    kvCacheBytes: 16 << 20,
    maxSeqLen: 512,
  });
  const server = await startEngineServer(engine, {
    listen: `unix:${join(dir, `${name}.sock`)}`,
    log: () => {},
  });
  servers.push(server);
  const pool = new EnginePool([new GrpcEngineClient(server.address)]);
  pools.push(pool);
  return pool;
}

before(async () => {
  const embedder = await engineAt(fixture('all-minilm-l6-v2').path, 'minilm');
  const generator = await engineAt(fixture('llama-q4_0').path, 'llama');
  gateway = await startGateway({ engine: generator, otherModels: [embedder], config: freePortConfig() });
  url = gateway.url('service');
});
after(async () => {
  await gateway?.close();
  await Promise.all(pools.map((p) => p.close()));
  await Promise.all(servers.map((s) => s.shutdown()));
  rmSync(dir, { recursive: true, force: true });
});

test('requests go to the model they name; each model refuses the other kind; /v1/models lists both', async () => {
  const e = await postJson(`${url}/v1/embeddings`, { model: 'minilm', input: 'hello world' });
  assert.equal(e.status, 200, e.text);
  assert.equal(e.json.data[0].embedding.length, 384);
  const c = await postJson(`${url}/v1/completions`, {
    model: 'llama',
    prompt: 'Hello',
    max_tokens: 2,
    temperature: 0,
  });
  assert.equal(c.status, 200, c.text);
  assert.equal(c.json.model, 'llama');
  const none = await postJson(`${url}/v1/completions`, { prompt: 'Hello', max_tokens: 1 });
  assert.equal(none.status, 200, 'no model named: the first engine group (the generation model)');

  const wrongKind = await postJson(`${url}/v1/embeddings`, { model: 'llama', input: 'hello' });
  assert.equal(wrongKind.status, 400);
  assert.equal(wrongKind.json.error.param, 'model');
  assert.match(wrongKind.json.error.message, /text-generation model/);
  const wrongKind2 = await postJson(`${url}/v1/chat/completions`, {
    model: 'minilm',
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(wrongKind2.status, 400);
  assert.match(wrongKind2.json.error.message, /pooling model/);

  const unknown = await postJson(`${url}/v1/embeddings`, { model: 'nobody', input: 'hello' });
  assert.equal(unknown.status, 404);
  const models = await getJson(`${url}/v1/models`);
  assert.deepEqual(models.json.data.map((m: { id: string }) => m.id).sort(), ['llama', 'minilm']);
  const k = await postJson(`${url}/v2/models/minilm/infer`, {
    inputs: [{ name: 't', shape: [1], datatype: 'BYTES', data: ['hi'] }],
  });
  assert.equal(k.status, 200, k.text);
  assert.deepEqual(k.json.outputs[0].shape, [1, 384]);
});
