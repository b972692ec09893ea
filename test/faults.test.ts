/**
 * Client faults: a client that goes away before the headers, mid-stream, between two SSE
 * events, or during a unary request frees its KV blocks at once — the engine generates at most
 * one more step for it (read from the engine's token counter) and its block count returns to
 * the whole pool (a native step in flight cannot be interrupted: it completes first, so the
 * bound is counted in steps, not milliseconds). stopInfer does the same for a KServe stream.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MODEL_NAME, startHarness, type Harness } from './gateways-harness.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(async () => {
  await h?.close();
});

// ~280 tokens: a prefill step long enough to cut the client inside it, short enough for a loaded CI machine.
const LONG_PROMPT = 'The river runs past the old mill and under the stone bridge. '.repeat(20);

/** Waits until nothing runs and every block is free; returns generated tokens meanwhile and the wait. */
async function freed(tokensAtCut: number): Promise<{ extraTokens: number; ms: number }> {
  const t0 = Date.now();
  for (;;) {
    const s = await h.client.status();
    if (s.running === 0 && s.waiting === 0 && s.freeBlocks === s.totalBlocks)
      return { extraTokens: s.generationTokens - tokensAtCut, ms: Date.now() - t0 };
    if (Date.now() - t0 > 10000)
      assert.fail(`blocks not freed: ${JSON.stringify({ ...s, ttft: undefined })}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const post = (path: string, body: unknown, signal: AbortSignal): Promise<Response> =>
  fetch(h.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });

/** Reads a stream until `events` complete SSE events arrived (a chunk ending an event), then cuts. */
async function cutAfterEvents(res: Response, events: number, abort: AbortController): Promise<number> {
  let seen = 0;
  let text = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    text += Buffer.from(chunk).toString('utf-8');
    seen = text.split('\n\n').length - 1;
    if (seen >= events && text.endsWith('\n\n')) break;
  }
  const tokens = (await h.client.status()).generationTokens;
  abort.abort();
  return tokens;
}

test('disconnect before the headers (during a long prefill) frees every block', async (t) => {
  const before = await h.client.status();
  const abort = new AbortController();
  const res = post(
    '/v1/chat/completions',
    {
      model: MODEL_NAME,
      messages: [{ role: 'user', content: LONG_PROMPT }],
      max_tokens: 200,
      stream: true,
    },
    abort.signal,
  ).catch((e: Error) => e);
  // Wait until the engine holds blocks for it, then go away before any header arrived.
  for (let i = 0; i < 400; i++) {
    const s = await h.client.status();
    if (s.freeBlocks < s.totalBlocks) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const tokens = (await h.client.status()).generationTokens;
  abort.abort();
  assert.ok((await res) instanceof Error, 'the client went away before a response');
  const f = await freed(tokens);
  t.diagnostic(`freed after ${f.ms} ms, ${f.extraTokens} tokens generated after the cut`);
  assert.ok(f.extraTokens <= 1, `${f.extraTokens} tokens generated after the disconnect`);
  assert.equal((await h.client.status()).generationTokens - before.generationTokens <= 1, true);
});

test('disconnect mid-stream (OpenAI) frees every block within one step', async (t) => {
  const abort = new AbortController();
  const res = await post(
    '/v1/chat/completions',
    {
      model: MODEL_NAME,
      messages: [{ role: 'user', content: 'Tell a long story.' }],
      max_tokens: 300,
      stream: true,
    },
    abort.signal,
  );
  const tokens = await cutAfterEvents(res, 3, abort);
  const f = await freed(tokens);
  t.diagnostic(`freed after ${f.ms} ms, ${f.extraTokens} tokens generated after the cut`);
  assert.ok(f.extraTokens <= 2, `${f.extraTokens} tokens generated after the disconnect (${f.ms} ms)`);
});

test('disconnect between two SSE events (TGI) frees every block within one step', async (t) => {
  const abort = new AbortController();
  const res = await post(
    '/generate_stream',
    { inputs: 'Tell a long story.', parameters: { max_new_tokens: 300 } },
    abort.signal,
  );
  const tokens = await cutAfterEvents(res, 5, abort);
  const f = await freed(tokens);
  t.diagnostic(`freed after ${f.ms} ms, ${f.extraTokens} tokens generated after the cut`);
  assert.ok(f.extraTokens <= 2, `${f.extraTokens} tokens generated after the disconnect (${f.ms} ms)`);
});

test('disconnect during a unary request frees every block', async (t) => {
  const abort = new AbortController();
  const res = post(
    '/generate',
    { inputs: 'Tell a long story.', parameters: { max_new_tokens: 300 } },
    abort.signal,
  ).catch((e: Error) => e);
  for (let i = 0; i < 400; i++) {
    if ((await h.client.status()).generationTokens > 0 && (await h.client.status()).running > 0) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  await new Promise((r) => setTimeout(r, 100));
  const tokens = (await h.client.status()).generationTokens;
  abort.abort();
  assert.ok((await res) instanceof Error);
  const f = await freed(tokens);
  t.diagnostic(`freed after ${f.ms} ms, ${f.extraTokens} tokens generated after the cut`);
  assert.ok(f.extraTokens <= 2, `${f.extraTokens} tokens generated after the disconnect (${f.ms} ms)`);
});

test('stopInfer ends a KServe stream as cancelled and frees every block', async (t) => {
  const abort = new AbortController();
  const res = await post(
    `/v2/models/${MODEL_NAME}/generate_stream`,
    { id: 'fault-stop-1', text_input: 'Tell a long story.', parameters: { max_new_tokens: 300 } },
    abort.signal,
  );
  const reader = (res.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  let text = Buffer.from((await reader.next()).value!).toString('utf-8');
  const stop = await fetch(`${h.url}/v2/models/${MODEL_NAME}/stopInfer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'fault-stop-1' }),
  });
  assert.equal(stop.status, 200);
  const tokens = (await h.client.status()).generationTokens;
  for (let r = await reader.next(); !r.done; r = await reader.next())
    text += Buffer.from(r.value).toString('utf-8');
  assert.match(text, /"finish_reason":"cancelled"/);
  const f = await freed(tokens);
  t.diagnostic(`freed after ${f.ms} ms, ${f.extraTokens} tokens generated after the cut`);
  assert.ok(f.extraTokens <= 2, `${f.extraTokens} tokens generated after stopInfer (${f.ms} ms)`);
});
