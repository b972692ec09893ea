/**
 * A gateway that stalls with requests waiting on its idle keep-alive connections (what lost
 * 566 requests in the hour-long split-pair soak, docs/reliability.md "Faults across engines"):
 * the pair's decode engine is killed, so every request is refused with a 503; the clients'
 * connections go back to their pool, and the `prism gateway` process is stopped (SIGSTOP) for
 * longer than its keep-alive timeout — the soak's gateway went 12 s between two turns of its
 * event loop, starved of CPU while it answered a flood of such 503s — while every client sends
 * its next request on its idle connection. When the gateway runs again, each of those requests
 * must get its complete 503 in its family's error shape; Node's own keep-alive timer, left to
 * itself, closes each such connection with the request unread, and the client sees a reset.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { closeSoakClient, sendOne, type Plan, type RequestRecord } from '../bench/soak/send.js';
import { scenarios } from '../bench/soak/scenarios.js';
import { startTopology } from '../bench/soak/topology.js';

const CLIENTS = 24;
/** Longer than the gateway's keep-alive timeout (5 s) plus the second Node adds to it. */
const STALL_MS = 7500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const batch = (round: string): Plan[] =>
  Array.from({ length: CLIENTS }, (_, i) => ({
    scenario: scenarios[i % scenarios.length],
    prompt: 'Name a colour.',
    maxTokens: 4,
    id: `stall-${round}-${i}`,
    seed: i,
    stopAfterFirstToken: false,
  }));

const summary = (rs: readonly RequestRecord[]) =>
  rs.map((r) => `${r.plan.id} ${r.outcome}${r.detail ? `: ${r.detail.slice(0, 100)}` : ''}`).join('\n');

test('pair with its decode engine down: requests sent on idle connections while the gateway stalls each get a whole 503', async (t) => {
  const topology = await startTopology({ kind: 'pd' }, { threads: 1, log: (l) => t.diagnostic(l) });
  const gatewayPid = topology.gateway.pid;
  try {
    const target = { url: topology.url, model: topology.model };
    topology.engines.find((e) => e.role === 'decode')!.kill();
    // Until the gateway has taken the dead engine out of rotation, a request may wait for it.
    let warm: RequestRecord[] = [];
    for (let round = 0; round < 30; round++) {
      warm = await Promise.all(batch(`warm-${round}`).map((p) => sendOne(target, p)));
      if (warm.every((r) => r.outcome === 'status:503')) break;
      await sleep(1000);
    }
    assert.ok(
      warm.every((r) => r.outcome === 'status:503' && r.clearError),
      `not refused yet:\n${summary(warm)}`,
    );
    // Every client's connection is idle in its pool now; the gateway's keep-alive timers run.
    process.kill(gatewayPid, 'SIGSTOP');
    const sent = Promise.all(batch('stalled').map((p) => sendOne(target, p)));
    await sleep(STALL_MS);
    process.kill(gatewayPid, 'SIGCONT');
    const records = await sent;
    const wrong = records.filter((r) => r.outcome !== 'status:503' || !r.clearError);
    assert.equal(wrong.length, 0, `${wrong.length} of ${CLIENTS} not a clear 503:\n${summary(wrong)}`);
    // The stall was real: nothing was answered before the gateway ran again.
    for (const r of records) assert.ok(r.endedAt - r.startedAt >= STALL_MS - 500, summary([r]));
  } finally {
    process.kill(gatewayPid, 'SIGCONT');
    closeSoakClient();
    await topology.close();
  }
});
