/**
 * Without OTEL_EXPORTER_OTLP_ENDPOINT tracing is off (no tracer provider, nothing recorded),
 * yet a client's `traceparent` still reaches the engine in the gRPC metadata.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { trace } from '@opentelemetry/api';
import { initTracing, traceMetadata } from '../gateways/shared/tracing.js';
import { MODEL_NAME, postJson, startHarness, type Harness } from './gateways-harness.js';

const sentToEngine: Record<string, string>[] = [];
let h: Harness;

before(async () => {
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  assert.equal(initTracing(), undefined);
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

test('no spans are recorded, the client trace context is passed through', async () => {
  assert.equal(trace.getTracer('x').startSpan('probe').isRecording(), false);
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  const parentId = 'b7ad6b7169203331';
  const r = await postJson(
    `${h.url}/v1/completions`,
    { model: MODEL_NAME, prompt: 'Hi', max_tokens: 1 },
    { traceparent: `00-${traceId}-${parentId}-01` },
  );
  assert.equal(r.status, 200);
  assert.ok(sentToEngine.some((m) => m.traceparent === `00-${traceId}-${parentId}-01`));
});
