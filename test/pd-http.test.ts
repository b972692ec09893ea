/**
 * The HTTP surfaces of split prefill/decode on instances that each run a gateway over their
 * engine (as `prism serve --role …` does): MindIE's (PD headers on the prefill instance's
 * inference routes, `GET /dresult` on the decode instance, `POST /v1/role/{role}` and the
 * status route) and llm-d's (vLLM's `kv_transfer_params` on the OpenAI routes).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GrpcEngineClient } from '../engine/service/client.js';
import type { FinishEvent, GenerateEvent } from '../engine/types.js';
import { startGateway, type RunningGateway } from '../gateways/server.js';
import { freePortConfig, MODEL_NAME, postJson, type JsonBody } from './gateways-harness.js';
import { startTestEngine, waitAllFree, type TestEngine } from './pd-harness.js';

interface Instance {
  readonly engine: TestEngine;
  readonly client: GrpcEngineClient;
  readonly gateway: RunningGateway;
  readonly url: string;
  readonly management: string;
}

async function instance(role: 'prefill' | 'decode' | 'mixed'): Promise<Instance> {
  const engine = await startTestEngine(role);
  const client = new GrpcEngineClient(engine.address);
  const gateway = await startGateway({ engine: client, config: freePortConfig() });
  return { engine, client, gateway, url: gateway.url('service'), management: gateway.url('management') };
}

async function closeInstance(i: Instance | undefined): Promise<void> {
  if (!i) return;
  await i.gateway.close();
  await i.client.close();
  await i.engine.close();
}

/** Reads MindIE's /dresult frames (`reqId:<id>\0<prefix><body>\0`) until `until` says stop. */
async function readDresult(
  res: Response,
  until: (frames: { id: string; prefix: string; body: string }[]) => boolean,
): Promise<{ id: string; prefix: string; body: string }[]> {
  const frames: { id: string; prefix: string; body: string }[] = [];
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    for (;;) {
      const a = buf.indexOf('\0');
      const b = a < 0 ? -1 : buf.indexOf('\0', a + 1);
      if (b < 0) break;
      const head = buf.slice(0, a);
      const rest = buf.slice(a + 1, b);
      buf = buf.slice(b + 1);
      const m = /^(data|lastData|error|keepAlive):/.exec(rest);
      assert.ok(head.startsWith('reqId:') && m, `a MindIE frame: ${JSON.stringify(head + rest)}`);
      frames.push({ id: head.slice('reqId:'.length), prefix: m[1], body: rest.slice(m[0].length) });
    }
    if (until(frames)) break;
  }
  return frames;
}

const PROMPT = 'Write two sentences about a lighthouse keeper who loves the sea.';

let prefill: Instance;
let decode: Instance;
let single: Instance;

before(async () => {
  [prefill, decode, single] = await Promise.all([instance('prefill'), instance('decode'), instance('mixed')]);
});

after(async () => {
  await Promise.all([closeInstance(prefill), closeInstance(decode), closeInstance(single)]);
});

