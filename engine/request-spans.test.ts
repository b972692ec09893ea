/**
 * The engine core records `prism.queue`, `prism.prefill` and `prism.decode` live, as children
 * of the span active when the request was submitted (the RPC SERVER span in production), and
 * ends the open one when a request is cancelled or fails. Runs the real EngineCore over the
 * paged-KV simulator with an in-memory exporter.
 */
import assert from 'node:assert/strict';
import { before, beforeEach, test } from 'node:test';
import { context, ROOT_CONTEXT, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { EngineCore } from './engine-core.js';
import { EngineError } from './errors.js';
import { resolveEngineOptions, type EngineOptions } from './options.js';
import { CharTokenizer } from './testing/char-tokenizer.js';
import { PagedKvSim } from './testing/paged-kv-sim.js';
import type { EngineInfo, FinishEvent, GenerateEvent, GenerateRequest } from './types.js';

const exporter = new InMemorySpanExporter();
const PHASES = ['prism.queue', 'prism.prefill', 'prism.decode'];

before(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
  );
});
beforeEach(() => exporter.reset());

function engine(opts: EngineOptions = {}) {
  const options = resolveEngineOptions({
    cacheBlockSize: 4,
    maxSeqLen: 200,
    maxInputTokenLen: 100,
    kvBlocks: 64,
    ...opts,
  });
  const sim = new PagedKvSim(64, 4, 100);
  const core = new EngineCore({
    runner: sim,
    tokenizer: new CharTokenizer(),
    options,
    info: { modelName: 'sim-model' } as EngineInfo,
  });
  return { core, sim };
}

const req = (text: string, requestId: string, maxNewTokens = 8): GenerateRequest => ({
  requestId,
  prompt: { kind: 'text', text },
  params: { temperature: 0, ignoreEos: true, maxNewTokens },
});

/** Submits inside a parent span, as the gRPC server does inside its RPC span. */
function underParent(parent: Span, run: () => AsyncIterable<GenerateEvent>): AsyncIterable<GenerateEvent> {
  return context.with(trace.setSpan(ROOT_CONTEXT, parent), run);
}

async function finishOf(it: AsyncIterable<GenerateEvent>): Promise<FinishEvent> {
  let finish: FinishEvent | undefined;
  for await (const e of it) if (e.type === 'finish') finish = e;
  assert.ok(finish);
  return finish;
}

function phasesOf(requestId: string): ReadableSpan[] {
  return exporter
    .getFinishedSpans()
    .filter((s) => s.attributes['prism.request_id'] === requestId && PHASES.includes(s.name));
}

const ms = (t: [number, number]) => t[0] * 1e3 + t[1] / 1e6;

test('queue, prefill and decode: children of the active span, in order, back to back', async () => {
  const { core } = engine();
  const parent = trace.getTracer('test').startSpan('rpc');
  const f = await finishOf(underParent(parent, () => core.generate(req('hello world', 'r1'))));
  parent.end();
  assert.equal(f.reason, 'length');

  const spans = phasesOf('r1');
  assert.deepEqual(
    spans.map((s) => s.name),
    PHASES,
  );
  for (const s of spans) {
    assert.equal(s.parentSpanContext?.spanId, parent.spanContext().spanId);
    assert.equal(s.spanContext().traceId, parent.spanContext().traceId);
    assert.equal(s.attributes['gen_ai.request.model'], 'sim-model');
    assert.equal(s.status.code, SpanStatusCode.UNSET);
    assert.equal(s.attributes['prism.cancelled'], undefined);
    assert.ok(ms(s.endTime) >= ms(s.startTime));
  }
  const [queue, prefill, decode] = spans;
  // Each phase starts exactly where the previous one ended: same engine timestamps.
  assert.ok(Math.abs(ms(queue.endTime) - ms(prefill.startTime)) < 0.01);
  assert.ok(Math.abs(ms(prefill.endTime) - ms(decode.startTime)) < 0.01);
  // And the durations are the engine's own timings.
  assert.ok(Math.abs(ms(decode.endTime) - ms(decode.startTime) - f.timings.decodeMs) < 0.01);
  assert.ok(Math.abs(ms(prefill.endTime) - ms(prefill.startTime) - f.timings.prefillMs) < 0.01);

  assert.equal(prefill.attributes['gen_ai.usage.input_tokens'], 12); // BOS + 11 characters
  assert.equal(prefill.attributes['prism.cached_prompt_tokens'], 0);
  assert.equal(prefill.attributes['prism.prefill_chunks'], 1);
  assert.equal(decode.attributes['gen_ai.usage.output_tokens'], 8);
  assert.deepEqual(decode.attributes['gen_ai.response.finish_reasons'], ['length']);
  await core.close();
});

