/**
 * OpenTelemetry: an HTTP request with a W3C `traceparent` continues that trace through the
 * gateway (SERVER span), the engine call (CLIENT span `prism.generate` with model, token counts
 * and finish reason; queue / prefill / decode children) and into the gRPC metadata the engine
 * receives.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
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

test('traceparent is honoured and passed on to the engine', async () => {
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
  await new Promise((res) => setTimeout(res, 50));
  const spans = exporter.getFinishedSpans();
  const server = spans.find((s) => s.name === 'POST /v1/chat/completions');
  assert.ok(server, spans.map((s) => s.name).join(', '));
  assert.equal(server.spanContext().traceId, traceId);
  assert.equal(server.parentSpanContext?.spanId, parentId);
  assert.equal(server.attributes['http.response.status_code'], 200);

  const gen = spans.find((s) => s.name === 'prism.generate')!;
  assert.equal(gen.parentSpanContext?.spanId, server.spanContext().spanId);
  assert.equal(gen.attributes['gen_ai.request.model'], MODEL_NAME);
  assert.equal(gen.attributes['gen_ai.usage.output_tokens'], 3);
  assert.equal(gen.attributes['gen_ai.response.finish_reasons'], 'length');
  assert.ok((gen.attributes['gen_ai.usage.input_tokens'] as number) > 0);
  assert.ok(gen.events.some((e) => e.name === 'first_token'));

  for (const phase of ['prism.queue', 'prism.prefill', 'prism.decode']) {
    const s = spans.find((x) => x.name === phase);
    assert.ok(s, phase);
    assert.equal(s.parentSpanContext?.spanId, gen.spanContext().spanId);
    assert.equal(s.spanContext().traceId, traceId);
  }

  // The gRPC call to the engine carried the trace, with the engine call's span as parent.
  const md = sentToEngine.find((m) => m.traceparent);
  assert.ok(md);
  assert.equal(md.traceparent, `00-${traceId}-${gen.spanContext().spanId}-01`);
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
