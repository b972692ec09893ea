/**
 * The short CI soak (bench/soak/): `prism serve` as a child process, 64 concurrent clients for
 * 60 s mixing every family, streamed and unary, with random client disconnects and stopInfer
 * cancels. Invariants as for `npm run soak`: no error other than the deliberate cancels, no lost
 * stream, every KV block back once idle, open fds back to where they were, RSS after warm-up
 * growing < 5%. Then SIGTERM under load: the streams accepted before it finish with their full
 * output, later requests are refused, and the process exits 0.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { closeSoakClient, runSoak } from '../bench/soak/soak.js';
import { startServeProcess, type ServeProcess } from '../bench/soak/serve-process.js';

const STREAMS = 64;
let server: ServeProcess;
let model: string;
before(async () => {
  server = await startServeProcess(['--threads', '2']);
  model = ((await (await fetch(`${server.url}/v1/models`)).json()) as { data: { id: string }[] }).data[0].id;
});
after(async () => {
  closeSoakClient();
  if (server && server.child.exitCode === null) await server.stop();
});

test('soak: 64 streams × 60 s of mixed families, disconnects and cancels', async () => {
  const r = await runSoak(
    { url: server.url, managementUrl: server.managementUrl, pid: server.pid, model },
    { streams: STREAMS, seconds: 60, disconnectRate: 0.15, stopRate: 0.3, maxTokens: [2, 12], seed: 7 },
  );
  const summary = JSON.stringify(r);
  process.stderr.write(`soak report: ${summary}\n`);
  assert.ok(r.completed > STREAMS, summary);
  assert.ok(r.deliberateDisconnects > 0, `the run cut no client: ${summary}`);
  assert.deepEqual(r.errorsByStatus, {}, summary);
  assert.equal(r.transportErrors, 0, summary);
  assert.equal(r.streamsLost, 0, summary);
  assert.equal(r.kvBlocksInUseAfter, 0, summary);
  const [start, middle, end] = r.process;
  assert.ok(end.openFds! <= start.openFds! + 8, `fds ${start.openFds} → ${end.openFds}`);
  assert.ok(end.rssMb! < middle.rssMb! * 1.05, `RSS after warm-up ${middle.rssMb} → ${end.rssMb} MB`);
});

test('SIGTERM under load: accepted streams finish in full, later requests are refused, exit 0', async () => {
  const body = (n: number): string =>
    JSON.stringify({ model, prompt: 'Count: one, two,', max_tokens: n, stream: false, ignore_eos: true });
  const post = (n: number): Promise<Response> =>
    fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body(n),
    });
  const accepted = Array.from({ length: 6 }, () => post(24));
  // Every request is in the engine before the signal.
  for (let i = 0; i < 100; i++) {
    const s = (await (await fetch(`${server.managementUrl}/v1/status`)).json()) as {
      resource: { runningRequestNum: number; waitingRequestNum: number };
    };
    if (s.resource.runningRequestNum + s.resource.waitingRequestNum >= 6) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const exit = server.stop(60000);
  // The server logs "SIGTERM: draining" in the same tick as it starts refusing requests.
  await server.waitForLog(/SIGTERM: draining/);
  const late = await post(4).then(
    (r) => r.status,
    () => 'refused',
  );
  assert.ok(late === 503 || late === 'refused', `a request after SIGTERM got ${late}`);
  for (const res of await Promise.all(accepted)) {
    assert.equal(res.status, 200);
    const j = (await res.json()) as {
      choices: { finish_reason: string }[];
      usage: { completion_tokens: number };
    };
    assert.equal(j.choices[0].finish_reason, 'length');
    assert.equal(j.usage.completion_tokens, 24);
  }
  assert.equal(await exit, 0, server.stderr());
});