test('a prompt longer than the step budget counts its prefill chunks; a repeat hits the cache', async () => {
  const { core } = engine({ maxPrefillTokens: 8, prefixCache: true });
  const parent = trace.getTracer('test').startSpan('rpc');
  const prompt = 'a prompt of thirty characters!';
  await finishOf(underParent(parent, () => core.generate(req(prompt, 'long', 2))));
  await finishOf(underParent(parent, () => core.generate(req(prompt, 'again', 2))));
  parent.end();
  const first = phasesOf('long').find((s) => s.name === 'prism.prefill')!;
  assert.equal(first.attributes['gen_ai.usage.input_tokens'], 31);
  assert.equal(first.attributes['prism.prefill_chunks'], 4); // 31 tokens, 8 per step
  const repeat = phasesOf('again').find((s) => s.name === 'prism.prefill')!;
  assert.ok((repeat.attributes['prism.cached_prompt_tokens'] as number) > 0);
  await core.close();
});

test('a request cancelled while decoding ends its decode span marked cancelled', async () => {
  const { core, sim } = engine();
  sim.delayMs = 2;
  const parent = trace.getTracer('test').startSpan('rpc');
  const ac = new AbortController();
  let tokens = 0;
  let finish: FinishEvent | undefined;
  for await (const e of underParent(parent, () => core.generate(req('hi', 'cx', 100), ac.signal))) {
    if (e.type === 'token' && ++tokens === 3) ac.abort();
    if (e.type === 'finish') finish = e;
  }
  parent.end();
  assert.equal(finish?.reason, 'cancelled');
  const spans = phasesOf('cx');
  assert.deepEqual(
    spans.map((s) => s.name),
    PHASES,
  );
  const decode = spans[2];
  assert.equal(decode.attributes['prism.cancelled'], true);
  assert.deepEqual(decode.attributes['gen_ai.response.finish_reasons'], ['cancelled']);
  assert.ok((decode.attributes['gen_ai.usage.output_tokens'] as number) < 100);
  assert.equal(spans[0].attributes['prism.cancelled'], undefined);
  await core.close();
});

test('a request cancelled in the queue gets only a queue span, marked cancelled', async () => {
  const { core, sim } = engine({ maxBatchSize: 1 });
  sim.delayMs = 2;
  const parent = trace.getTracer('test').startSpan('rpc');
  const running = finishOf(underParent(parent, () => core.generate(req('first', 'busy', 20))));
  const queued = finishOf(underParent(parent, () => core.generate(req('second', 'waiting', 20))));
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(await core.cancel('waiting'), true);
  assert.equal((await queued).reason, 'cancelled');
  await running;
  parent.end();
  const spans = phasesOf('waiting');
  assert.deepEqual(
    spans.map((s) => s.name),
    ['prism.queue'],
  );
  assert.equal(spans[0].attributes['prism.cancelled'], true);
  assert.equal(spans[0].parentSpanContext?.spanId, parent.spanContext().spanId);
  await core.close();
});

test('a failed step ends the open span with status ERROR and the message', async () => {
  const { core, sim } = engine();
  sim.failNext = 'device on fire';
  const parent = trace.getTracer('test').startSpan('rpc');
  await assert.rejects(
    finishOf(underParent(parent, () => core.generate(req('hi', 'boom')))),
    (e: unknown) => e instanceof EngineError && e.code === 'INTERNAL',
  );
  parent.end();
  const spans = phasesOf('boom');
  assert.deepEqual(
    spans.map((s) => s.name),
    ['prism.queue', 'prism.prefill'],
  );
  assert.equal(spans[1].status.code, SpanStatusCode.ERROR);
  assert.match(spans[1].status.message ?? '', /device on fire/);
  await core.close();
});

test('with no span active (nothing traces this request) no phase spans are made', async () => {
  const { core } = engine();
  await finishOf(core.generate(req('hello', 'untraced')));
  assert.deepEqual(phasesOf('untraced'), []);
  assert.equal(exporter.getFinishedSpans().length, 0);
  await core.close();
});
