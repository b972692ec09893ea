/**
 * The pooling routes of every family against the real server (engine behind its gRPC API,
 * gateways on free ports, as `prism serve` runs them) serving the real all-MiniLM-L6-v2 and a
 * cross-encoder fixture: the openai SDK's embeddings.create, Hugging Face's InferenceClient,
 * LangChain's OpenAIEmbeddings, Ollama's and Cohere's rerank client unmodified, each family's shape, the
 * refusals between generation and pooling, and every bad input a 4xx naming the field.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { ensureFixtures, type Fixture } from '../fixtures.js';
import { freePortConfig, getJson, postJson, startHarness, type Harness } from '../gateways-harness.js';
import { cosine, poolingReferences } from './reference.js';

const run = promisify(execFile);
let fixtures: Fixture[];
const path = (name: string): string => fixtures.find((f) => f.name === name)!.path;
let embed: Harness;
let rerank: Harness;

before(async () => {
  fixtures = ensureFixtures();
  embed = await startHarness(freePortConfig(), { modelPath: path('all-minilm-l6-v2'), modelName: 'minilm' });
  rerank = await startHarness(freePortConfig(), { modelPath: path('xlmr-cross'), modelName: 'reranker' });
});
after(async () => {
  await embed?.close();
  await rerank?.close();
});

const TEXTS = ['A man is playing a guitar.', 'The new film is awesome.', '東京の天気'];

test('openai SDK embeddings.create: base64 (its default) and float, batches, usage, the float reference', async () => {
  const [ref] = poolingReferences([{ kind: 'embed', model: path('all-minilm-l6-v2'), texts: TEXTS }]);
  const client = new OpenAI({ baseURL: `${embed.url}/v1`, apiKey: 'unused' });
  const r = await client.embeddings.create({ model: 'minilm', input: TEXTS });
  assert.equal(r.data.length, 3);
  assert.equal(r.model, 'minilm');
  assert.equal(
    r.usage.prompt_tokens,
    ref!.ids.reduce((a, x) => a + x.length, 0),
  );
  r.data.forEach((d, i) => {
    assert.equal(d.index, i);
    assert.equal(d.embedding.length, 384);
    assert.ok(cosine(d.embedding, ref!.embeddings![i]!) >= 0.999);
  });
  const f = await client.embeddings.create({
    model: 'minilm',
    input: 'A man is playing a guitar.',
    encoding_format: 'float',
  });
  assert.ok(cosine(f.data[0]!.embedding, r.data[0]!.embedding) > 0.999999);
  const ids = await client.embeddings.create({
    model: 'minilm',
    input: [ref!.ids[0]!],
    encoding_format: 'float',
  });
  assert.ok(
    cosine(ids.data[0]!.embedding, ref!.embeddings![0]!) >= 0.999,
    'token-id input, special tokens as given',
  );
});

test('bad input: 400 naming the field, never a 5xx', async () => {
  const url = `${embed.url}/v1/embeddings`;
  const cases: [unknown, string][] = [
    [{ input: [] }, 'input'],
    [{ input: '' }, 'input[0]'],
    [{ input: Array.from({ length: 1_000_000 }, () => 'x') }, 'input'],
    [{ input: [[101, 40000, 102]] }, 'input[0][1]'],
    [{ input: 'a', dimensions: 1000 }, 'dimensions'],
    [{ input: 'a', encoding_format: 'int8' }, 'encoding_format'],
    [{ input: 'a', model: 'other-model' }, 'model'],
    // vLLM's priority reaches the engine (over gRPC): refused on an engine that schedules first come, first served.
    [{ input: 'a', priority: 3 }, 'priority'],
    [{ input: 'a', priority: 0.5 }, 'priority'],
  ];
  for (const [body, field] of cases) {
    const r = await postJson(url, body);
    assert.ok(
      r.status === 400 || r.status === 404,
      `${JSON.stringify(body).slice(0, 80)}: ${r.status} ${r.text.slice(0, 200)}`,
    );
    assert.equal(r.json.error.param, field, r.text.slice(0, 200));
  }
  const chat = await postJson(`${embed.url}/v1/chat/completions`, {
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(chat.status, 400);
  assert.equal(chat.json.error.param, 'model');
  assert.match(chat.json.error.message, /pooling model/);
});

test('TEI: /embed, /embed_all, /info; InferenceClient.feature_extraction, LangChain, Ollama /api/embed, Cohere rerank', async () => {
  const e = await postJson(`${embed.url}/embed`, { inputs: ['hello world', 'hi'] });
  assert.equal(e.status, 200);
  assert.equal(e.json.length, 2);
  assert.equal(e.json[0].length, 384);
  const all = await postJson(`${embed.url}/embed_all`, { inputs: 'hello world' });
  assert.deepEqual([all.json.length, all.json[0].length, all.json[0][0].length], [1, 4, 384]);
  const info = await getJson(`${embed.url}/info`);
  assert.deepEqual(info.json.model_type, { embedding: { pooling: 'mean' } });
  assert.equal(info.json.max_input_length, 256);
  const tooLong = await postJson(`${embed.url}/embed`, { inputs: 'word '.repeat(400) });
  assert.equal(tooLong.status, 422);
  assert.equal(tooLong.json.error_type, 'validation');

  const { stdout } = await run('python3', ['test/clients/pooling_clients.py', embed.url, rerank.url], {
    timeout: 240000,
  });
  const r = JSON.parse(stdout);
  assert.deepEqual(r.hf.one_shape, [1, 384], 'TEI answers [[...]] for one input, as the client expects');
  assert.deepEqual(r.hf.two_shape, [2, 384]);
  assert.ok(cosine(r.hf.one, e.json[0]) < 0.99, 'a different text');
  assert.equal(r.langchain.documents.length, 2);
  assert.ok(
    cosine(r.langchain.query, r.langchain.documents[0]) > cosine(r.langchain.query, r.langchain.documents[1]),
  );
  assert.equal(r.ollama.embeddings.length, 2);
  assert.ok(
    cosine(r.ollama.embeddings[0], r.langchain.documents[0]) > 0.999999,
    'the same text, the same vector',
  );
  const legacy = await postJson(`${embed.url}/api/embeddings`, {
    model: 'minilm',
    prompt: 'A man is playing a guitar.',
  });
  assert.ok(cosine(legacy.json.embedding, r.ollama.embeddings[0]) > 0.999999);
  const show = await postJson(`${embed.url}/api/show`, { model: 'minilm' });
  assert.equal(show.status, 200, show.text);
  assert.deepEqual(show.json.capabilities, ['embedding']);
  assert.equal(r.cohere.results.length, 2);
  const scores = await postJson(`${rerank.url}/score`, {
    text_1: 'What is the capital of France?',
    text_2: ['Berlin is the capital of Germany.', 'Paris is the capital of France.', 'The sky is blue.'],
  });
  const best = scores.json.data.map((d: { score: number }) => d.score);
  const order = [0, 1, 2].sort((a, b) => best[b] - best[a]);
  assert.deepEqual(
    r.cohere.results.map((x: { index: number }) => x.index),
    order.slice(0, 2),
  );
  r.cohere.results.forEach((x: { index: number; relevance_score: number }) =>
    assert.ok(Math.abs(x.relevance_score - best[x.index]) < 1e-6),
  );
});

test('reranking routes agree: vLLM /rerank, TEI /rerank, llama.cpp /reranking; /predict', async () => {
  const query = 'What is the capital of France?';
  const docs = ['Berlin is the capital of Germany.', 'Paris is the capital of France.'];
  const v = await postJson(`${rerank.url}/rerank`, { query, documents: docs });
  const t = await postJson(`${rerank.url}/rerank`, { query, texts: docs, return_text: true });
  const l = await postJson(`${rerank.url}/reranking`, { query, documents: docs, top_n: 1 });
  assert.equal(v.status, 200, v.text);
  assert.equal(t.status, 200, t.text);
  assert.equal(v.json.results.length, 2);
  assert.equal(l.json.results.length, 1);
  assert.equal(t.json[0].index, v.json.results[0].index);
  assert.equal(t.json[0].text, docs[t.json[0].index]);
  assert.ok(Math.abs(t.json[0].score - v.json.results[0].relevance_score) < 1e-6);
  const p = await postJson(`${rerank.url}/predict`, { inputs: [query, docs[1]] });
  assert.equal(p.status, 200, p.text);
  assert.equal(p.json[0].label, 'LABEL_0');
  const bad = await postJson(`${rerank.url}/rerank`, { query, documents: [] });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'documents');
  const notEmbedder = await postJson(`${rerank.url}/v1/embeddings`, { input: 'a' });
  assert.equal(notEmbedder.status, 400);
  assert.equal(notEmbedder.json.error.param, 'task');
});

test('vLLM /pooling, llama.cpp /embedding, KServe v2 infer: the same vectors; metrics count pooling apart', async () => {
  const ref = await postJson(`${embed.url}/v1/embeddings`, {
    input: 'hello world',
    encoding_format: 'float',
  });
  const v = ref.json.data[0].embedding as number[];
  const pooled = await postJson(`${embed.url}/pooling`, { input: 'hello world' });
  assert.equal(pooled.json.data[0].object, 'pooling');
  assert.ok(cosine(pooled.json.data[0].data, v) > 0.999999);
  const ll = await postJson(`${embed.url}/embedding`, { content: 'hello world' });
  assert.ok(cosine(ll.json[0].embedding[0], v) > 0.999999);
  const k = await postJson(`${embed.url}/v2/models/minilm/infer`, {
    inputs: [{ name: 'text', shape: [2], datatype: 'BYTES', data: ['hello world', 'hi'] }],
  });
  assert.equal(k.status, 200, k.text);
  assert.deepEqual(k.json.outputs[0].shape, [2, 384]);
  assert.equal(k.json.outputs[0].datatype, 'FP32');
  assert.ok(cosine(k.json.outputs[0].data.slice(0, 384), v) > 0.999999);
  // The request id has the bound a generation model's infer has.
  const badId = await postJson(`${embed.url}/v2/models/minilm/infer`, {
    id: 'bad id!',
    inputs: [{ name: 'text', shape: [1], datatype: 'BYTES', data: ['hi'] }],
  });
  assert.equal(badId.status, 422, badId.text);
  assert.match(badId.json.error, /\bid\b/);
  const metrics = await (await fetch(`${embed.metricsUrl}/metrics`)).text();
  const count = Number(/^prism:pooling_request_success_total\{[^}]*\} (\d+)/m.exec(metrics)?.[1]);
  assert.ok(count >= 4, metrics.slice(0, 300));
  assert.match(metrics, /^request_success_total\{[^}]*\} 0$/m, 'generation counters untouched');
});
