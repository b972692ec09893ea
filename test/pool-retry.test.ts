/**
 * The engine pool's retries (`prism gateway --engine A,B`, engine/failover/), on two real
 * engines behind their gRPC servers and the real gateways. A step that stops returning (the
 * native stall hook) gets its engine taken out of rotation by the health monitor; then:
 *
 * - a unary answer that was being generated there is sent to the other engine and comes back
 *   whole, identical to a fault-free run of the same seed, with `x-prism-retries: 1`;
 * - a request without a seed gets one fixed by the gateway before the first try, so its
 *   retry reproduces it (TGI reports the seed it ran with);
 * - a stream whose client already has tokens ends with its family's error event, never a
 *   token twice;
 * - with retries off, the unary answer fails with a clear 503 instead;
 *
 * and the engine rejoins once its step returns.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { GenerateRequest } from '../engine/types.js';
import { ensureDefaultModel } from '../engine/default-model.js';
import { GrpcEngineClient } from '../engine/service/client.js';
import { EnginePool } from '../gateways/engine-pool.js';
import { startGateway, type RunningGateway } from '../gateways/server.js';
import { faultTestHooks, type ContextHandle } from '../native/native.js';
import { freePortConfig, MODEL_NAME } from './gateways-harness.js';
import { startTestEngine, waitAllFree, type TestEngine } from './pd-harness.js';

const PROMPT = 'The keeper of the lighthouse wrote in his log every night. Tonight he wrote:';
const MAX = 40;
const HEALTH = { intervalMs: 100, timeoutMs: 3000, stallMs: 1500 };

const engines: { engine: TestEngine; ctx: ContextHandle }[] = [];
let reference: TestEngine;

before(async () => {
  const ctx: ContextHandle[] = [];
  const withCtx = (i: number) => ({ onContext: (c: ContextHandle) => (ctx[i] = c) });
  const started = await Promise.all([
    startTestEngine('mixed'),
    startTestEngine('mixed', {}, ensureDefaultModel(), undefined, withCtx(0)),
    startTestEngine('mixed', {}, ensureDefaultModel(), undefined, withCtx(1)),
  ]);
  reference = started[0];
  engines.push({ engine: started[1], ctx: ctx[0] }, { engine: started[2], ctx: ctx[1] });
});

after(async () => {
  await Promise.all([reference, ...engines.map((e) => e.engine)].map((e) => e?.close()));
});

/** A gateway over a pool of both engines (own clients), closed after `body`. */
async function withPool(
  retry: boolean,
  body: (url: string, pool: EnginePool) => Promise<void>,
): Promise<void> {
  const pool = new EnginePool(
    engines.map((e) => new GrpcEngineClient(e.engine.address)),
    { retry, health: HEALTH },
  );
  const gateway: RunningGateway = await startGateway({ engine: pool, config: freePortConfig() });
  try {
    await body(gateway.url('service'), pool);
  } finally {
    await gateway.close();
    await pool.close();
  }
  // The stalled step returns; its engine drops the abandoned request and frees its blocks.
  await Promise.all(engines.map((e) => waitAllFree(e.engine.client, 20_000)));
}

