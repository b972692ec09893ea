/**
 * Split prefill/decode between real engines (default model, gRPC on unix sockets): both flows
 * at the engine API, moved tokens counted as cached, the decode engine's prefix cache keying
 * the pulled blocks, roles, and the refusals. Every test ends with every KV block free on
 * every engine. The faults (peers dying mid-transfer, clients leaving) have their own file.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { GenerateEvent, GenerateRequest } from '../engine/types.js';
import type { Engine } from '../engine/types.js';
import { startTestEngine, waitAllFree, type TestEngine } from './pd-harness.js';

const greedy = (text: string, maxNewTokens = 8, id?: string): GenerateRequest => ({
  ...(id ? { requestId: id } : {}),
  prompt: { kind: 'text', text },
  params: { maxNewTokens, temperature: 0 },
});

async function run(engine: Engine, request: GenerateRequest): Promise<GenerateEvent[]> {
  const events: GenerateEvent[] = [];
  for await (const ev of engine.generate(request)) events.push(ev);
  return events;
}

const finishOf = (events: GenerateEvent[]) => {
  const f = events.find((e) => e.type === 'finish');
  assert.ok(f && f.type === 'finish', 'a finish event');
  return f;
};

const LONG =
  'The history of the printing press begins in the fifteenth century, when movable type changed ' +
  'how books were made and read across Europe; within fifty years presses ran in many cities.';

let prefill: TestEngine;
let decode: TestEngine;
let mixed: TestEngine;

before(async () => {
  [prefill, decode, mixed] = await Promise.all([
    startTestEngine('prefill'),
    startTestEngine('decode'),
    startTestEngine('mixed'),
  ]);
});

after(async () => {
  await Promise.all([prefill?.close(), decode?.close(), mixed?.close()]);
});

async function allFree(): Promise<void> {
  await Promise.all([waitAllFree(prefill.client), waitAllFree(decode.client), waitAllFree(mixed.client)]);
}

describe('llm-d flow: kv_transfer_params from the prefill engine, pulled by the decode engine', () => {
  test('the decode engine generates what one engine does; moved tokens count as cached', async () => {
    const reference = finishOf(await run(mixed.client, greedy(LONG)));
    const first = finishOf(
      await run(prefill.client, { ...greedy(LONG, 1, 'llmd-1'), kvTransfer: { kind: 'remoteDecode' } }),
    );
    const params = first.kvTransfer;
    assert.ok(params, 'the prefill finish carries kv_transfer_params');
    assert.equal(params.doRemotePrefill, true);
    assert.equal(params.remoteRequestId, 'llmd-1');
    assert.equal(params.remoteEngineId, (await prefill.client.info()).engineId);
    const promptLen = first.usage.promptTokens;
    assert.equal(params.remoteBlockIds.length, Math.ceil(promptLen / 16));
    assert.ok((await prefill.client.status()).leasedBlocks > 0);

    const out = finishOf(
      await run(decode.client, {
        ...greedy(LONG, 8, 'llmd-1'),
        kvTransfer: { kind: 'remotePrefill', ...params },
      }),
    );
    assert.deepEqual(out.tokenIds, reference.tokenIds);
    assert.equal(out.text, reference.text);
    // All prompt tokens but the last moved (the last is computed here: its logits give the first token).
    assert.equal(out.usage.cachedPromptTokens, promptLen - 1);
    const ds = await decode.client.status();
    assert.equal(ds.kvTransfersIn, 1);
    assert.ok(ds.kvBytesIn > 0);
    await allFree();
  });

  test('the decode engine keys pulled blocks in its prefix cache: a second request pulls only the rest', async () => {
    const before = (await decode.client.status()).kvBytesIn;
    const pull = async (id: string, text: string) => {
      const p = finishOf(
        await run(prefill.client, { ...greedy(text, 1, id), kvTransfer: { kind: 'remoteDecode' } }),
      );
      return finishOf(
        await run(decode.client, {
          ...greedy(text, 4, id),
          kvTransfer: { kind: 'remotePrefill', ...p.kvTransfer! },
        }),
      );
    };
    const shared =
      'Rivers carry water from mountains to the sea, shaping valleys, feeding farms and towns, and ' +
      'moving sand and stones a little further every year. Over thousands of years a river can cut ' +
      'a canyon through solid rock, and its delta can grow far out into the sea it flows into.';
    const a = await pull('cache-a', shared + ' First question.');
    const mid = (await decode.client.status()).kvBytesIn;
    const b = await pull('cache-b', shared + ' Second question, a little longer.');
    const end = (await decode.client.status()).kvBytesIn;
    assert.ok(a.usage.cachedPromptTokens > 0);
    // b's cached tokens: the shared prefix from the local cache plus its own moved tokens.
    assert.equal(b.usage.cachedPromptTokens, b.usage.promptTokens - 1);
    assert.ok(end - mid < mid - before, `second pull ${end - mid} bytes, first ${mid - before}`);
    await allFree();
  });

  test('a lease is pulled once: a second pull of it is refused', async () => {
    const p = finishOf(
      await run(prefill.client, { ...greedy(LONG, 1, 'once'), kvTransfer: { kind: 'remoteDecode' } }),
    );
    const spec = { kind: 'remotePrefill' as const, ...p.kvTransfer! };
    await run(decode.client, { ...greedy(LONG, 2, 'once-a'), kvTransfer: spec });
    await assert.rejects(run(decode.client, { ...greedy(LONG, 2, 'once-b'), kvTransfer: spec }), (e: Error) =>
      /lease 'once' is not held here/.test(e.message),
    );
    await allFree();
  });
});

describe('MindIE flow: hand-off to d-target, results over DecodeResults', () => {
  test("first token from the prefill engine, the rest from the decode engine, together one engine's answer", async () => {
    const reference = await run(mixed.client, greedy(LONG, 10));
    const refFinish = finishOf(reference);
    const stream = decode.client.decodeResults();
    const it = stream[Symbol.asyncIterator]();
    const held = await it.next();
    assert.ok(!held.done && 'held' in held.value);

    const p = await run(prefill.client, {
      ...greedy(LONG, 10, 'mindie-1'),
      kvTransfer: { kind: 'remoteDecode', decodeTarget: decode.address },
    });
    const pFinish = finishOf(p);
    assert.equal(pFinish.kvTransfer?.handedTo, decode.address);
    const tokens = p.filter((e) => e.type === 'token');
    assert.equal(tokens.length, 1);
    const results: GenerateEvent[] = [];
    for (;;) {
      const r = await it.next();
      assert.ok(!r.done);
      assert.ok(!('error' in r.value), 'no error result');
      if (!('event' in r.value)) continue;
      assert.equal(r.value.requestId, 'mindie-1');
      results.push(r.value.event);
      if (r.value.event.type === 'finish') break;
    }
    await it.return?.(undefined);
    const last = finishOf(results);
    assert.deepEqual(last.tokenIds, refFinish.tokenIds);
    assert.equal(last.text, refFinish.text);
    // The streamed pieces: the prefill engine's first token, then the decode engine's, as one engine streams them.
    const pieces = [...tokens, ...results.filter((e) => e.type === 'token')].map((e) =>
      e.type === 'token' ? e.text : '',
    );
    const refPieces = reference
      .filter((e) => e.type === 'token')
      .map((e) => (e.type === 'token' ? e.text : ''));
    assert.deepEqual(pieces, refPieces);
    assert.equal(last.usage.cachedPromptTokens, last.usage.promptTokens);
    await allFree();
  });

  test('a hand-off is refused while no coordinator holds the results stream', async () => {
    await assert.rejects(
      run(prefill.client, {
        ...greedy(LONG, 4, 'nobody'),
        kvTransfer: { kind: 'remoteDecode', decodeTarget: decode.address },
      }),
      (e: Error) => /did not take the request.*no coordinator holds/.test(e.message),
    );
    await allFree();
  });
});

describe('roles', () => {
  test('prefill and decode engines refuse whole requests; mixed takes everything', async () => {
    await assert.rejects(run(prefill.client, greedy('Hello')), (e: Error) =>
      /role is prefill/.test(e.message),
    );
    await assert.rejects(run(decode.client, greedy('Hello')), (e: Error) => /role is decode/.test(e.message));
    await assert.rejects(
      run(decode.client, { ...greedy('Hello'), kvTransfer: { kind: 'remoteDecode' } }),
      (e: Error) => /role is decode/.test(e.message),
    );
    assert.equal(finishOf(await run(mixed.client, greedy('Hello', 2))).reason, 'length');
  });

  test('a role change drains: RoleSwitching while a whole request runs, then RoleReady', async () => {
    const long = run(mixed.client, { ...greedy(LONG, 40), params: { maxNewTokens: 40, ignoreEos: true } });
    for (let i = 0; i < 200 && (await mixed.client.status()).running === 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    const state = await mixed.client.setRole('decode');
    assert.deepEqual(state, { role: 'decode', status: 'RoleSwitching' });
    await assert.rejects(mixed.client.setRole('prefill'), /status is switching/);
    await assert.rejects(run(mixed.client, greedy('Hi')), /role is decode/);
    await long;
    assert.equal((await mixed.client.status()).roleStatus, 'RoleReady');
    assert.deepEqual(await mixed.client.setRole('mixed'), { role: 'mixed', status: 'RoleReady' });
    await allFree();
  });

  test('n above 1 is refused with a split (501-class), naming n', async () => {
    await assert.rejects(
      run(prefill.client, { ...greedy('Hi'), params: { n: 2 }, kvTransfer: { kind: 'remoteDecode' } }),
      (e: Error & { code?: string }) => e.code === 'UNIMPLEMENTED' && /n or best_of/.test(e.message),
    );
  });
});
