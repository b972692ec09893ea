/**
 * The split prefill/decode coordinator's retries (engine/failover/), on real engines: one
 * prefill engine and two decode engines behind the real gateways. A decode engine whose step
 * stops returning (the native stall hook) is taken out by the health monitor and a unary
 * answer that was decoding there is computed again on the other decode engine; one that dies
 * mid-answer (every connection to it cut, through a TCP proxy in front of it) the same; either
 * way the answer is the one a whole engine gives for the seed (sampled, temperature 0.8),
 * `x-prism-retries: 1` says it was sent again, and every KV block comes back.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ContextHandle } from '../native/native.js';
import { faultTestHooks } from '../native/native.js';
import type { GenerateRequest } from '../engine/types.js';
import { ensureDefaultModel } from '../engine/default-model.js';
import { MODEL_NAME } from './gateways-harness.js';
import {
  startPdGateway,
  startTestEngine,
  TcpProxy,
  waitAllFree,
  type PdGateway,
  type TestEngine,
} from './pd-harness.js';

const PROMPT = 'The keeper of the lighthouse wrote in his log every night. Tonight he wrote:';
const MAX = 48;
const SEED = 4242;

let reference: TestEngine;
let prefill: TestEngine;
/** The decode engines (on TCP), each reached by the coordinator through its proxy. */
const decode: { engine: TestEngine; ctx: ContextHandle; proxy: TcpProxy }[] = [];
let gw: PdGateway;
let expected: string;

before(async () => {
  const ctx: ContextHandle[] = [];
  const withCtx = (i: number) => ({ onContext: (c: ContextHandle) => (ctx[i] = c) });
  const [r, p, d1, d2] = await Promise.all([
    startTestEngine('mixed'),
    startTestEngine('prefill'),
    startTestEngine('decode', {}, ensureDefaultModel(), '127.0.0.1:0', withCtx(0)),
    startTestEngine('decode', {}, ensureDefaultModel(), '127.0.0.1:0', withCtx(1)),
  ]);
  reference = r;
  prefill = p;
  for (const [i, d] of [d1, d2].entries()) {
    const proxy = new TcpProxy(d.address);
    await proxy.listen();
    decode.push({ engine: d, ctx: ctx[i], proxy });
  }
  const viaProxy = decode.map((d) => ({ ...d.engine, address: d.proxy.address }));
  gw = await startPdGateway([prefill], viaProxy, 'mindie', false, {
    health: { stallMs: 1500, timeoutMs: 3000 },
    log: (l) => process.env.DEBUG_PD && console.error('COORD', l),
  });
  const request: GenerateRequest = {
    prompt: { kind: 'text', text: PROMPT },
    params: { maxNewTokens: MAX, temperature: 0.8, seed: SEED, ignoreEos: true },
  };
  for await (const ev of reference.client.generate(request)) if (ev.type === 'finish') expected = ev.text;
});

after(async () => {
  await gw?.close();
  await Promise.all(decode.map((d) => d.proxy.close()));
  await Promise.all([reference, prefill, ...decode.map((d) => d.engine)].map((e) => e?.close()));
});

/** Sends the unary completion; resolves with its status, text and retry header. */
async function complete(): Promise<{ status: number; text: string; retries: string | null }> {
  const res = await fetch(`${gw.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: MODEL_NAME,
      prompt: PROMPT,
      max_tokens: MAX,
      temperature: 0.8,
      seed: SEED,
      ignore_eos: true,
    }),
  });
  const body = (await res.json()) as { choices?: { text: string }[]; error?: unknown };
  return {
    status: res.status,
    text: body.choices?.[0]?.text ?? JSON.stringify(body),
    retries: res.headers.get('x-prism-retries'),
  };
}

/** The decode engine that is generating for the request once it has made a few tokens. */
async function decodingOn(live: typeof decode) {
  const base = await Promise.all(live.map((d) => d.engine.client.status()));
  for (const until = Date.now() + 60_000; Date.now() < until;) {
    const now = await Promise.all(live.map((d) => d.engine.client.status()));
    const i = now.findIndex((s, k) => s.running > 0 && s.generationTokens >= base[k].generationTokens + 4);
    if (i >= 0) return live[i];
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('no decode engine started generating');
}

test('a decode step that never returns: the engine is taken out and the answer computed on the other', async () => {
  const answer = complete();
  const stuck = await decodingOn(decode);
  faultTestHooks.stallNextStep(stuck.ctx, 8000);
  const r = await answer;
  assert.equal(r.status, 200, r.text);
  assert.equal(r.text, expected, 'the retried answer is the one a whole engine gives for the seed');
  assert.equal(r.retries, '1');
  // Once the step returns, the stalled engine drops the abandoned request and frees its blocks.
  await Promise.all([prefill, ...decode.map((d) => d.engine)].map((e) => waitAllFree(e.client, 20_000)));
});

test('a decode engine that dies mid-answer: the answer is computed again on the other', async () => {
  // The stalled engine of the last test must be back in rotation first.
  await new Promise((r) => setTimeout(r, 500));
  const answer = complete();
  const doomed = await decodingOn(decode);
  await doomed.proxy.close(); // every connection to it cut, and no new one: gone, as a killed process
  const r = await answer;
  assert.equal(r.status, 200, r.text);
  assert.equal(r.text, expected);
  assert.equal(r.retries, '1');
  const alive = decode.filter((d) => d !== doomed).map((d) => d.engine);
  await Promise.all([prefill, ...alive].map((e) => waitAllFree(e.client, 20_000)));
});
