/**
 * Fault (c) of the reliability issue through MindIE's management route: `GET /stopService`
 * while `prism serve` (a child process) is under load. Every request accepted before the stop
 * (unary and streamed) finishes with its full output, requests after it get 503 in their
 * family's shape, /stopService answers 200 once they are done, and the process exits 0.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startServeProcess, type ServeProcess } from '../bench/soak/serve-process.js';
import { readSse } from './gateways-sse.js';

const TOKENS = 24;
let server: ServeProcess;
let model: string;

before(async () => {
  server = await startServeProcess(['--threads', '2']);
  model = ((await (await fetch(`${server.url}/v1/models`)).json()) as { data: { id: string }[] }).data[0].id;
});
after(async () => {
  if (server && server.child.exitCode === null) await server.stop();
});

interface Status {
  /** The listener answered 503: the gateway is stopping (its engine client drains). */
  stopping: boolean;
  resource?: { runningRequestNum: number; waitingRequestNum: number };
}

/** The management listener's /v1/status; null once the server no longer answers. */
async function status(): Promise<Status | null> {
  try {
    const r = await fetch(`${server.managementUrl}/v1/status`);
    const j = (await r.json()) as { service?: { roleStatus: string }; resource?: Status['resource'] };
    return { stopping: r.status === 503 || j.service?.roleStatus === 'RoleUnknown', resource: j.resource };
  } catch {
    return null;
  }
}

async function waitForStatus(pred: (s: Status | null) => boolean): Promise<Status | null> {
  for (;;) {
    const s = await status();
    if (pred(s)) return s;
    await new Promise((r) => setTimeout(r, 20));
  }
}

const post = (path: string, body: object): Promise<Response> =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

test('/stopService under load: accepted requests finish in full, later ones get 503, exit 0', async () => {
  const unary = Array.from({ length: 3 }, (_, i) =>
    post('/v1/completions', { model, prompt: `Count: ${i}, `, max_tokens: TOKENS, ignore_eos: true }),
  );
  const streams = Array.from({ length: 3 }, (_, i) =>
    post('/v1/chat/completions', {
      model,
      messages: [{ role: 'user', content: `Tell story number ${i}.` }],
      max_tokens: TOKENS,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    }),
  );
  // Every request is in the engine before the stop (or, on a machine fast enough to finish a
  // unary one first — its headers come with its last token — answered already: accepted too).
  // A stream's headers come with its first token: it is running.
  await Promise.all(streams);
  let answered = 0;
  for (const r of unary)
    void r.then(
      () => answered++,
      () => answered++,
    );
  await waitForStatus(
    (s) =>
      answered > 0 ||
      (s?.resource !== undefined && s.resource.runningRequestNum + s.resource.waitingRequestNum >= 6),
  );

  const stop = fetch(`${server.managementUrl}/stopService`);
  // The gateway refuses new work from the moment the route runs, and says so on /v1/status
  // (503), until the server is gone (null: a fast machine may finish the drain first).
  const seen = await waitForStatus((s) => s === null || s.stopping);
  if (seen !== null) {
    const late = await post('/v1/completions', { model, prompt: 'late', max_tokens: 4 });
    assert.equal(late.status, 503);
    const body = (await late.json()) as { error: { type: string } };
    assert.equal(body.error.type, 'service_unavailable');
    const tgi = await post('/generate', { inputs: 'late', parameters: { max_new_tokens: 4 } });
    assert.equal(tgi.status, 503);
    assert.equal(((await tgi.json()) as { error_type: string }).error_type, 'unavailable');
    const again = await fetch(`${server.managementUrl}/stopService`);
    assert.equal(again.status, 503);
  }

  for (const res of await Promise.all(unary)) {
    assert.equal(res.status, 200);
    const j = (await res.json()) as {
      choices: { finish_reason: string }[];
      usage: { completion_tokens: number };
    };
    assert.equal(j.choices[0].finish_reason, 'length');
    assert.equal(j.usage.completion_tokens, TOKENS);
  }
  for (const res of await Promise.all(streams)) {
    assert.equal(res.status, 200);
    const data = (await readSse(res)).map((e) => e.data);
    assert.equal(data[data.length - 1], '[DONE]');
    const chunks = data.slice(0, -1).map(
      (d) =>
        JSON.parse(d) as {
          choices: { finish_reason: string | null }[];
          usage?: { completion_tokens: number } | null;
        },
    );
    assert.ok(chunks.some((c) => c.choices[0]?.finish_reason === 'length'));
    assert.equal(chunks[chunks.length - 1].usage?.completion_tokens, TOKENS);
  }

  const stopped = await stop;
  assert.equal(stopped.status, 200);
  assert.equal(await stopped.text(), '');
  assert.equal(await server.exited, 0, server.stderr());
  assert.match(server.stderr(), /\/stopService: draining/);
});