/** Stalls the next step of the engine that is generating (once it has made a few tokens). */
async function stallTheBusyOne(ms = 5000): Promise<void> {
  const base = await Promise.all(engines.map((e) => e.engine.client.status()));
  for (const until = Date.now() + 60_000; Date.now() < until;) {
    const now = await Promise.all(engines.map((e) => e.engine.client.status()));
    const i = now.findIndex((s, k) => s.running > 0 && s.generationTokens >= base[k].generationTokens + 4);
    if (i >= 0) return faultTestHooks.stallNextStep(engines[i].ctx, ms);
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('no engine started generating');
}

const post = (url: string, path: string, body: unknown): Promise<Response> =>
  fetch(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

async function referenceText(seed: number): Promise<string> {
  const request: GenerateRequest = {
    prompt: { kind: 'text', text: PROMPT },
    params: { maxNewTokens: MAX, temperature: 0.8, seed, ignoreEos: true },
  };
  for await (const ev of reference.client.generate(request)) if (ev.type === 'finish') return ev.text;
  throw new Error('no finish');
}

test('a unary answer whose engine stalls is sent to the other engine: whole, same text, retries 1', async () => {
  await withPool(true, async (url, pool) => {
    const res = post(url, '/v1/completions', {
      model: MODEL_NAME,
      prompt: PROMPT,
      max_tokens: MAX,
      temperature: 0.8,
      seed: 77,
      ignore_eos: true,
    });
    await stallTheBusyOne();
    let fewestUp = pool.upCount;
    const watch = setInterval(() => (fewestUp = Math.min(fewestUp, pool.upCount)), 20);
    const r = await res;
    clearInterval(watch);
    const body = (await r.json()) as { choices: { text: string; finish_reason: string }[] };
    assert.equal(r.status, 200, JSON.stringify(body));
    assert.equal(r.headers.get('x-prism-retries'), '1');
    assert.equal(body.choices[0].finish_reason, 'length');
    assert.equal(body.choices[0].text, await referenceText(77));
    assert.equal(fewestUp, 1, 'the stalled engine was taken out of rotation');
    // Its step returns: the monitor sees it generate again and it rejoins.
    for (const until = Date.now() + 20_000; pool.upCount < 2 && Date.now() < until;)
      await new Promise((r) => setTimeout(r, 100));
    assert.equal(pool.upCount, 2, 'the engine rejoined once its step returned');
  });
});

test('a request without a seed gets one before its first try: the retry reproduces it', async () => {
  await withPool(true, async (url) => {
    const body = (seed?: number) => ({
      inputs: PROMPT,
      parameters: {
        max_new_tokens: MAX,
        do_sample: true,
        temperature: 0.8,
        details: true,
        ...(seed ? { seed } : {}),
      },
    });
    const res = post(url, '/generate', body());
    await stallTheBusyOne();
    const r = await res;
    const first = (await r.json()) as { generated_text: string; details: { seed: number } };
    assert.equal(r.status, 200, JSON.stringify(first));
    assert.equal(r.headers.get('x-prism-retries'), '1');
    // The seed TGI reports is the one the gateway fixed; with it, a fault-free run agrees.
    const again = (await (await post(url, '/generate', body(first.details.seed))).json()) as {
      generated_text: string;
    };
    assert.equal(again.generated_text, first.generated_text);
  });
});

test('a stream whose client has tokens gets its family error event when the engine stalls, nothing twice', async () => {
  await withPool(true, async (url) => {
    const res = await post(url, '/v1/completions', {
      model: MODEL_NAME,
      prompt: PROMPT,
      max_tokens: MAX,
      temperature: 0.8,
      seed: 78,
      ignore_eos: true,
      stream: true,
    });
    assert.equal(res.status, 200);
    const reading = res.text();
    await stallTheBusyOne();
    const text = await reading;
    const events = text.split('\n\n').filter((e) => e.startsWith('data: '));
    const last = JSON.parse(events.at(-1)!.slice(6)) as { error?: { message: string; type: string } };
    assert.equal(last.error?.type, 'service_unavailable', events.at(-1));
    assert.match(last.error!.message, /generated nothing for \d+ s/);
    assert.ok(!text.includes('[DONE]'));
    const streamed = events
      .slice(0, -1)
      .map((e) => (JSON.parse(e.slice(6)) as { choices: { text: string }[] }).choices[0].text)
      .join('');
    assert.ok((await referenceText(78)).startsWith(streamed), `${streamed} is not a prefix of the answer`);
  });
});

test('with retries off the same stall fails the unary answer with a clear 503', async () => {
  await withPool(false, async (url) => {
    const res = post(url, '/v1/completions', {
      model: MODEL_NAME,
      prompt: PROMPT,
      max_tokens: MAX,
      temperature: 0.8,
      seed: 79,
      ignore_eos: true,
    });
    await stallTheBusyOne();
    const r = await res;
    const body = (await r.json()) as { error: { message: string; type: string } };
    assert.equal(r.status, 503, JSON.stringify(body));
    assert.equal(body.error.type, 'service_unavailable');
    assert.match(body.error.message, /stopped answering|generated nothing/);
  });
});
