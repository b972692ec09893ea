/**
 * Split prefill/decode under faults, on real engines: a prefill engine that dies mid-transfer
 * (the decode engine recomputes when allowed, else the client gets a 5xx in its family's shape,
 * never a hang), a decode engine that dies or never pulls (the prefill engine frees the leased
 * blocks), a client that hangs up mid-transfer (both engines free everything), and a model
 * mismatch (refused before any block moves). A TCP proxy in front of the engine being pulled
 * from holds the transfer at a chosen byte, so "mid-transfer" is exact. After every test every
 * KV block is free on every engine still alive.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { GenerateEvent, GenerateRequest } from '../engine/types.js';
import type { Engine } from '../engine/types.js';
import { fixture } from './fixtures.js';
import { MODEL_NAME, postJson, type JsonBody } from './gateways-harness.js';
import { startPdGateway, startTestEngine, TcpProxy, waitAllFree, type TestEngine } from './pd-harness.js';

/** About seven 16-token blocks, 2.5 MB of KV: a transfer long enough to stop in the middle. */
const PROMPT =
  'A lighthouse stands on a rock at the edge of the sea. Every night its lamp turns and sweeps ' +
  'a beam of light across the water, warning ships away from the rocks below. The keeper climbs ' +
  'the stairs at dusk, trims the wick, winds the clockwork and watches the horizon until dawn.';

const greedy = (id: string, maxNewTokens = 6): GenerateRequest => ({
  requestId: id,
  prompt: { kind: 'text', text: PROMPT },
  params: { maxNewTokens, temperature: 0, ignoreEos: true },
});

async function run(engine: Engine, request: GenerateRequest): Promise<GenerateEvent[]> {
  const events: GenerateEvent[] = [];
  for await (const ev of engine.generate(request)) events.push(ev);
  return events;
}

const finishOf = (events: GenerateEvent[]) => {
  const f = events.find((e) => e.type === 'finish');
  assert.ok(f && f.type === 'finish');
  return f;
};

/** A prefill engine on TCP whose KV is pulled through a proxy (what other engines are told to dial). */
async function proxiedPrefill(options = {}): Promise<{ engine: TestEngine; proxy: TcpProxy }> {
  const engine = await startTestEngine('prefill', options, undefined, '127.0.0.1:0');
  const proxy = new TcpProxy(engine.address);
  engine.core.features.disaggregation.setListenAddress(await proxy.listen());
  return { engine, proxy };
}

let reference: TestEngine;
let decode: TestEngine;
let expected: GenerateEvent[];

before(async () => {
  [reference, decode] = await Promise.all([startTestEngine('mixed'), startTestEngine('decode')]);
  expected = await run(reference.client, greedy('reference'));
});

after(async () => {
  await Promise.all([reference?.close(), decode?.close()]);
});

/** `lead` makes the prompt one no engine has cached (the prefix cache would shorten the transfer). */
async function postCompletion(
  url: string,
  signal?: AbortSignal,
  lead = '',
): Promise<{ status: number; json: JsonBody }> {
  const res = await fetch(url + '/v1/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: MODEL_NAME,
      prompt: lead + PROMPT,
      max_tokens: 6,
      temperature: 0,
      ignore_eos: true,
    }),
    signal,
  });
  return { status: res.status, json: await res.json() };
}

describe('the prefill engine dies mid-transfer', () => {
  for (const recompute of [false, true]) {
    test(`MindIE flow, recompute ${recompute ? 'on: the decode engine computes the prompt' : 'off: a clear 5xx'}`, async () => {
      const { engine: prefill, proxy } = await proxiedPrefill();
      const gw = await startPdGateway([prefill], [decode], 'mindie', recompute);
      try {
        proxy.stallAfter(400_000);
        const answer = postCompletion(gw.url);
        await proxy.stalled();
        await prefill.close(); // the prefill engine is gone with a third of the KV sent
        proxy.cut();
        const r = await answer;
        if (recompute) {
          assert.equal(r.status, 200, JSON.stringify(r.json));
          assert.equal(r.json.choices[0].text, finishOf(expected).text);
        } else {
          assert.ok(r.status >= 500, `status ${r.status}`);
          assert.match(r.json.error.message, /KV transfer from .* failed/);
          // With the prefill engine gone, the other families answer 5xx in their own shape too.
          for (const [route, body] of [
            ['/generate', { inputs: PROMPT, parameters: { max_new_tokens: 4 } }],
            ['/infer', { inputs: PROMPT, stream: false, parameters: { max_new_tokens: 4 } }],
          ] as const) {
            const f = await postJson(gw.url + route, body);
            assert.ok(f.status >= 500, `${route}: status ${f.status}`);
            assert.equal(typeof f.json.error, 'string', `${route}: ${f.text}`);
            assert.equal(typeof f.json.error_type, 'string', `${route}: ${f.text}`);
          }
        }
        assert.ok((await decode.client.status()).kvTransferFailures >= 1);
        await waitAllFree(decode.client);
      } finally {
        await gw.close();
        await proxy.close();
        await prefill.close();
      }
    });
  }
});

