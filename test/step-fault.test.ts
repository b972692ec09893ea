/**
 * Fault (d) of the reliability issue: a step that throws in native code fails only the
 * requests of that step. The real engine on the default model, with native
 * `faultTestHooks.failNextSteps` making a step throw a C++ exception mid-forward: the requests
 * in that step end with an INTERNAL error (a 500 / an error event in the family's shape),
 * requests waiting outside it complete with their full, unchanged output, and the engine
 * keeps serving with every KV block back in the pool.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ensureDefaultModel } from '../engine/default-model.js';
import type { EngineCore } from '../engine/engine-core.js';
import { EngineError } from '../engine/errors.js';
import { loadEngine } from '../engine/load-engine.js';
import type { Engine, FinishEvent, GenerateEvent, GenerateRequest } from '../engine/types.js';
import { faultTestHooks, type ContextHandle } from '../native/native.js';
import { freePortConfig, MODEL_NAME, startHarness, type Harness } from './gateways-harness.js';

const req = (text: string, maxNewTokens: number): GenerateRequest => ({
  prompt: { kind: 'text', text },
  params: { temperature: 0, ignoreEos: true, maxNewTokens },
});

/** Runs a request; `first` resolves at its first token (or when it ends without one). */
function start(engine: Engine, request: GenerateRequest) {
  let onFirst!: () => void;
  const first = new Promise<void>((resolve) => (onFirst = resolve));
  const done = (async () => {
    const events: GenerateEvent[] = [];
    try {
      for await (const e of engine.generate(request)) {
        events.push(e);
        if (e.type === 'token') onFirst();
      }
    } finally {
      onFirst();
    }
    return events.filter((e): e is FinishEvent => e.type === 'finish');
  })();
  done.catch(() => {}); // asserted by the test
  return { first, done };
}

/** Polls the engine's status counters until `pred` holds (no fixed sleeps). */
async function waitForStatus(engine: Engine, pred: (s: Awaited<ReturnType<Engine['status']>>) => boolean) {
  for (;;) {
    const s = await engine.status();
    if (pred(s)) return s;
    await new Promise((r) => setTimeout(r, 5));
  }
}

const isInternal = (e: unknown) =>
  e instanceof EngineError &&
  e.code === 'INTERNAL' &&
  /model step .*failed \(step failed: injected fault/.test(e.message);

describe('a native step fault, engine level', () => {
  let engine: EngineCore;
  let ctx: ContextHandle | undefined;

  before(async () => {
    engine = await loadEngine(
      ensureDefaultModel(),
      // Two sequences per step: two running requests fill it, later ones wait outside it.
      { maxBatchSize: 2, maxSeqLen: 512, maxInputTokenLen: 256, kvCacheBytes: 32 << 20, threads: 2 },
      { onContext: (c) => (ctx = c) },
    );
  });
  after(() => engine.close());

  test('fails only the requests in the failing step; the waiting ones complete unchanged', async () => {
    assert.ok(ctx);
    const prompts = ['The capital of France is', 'Once upon a time'];
    // Greedy references, before any fault.
    const reference: string[] = [];
    for (const p of prompts) reference.push((await start(engine, req(p, 8)).done)[0].text);

    const inStep = [
      start(engine, req('Count from one to a hundred:', 300)),
      start(engine, req('List of colors:', 300)),
    ];
    await Promise.all(inStep.map((r) => r.first));
    const waiting = prompts.map((p) => start(engine, req(p, 8)));
    await waitForStatus(engine, (s) => s.running === 2 && s.waiting === 2);

    faultTestHooks.failNextSteps(ctx, 1);
    for (const r of inStep) await assert.rejects(r.done, isInternal);

    const finished = await Promise.all(waiting.map((r) => r.done));
    finished.forEach((f, i) => {
      assert.equal(f.length, 1);
      assert.equal(f[0].reason, 'length');
      assert.equal(f[0].tokenIds.length, 8);
      assert.equal(f[0].text, reference[i], 'a request outside the failed step gives the same text');
    });
    const st = await waitForStatus(engine, (s) => s.running === 0 && s.waiting === 0);
    assert.equal(st.freeBlocks, st.totalBlocks, 'every KV block is back in the pool');
    assert.equal(st.requestsFailed, 2);
    assert.equal(st.stopping, false);

    // The engine keeps serving, and what it computes is unchanged by the half-written KV.
    const again = await start(engine, req(prompts[0], 8)).done;
    assert.equal(again[0].text, reference[0]);
  });

  test('a fault during a prefill fails that request; a fault on several steps in a row too', async () => {
    assert.ok(ctx);
    faultTestHooks.failNextSteps(ctx, 3);
    for (let i = 0; i < 3; i++)
      await assert.rejects(start(engine, req(`prompt number ${i}`, 4)).done, isInternal);
    const ok = await start(engine, req('prompt number 0', 4)).done;
    assert.equal(ok[0].reason, 'length');
    const st = await waitForStatus(engine, (s) => s.running === 0 && s.waiting === 0);
    assert.equal(st.freeBlocks, st.totalBlocks);
  });
});

/** Reads an SSE response event by event. */
async function* sseEvents(res: Response): AsyncGenerator<EventSourceMessage> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => queue.push(e) });
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    while (queue.length > 0) yield queue.shift()!;
  }
}

