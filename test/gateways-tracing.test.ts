/**
 * OpenTelemetry: an HTTP request with a W3C `traceparent` continues that trace through the
 * gateway (SERVER span), the engine call (CLIENT span `prism.generate` with model, token counts
 * and finish reason), the gRPC metadata into the engine (its RPC SERVER span), and the
 * `prism.queue` / `prism.prefill` / `prism.decode` spans the engine records live under that.
 * Gateway and engine share this process's provider, as in `prism serve`: each span once.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { initTracing, traceMetadata } from '../gateways/shared/tracing.js';
import { MODEL_NAME, postJson, startHarness, type Harness } from './gateways-harness.js';

const exporter = new InMemorySpanExporter();
const sentToEngine: Record<string, string>[] = [];
let h: Harness;

before(async () => {
  initTracing({ serviceName: 'prism-test', spanProcessors: [new SimpleSpanProcessor(exporter)] });
  h = await startHarness(undefined, {
    metadata: () => {
      const md = traceMetadata();
      sentToEngine.push(md);
      return md;
    },
  });
});
after(async () => {
  await h?.close();
});

const ms = (t: [number, number]) => t[0] * 1e3 + t[1] / 1e6;

/** The finished spans of one trace, once `names` are all there (spans end after the response). */
async function traceSpans(traceId: string, names: readonly string[]): Promise<ReadableSpan[]> {
  const until = Date.now() + 5000;
  for (;;) {
    const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    if (names.every((n) => spans.some((s) => s.name === n)) || Date.now() > until) return spans;
    await new Promise((res) => setTimeout(res, 20));
  }
}

function one(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  assert.equal(found.length, 1, `${name} once in: ${spans.map((s) => s.name).join(', ')}`);
  return found[0];
}

/**
 * HTTP SERVER → prism.generate CLIENT → engine RPC SERVER → queue, prefill, decode (in time
 * order, back to back, with their attributes); the gRPC metadata carried the CLIENT span.
 */
async function checkChain(traceId: string, parentId: string, rpc: string, completionTokens: number) {
  const phases = ['prism.queue', 'prism.prefill', 'prism.decode'];
  const spans = await traceSpans(traceId, ['POST /v1/chat/completions', 'prism.generate', rpc, ...phases]);
  const server = one(spans, 'POST /v1/chat/completions');
  assert.equal(server.kind, SpanKind.SERVER);
  assert.equal(server.parentSpanContext?.spanId, parentId);
  assert.equal(server.attributes['http.response.status_code'], 200);

  const gen = one(spans, 'prism.generate');
  assert.equal(gen.kind, SpanKind.CLIENT);
  assert.equal(gen.parentSpanContext?.spanId, server.spanContext().spanId);
  assert.equal(gen.attributes['gen_ai.request.model'], MODEL_NAME);
  assert.equal(gen.attributes['gen_ai.usage.output_tokens'], completionTokens);
  assert.equal(gen.attributes['gen_ai.response.finish_reasons'], 'length');
  assert.ok((gen.attributes['gen_ai.usage.input_tokens'] as number) > 0);
  assert.ok(gen.events.some((e) => e.name === 'first_token'));
  const requestId = gen.attributes['prism.request_id'];
  assert.ok(typeof requestId === 'string' && requestId.length > 0);

  const engine = one(spans, rpc);
  assert.equal(engine.kind, SpanKind.SERVER);
  assert.equal(engine.parentSpanContext?.spanId, gen.spanContext().spanId);
  assert.equal(engine.attributes['prism.request_id'], requestId);

  const [queue, prefill, decode] = phases.map((name) => one(spans, name));
  for (const s of [queue, prefill, decode]) {
    assert.equal(s.parentSpanContext?.spanId, engine.spanContext().spanId, s.name);
    assert.equal(s.attributes['prism.request_id'], requestId);
    assert.equal(s.attributes['gen_ai.request.model'], MODEL_NAME);
    assert.ok(ms(s.endTime) >= ms(s.startTime), s.name);
  }
  // In time order and not overlapping: each phase starts where the previous one ended.
  assert.ok(Math.abs(ms(queue.endTime) - ms(prefill.startTime)) < 0.01);
  assert.ok(Math.abs(ms(prefill.endTime) - ms(decode.startTime)) < 0.01);
  // Within the engine's RPC span (1 ms slack: the two anchor to the wall clock separately).
  assert.ok(ms(queue.startTime) >= ms(engine.startTime) - 1);
  assert.ok(ms(decode.endTime) <= ms(engine.endTime) + 1);
  assert.equal(prefill.attributes['gen_ai.usage.input_tokens'], gen.attributes['gen_ai.usage.input_tokens']);
  assert.equal(typeof prefill.attributes['prism.cached_prompt_tokens'], 'number');
  assert.ok((prefill.attributes['prism.prefill_chunks'] as number) >= 1);
  assert.equal(decode.attributes['gen_ai.usage.output_tokens'], completionTokens);
  assert.deepEqual(decode.attributes['gen_ai.response.finish_reasons'], ['length']);

  // The gRPC call to the engine carried the trace, with the engine call's span as parent.
  assert.ok(sentToEngine.some((m) => m.traceparent === `00-${traceId}-${gen.spanContext().spanId}-01`));
}