describe('the decode engine goes away', () => {
  test('a lease nobody pulls expires and its blocks are freed', async () => {
    const prefill = await startTestEngine('prefill', { kvLeaseMs: 300 });
    try {
      const p = finishOf(
        await run(prefill.client, { ...greedy('unpulled', 1), kvTransfer: { kind: 'remoteDecode' } }),
      );
      assert.ok(p.kvTransfer);
      assert.ok((await prefill.client.status()).leasedBlocks > 0);
      await waitAllFree(prefill.client, 3000);
    } finally {
      await prefill.close();
    }
  });

  test('dying mid-transfer: the prefill engine frees the lease at once (not at its expiry)', async () => {
    const { engine: prefill, proxy } = await proxiedPrefill();
    const doomed = await startTestEngine('decode');
    try {
      const p = finishOf(
        await run(prefill.client, { ...greedy('dies', 1), kvTransfer: { kind: 'remoteDecode' } }),
      );
      proxy.stallAfter(400_000);
      const pull = run(doomed.client, {
        ...greedy('dies'),
        kvTransfer: { kind: 'remotePrefill', ...p.kvTransfer! },
      });
      pull.catch(() => {}); // it fails when its engine goes
      await proxy.stalled();
      await doomed.close();
      proxy.cut();
      await waitAllFree(prefill.client, 3000); // the lease lives 30 s: freed by the broken transfer
    } finally {
      await proxy.close();
      await prefill.close();
      await doomed.close();
    }
  });
});

describe('the client hangs up mid-transfer', () => {
  for (const flow of ['mindie', 'llm-d'] as const) {
    test(`${flow}: both engines free everything`, async () => {
      const { engine: prefill, proxy } = await proxiedPrefill();
      const gw = await startPdGateway([prefill], [decode], flow);
      try {
        proxy.stallAfter(400_000);
        const client = new AbortController();
        const answer = postCompletion(gw.url, client.signal, `Client hang-up, ${flow}. `);
        answer.catch(() => {});
        await proxy.stalled();
        client.abort();
        await Promise.all([waitAllFree(prefill.client), waitAllFree(decode.client)]);
      } finally {
        await gw.close();
        await proxy.close();
        await prefill.close();
      }
    });
  }
});

describe('a model mismatch', () => {
  test('is refused by the prefill engine before any block moves', async () => {
    // Another model with the default model's tokenizer (a fixture the project generates).
    const otherModel = fixture('llama-q4_1').path;
    const prefill = await startTestEngine('prefill');
    const other = await startTestEngine('decode', {}, otherModel).catch(async (e: unknown) => {
      await prefill.close();
      throw e;
    });
    try {
      const p = finishOf(
        await run(prefill.client, { ...greedy('mismatch', 1), kvTransfer: { kind: 'remoteDecode' } }),
      );
      await assert.rejects(
        run(other.client, { ...greedy('mismatch'), kvTransfer: { kind: 'remotePrefill', ...p.kvTransfer! } }),
        (e: Error) => /cannot share KV \(modelFingerprint/.test(e.message),
      );
      assert.equal((await prefill.client.status()).kvBytesOut, 0);
      assert.equal((await other.client.status()).kvBytesIn, 0);
      // The refused lease stays for a puller that matches; cancelling the id frees it.
      assert.equal(await prefill.client.cancel('mismatch'), true);
      await Promise.all([waitAllFree(prefill.client), waitAllFree(other.client)]);
    } finally {
      await prefill.close();
      await other.close();
    }
  });
});