describe('a native step fault through the HTTP gateways', () => {
  let h: Harness;
  let ctx: ContextHandle | undefined;

  before(async () => {
    h = await startHarness(freePortConfig(), { hooks: { onContext: (c) => (ctx = c) } });
  });
  after(() => h.close());

  const chat = (stream: boolean, maxTokens: number) =>
    fetch(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL_NAME,
        messages: [{ role: 'user', content: 'Tell me a long story.' }],
        max_tokens: maxTokens,
        temperature: 0,
        ignore_eos: true,
        stream,
      }),
    });

  test('OpenAI and TGI unary requests get a 500 in their shape; a stream gets an error event', async () => {
    assert.ok(ctx);
    faultTestHooks.failNextSteps(ctx, 1);
    const unary = await chat(false, 4);
    assert.equal(unary.status, 500);
    const body = (await unary.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, 'internal_error');
    assert.match(body.error.message, /model step .*failed \(step failed: injected fault/);
    assert.doesNotMatch(body.error.message, /\.ts:|\bat \w+ \(/, 'no stack trace');

    faultTestHooks.failNextSteps(ctx, 1);
    const tgi = await fetch(`${h.url}/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: 'Hello', parameters: { max_new_tokens: 4 } }),
    });
    assert.equal(tgi.status, 500);
    const tgiBody = (await tgi.json()) as { error: string; error_type: string };
    assert.equal(tgiBody.error_type, 'incomplete_generation');
    assert.match(tgiBody.error, /injected fault/);

    // Mid-stream: the fault is armed after the first token reached the client.
    const res = await chat(true, 200);
    assert.equal(res.status, 200);
    const data: string[] = [];
    let armed = false;
    for await (const ev of sseEvents(res)) {
      data.push(ev.data);
      if (!armed && /"content":"[^"]/.test(ev.data)) {
        faultTestHooks.failNextSteps(ctx, 1);
        armed = true;
      }
    }
    assert.ok(armed, 'a token arrived before the fault');
    const last = JSON.parse(data[data.length - 1]) as { error?: { type: string; message: string } };
    assert.equal(last.error?.type, 'internal_error');
    assert.match(last.error?.message ?? '', /injected fault/);
    assert.ok(!data.includes('[DONE]'));
    assert.ok(data.length < 150, 'the stream ended at the fault, not after max_tokens');

    // The server keeps serving; nothing is left running or holding blocks.
    const ok = await chat(false, 4);
    assert.equal(ok.status, 200);
    const st = await waitForStatus(h.engine, (s) => s.running === 0 && s.waiting === 0);
    assert.equal(st.freeBlocks, st.totalBlocks);
    assert.equal(st.requestsFailed, 3);
  });
});