describe('MindIE', () => {
  test("PD headers on the prefill instance, results tagged with req-id over the decode instance's /dresult", async () => {
    const chat = {
      model: MODEL_NAME,
      messages: [{ role: 'user', content: PROMPT }],
      max_tokens: 12,
      temperature: 0,
    };
    const want = await postJson(`${single.url}/v1/chat/completions`, chat);
    const holder = new AbortController();
    try {
      const dresult = await fetch(`${decode.url}/dresult`, { signal: holder.signal });
      assert.equal(dresult.status, 200);
      const frames = readDresult(dresult, (f) =>
        f.some((x) => x.prefix === 'lastData' || x.prefix === 'error'),
      );
      const first = await postJson(`${prefill.url}/v1/chat/completions`, chat, {
        'req-type': 'prefill',
        'req-id': '0xc0ffee',
        'd-target': decode.engine.address,
        'is-recompute': 'false',
      });
      assert.equal(first.status, 200, first.text);
      // The prefill instance answers with the first token, in the family's format.
      const firstText: string = first.json.choices[0].message.content;
      assert.ok(want.json.choices[0].message.content.startsWith(firstText));
      const got = (await frames).filter((f) => f.id === '0xc0ffee');
      assert.ok(got.length >= 2);
      assert.ok(got.slice(0, -1).every((f) => f.prefix === 'data'));
      assert.equal(got.at(-1)!.prefix, 'lastData');
      const last = JSON.parse(got.at(-1)!.body) as FinishEvent;
      assert.equal(last.type, 'finish');
      assert.equal(last.text, want.json.choices[0].message.content);
      const pieces = [
        firstText,
        ...got.slice(0, -1).map((f) => (JSON.parse(f.body) as GenerateEvent & { text: string }).text),
      ];
      assert.equal(pieces.join(''), last.text);
      await Promise.all([waitAllFree(prefill.client), waitAllFree(decode.client)]);
    } finally {
      holder.abort(); // a failed check must not leave /dresult open (the gateway would never close)
    }
  });

  test("a malformed PD header is a 400 in the family's shape, naming the header", async () => {
    const headers = { 'req-type': 'prefill', 'req-id': 'not hex', 'd-target': decode.engine.address };
    const o = await postJson(`${prefill.url}/v1/completions`, { prompt: 'Hi', max_tokens: 2 }, headers);
    assert.equal(o.status, 400);
    assert.equal(o.json.error.param, 'req-id');
    const n = await postJson(
      `${prefill.url}/infer`,
      { inputs: 'Hi', parameters: { max_new_tokens: 2 } },
      {
        ...headers,
        'req-id': 'ab',
        'd-target': 'nowhere:port',
      },
    );
    assert.equal(n.status, 400);
    assert.equal(n.json.error_type, 'Bad Request');
    const t = await postJson(`${prefill.url}/generate`, { inputs: 'Hi' }, { 'req-id': 'ab' });
    assert.equal(t.status, 400);
    assert.match(t.json.error, /req-type/);
  });

  test('roles through the management routes; status reports them', async () => {
    const role = await postJson(`${decode.management}/v1/role/prefill`, { local: {}, peers: [] });
    assert.deepEqual(role.json, { result: 'OK' });
    let status = (await (await fetch(`${decode.management}/v1/status`)).json()) as JsonBody;
    assert.deepEqual(
      { roleStatus: status.service.roleStatus, currentRole: status.service.currentRole },
      { roleStatus: 'RoleReady', currentRole: 'prefill' },
    );
    await postJson(`${decode.management}/v2/role/decode`, { local: [], peers: [] });
    status = (await (await fetch(`${decode.management}/v2/status`)).json()) as JsonBody;
    assert.equal(status.service.currentRole, 'decode');
    const flex = await postJson(`${single.management}/v1/role/flex`, {});
    assert.deepEqual(flex.json, { result: 'OK' });
    status = (await (await fetch(`${single.management}/v1/status`)).json()) as JsonBody;
    assert.equal(status.service.currentRole, 'flex');
    assert.equal((await postJson(`${decode.management}/v2/role/flex`, {})).status, 404);
  });
});

describe('llm-d (vLLM kv_transfer_params)', () => {
  test('prefill answers with the params; decode pulls with them and answers as one engine', async () => {
    const body = { model: MODEL_NAME, prompt: PROMPT, max_tokens: 10, temperature: 0 };
    const want = await postJson(`${single.url}/v1/completions`, body);
    const p = await postJson(`${prefill.url}/v1/completions`, {
      ...body,
      max_tokens: 1,
      stream: false,
      kv_transfer_params: {
        do_remote_decode: true,
        do_remote_prefill: false,
        remote_engine_id: null,
        remote_block_ids: null,
        remote_host: null,
        remote_port: null,
      },
    });
    assert.equal(p.status, 200, p.text);
    const params = p.json.kv_transfer_params;
    assert.equal(params.do_remote_prefill, true);
    assert.equal(params.do_remote_decode, false);
    assert.equal(params.remote_engine_id, (await prefill.client.info()).engineId);
    assert.ok(params.remote_block_ids.length > 0);
    assert.equal(typeof params.remote_host, 'string');
    assert.equal(typeof params.remote_port, 'number');
    const d = await postJson(`${decode.url}/v1/completions`, { ...body, kv_transfer_params: params });
    assert.equal(d.status, 200, d.text);
    assert.equal(d.json.choices[0].text, want.json.choices[0].text);
    assert.equal(d.json.usage.prompt_tokens_details.cached_tokens, d.json.usage.prompt_tokens - 1);
    assert.equal(d.json.kv_transfer_params, undefined);
    await Promise.all([waitAllFree(prefill.client), waitAllFree(decode.client)]);
  });

  test('bad kv_transfer_params are a 400 naming the field', async () => {
    const r = await postJson(`${decode.url}/v1/chat/completions`, {
      messages: [{ role: 'user', content: 'Hi' }],
      kv_transfer_params: { do_remote_prefill: true, remote_host: 'h', remote_port: 1 },
    });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.param, 'kv_transfer_params.remote_engine_id');
    const both = await postJson(`${decode.url}/v1/completions`, {
      prompt: 'Hi',
      kv_transfer_params: { do_remote_prefill: true, do_remote_decode: true },
    });
    assert.equal(both.status, 400);
  });
});