test('non-streamed chat: traceparent honoured, the engine records its phases under its RPC span', async () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const parentId = '00f067aa0ba902b7';
  exporter.reset();
  sentToEngine.length = 0;
  const r = await postJson(
    `${h.url}/v1/chat/completions`,
    { model: MODEL_NAME, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3, temperature: 0 },
    { traceparent: `00-${traceId}-${parentId}-01` },
  );
  assert.equal(r.status, 200);
  await checkChain(traceId, parentId, 'prism.engine.v1.Engine/GenerateStream', 3);
});

test('streamed chat: the same chain', async () => {
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  const parentId = 'b7ad6b7169203331';
  exporter.reset();
  sentToEngine.length = 0;
  const r = await postJson(
    `${h.url}/v1/chat/completions`,
    {
      model: MODEL_NAME,
      messages: [{ role: 'user', content: 'Hello there' }],
      max_tokens: 4,
      temperature: 0,
      stream: true,
    },
    { traceparent: `00-${traceId}-${parentId}-01` },
  );
  assert.equal(r.status, 200);
  assert.match(r.text, /data: \[DONE\]/);
  await checkChain(traceId, parentId, 'prism.engine.v1.Engine/GenerateStream', 4);
});

test('a client that disconnects mid-stream: the engine ends its open phase span as cancelled', async () => {
  const traceId = '5c2d1a8e7f3b4a6990a1b2c3d4e5f607';
  exporter.reset();
  const ac = new AbortController();
  const res = await fetch(`${h.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-1111111111111111-01` },
    body: JSON.stringify({
      model: MODEL_NAME,
      messages: [{ role: 'user', content: 'Tell me a long story' }],
      max_tokens: 500,
      temperature: 0,
      ignore_eos: true,
      stream: true,
    }),
    signal: ac.signal,
  });
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  // Read until a content delta arrived (the engine is decoding), then hang up.
  let seen = '';
  while (!/"content":"[^"]/.test(seen)) {
    const { value, done } = await reader.read();
    assert.equal(done, false, 'stream ended before any content');
    seen += new TextDecoder().decode(value);
  }
  ac.abort();
  await reader.cancel().catch(() => {});
  const spans = await traceSpans(traceId, ['prism.engine.v1.Engine/GenerateStream', 'prism.decode']);
  const decode = one(spans, 'prism.decode');
  assert.equal(decode.attributes['prism.cancelled'], true);
  assert.deepEqual(decode.attributes['gen_ai.response.finish_reasons'], ['cancelled']);
  assert.ok((decode.attributes['gen_ai.usage.output_tokens'] as number) < 500);
  assert.equal(one(spans, 'prism.queue').attributes['prism.cancelled'], undefined);
});

test('without traceparent a new trace starts at the HTTP request', async () => {
  exporter.reset();
  const r = await postJson(`${h.url}/generate`, { inputs: 'Hi', parameters: { max_new_tokens: 1 } });
  assert.equal(r.status, 200);
  await new Promise((res) => setTimeout(res, 50));
  const server = exporter.getFinishedSpans().find((s) => s.name === 'POST /generate')!;
  assert.equal(server.parentSpanContext, undefined);
  const gen = exporter.getFinishedSpans().find((s) => s.name === 'prism.generate')!;
  assert.equal(gen.spanContext().traceId, server.spanContext().traceId);
});
