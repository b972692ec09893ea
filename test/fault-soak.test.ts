/**
 * The CI-sized fault soak (bench/soak/fault-soak.ts, `npm run soak -- --topology …` at full
 * size): two `prism engine` processes behind `prism gateway`, 16 clients mixing every family
 * for 70 s while one engine is hung (SIGSTOP for 15 s, then SIGCONT) and the other killed
 * (SIGKILL, then started again on its socket). The invariants of the hour-long run: nothing
 * lost, nothing answered twice, every failure a clear error, no request failed before its
 * client saw output while an engine was left (it is retried), every recovered answer equal to
 * a fault-free run of the same seed, KV blocks and gateway fds back once idle — and each fault
 * had requests retried and recovered.
 *
 * `PRISM_FAULT_SOAK_RETRY=off` runs the same soak with `prism gateway --retry off`, which
 * must fail it (docs/reliability.md quotes such a run).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { runFaultSoak } from '../bench/soak/fault-soak.js';
import { closeSoakClient } from '../bench/soak/soak.js';

const retry = process.env.PRISM_FAULT_SOAK_RETRY ?? 'on';

after(() => closeSoakClient());

test('fault soak: two replicas, one hung and one killed under 16 streams', async (t) => {
  const r = await runFaultSoak({
    topology: { kind: 'replicas', n: 2 },
    streams: 16,
    seconds: 70,
    faults: [
      { kind: 'hang', atMs: 10_000 },
      { kind: 'kill', atMs: 40_000 },
    ],
    hangForMs: 15_000,
    maxTokens: [4, 24],
    disconnectRate: 0.1,
    stopRate: 0.2,
    seed: 45,
    threads: 1,
    gatewayArgs: ['--retry', retry, '--health-timeout-ms', '2500'],
    referenceLimit: 60,
    log: (line) => t.diagnostic(line),
  });
  const summary = JSON.stringify({ ...r, soak: { ...r.soak, examples: undefined } });
  process.stderr.write(`fault soak report: ${summary}\n`);
  for (const f of r.faults)
    t.diagnostic(
      `${f.kind} ${f.engine}: in flight ${f.inFlight}, retried and recovered ${f.tally.retriedRecovered}, ` +
        `failed ${f.tally.failedClear} (${f.tally.failedBeforeOutput} before output), gap ${f.serviceGapMs} ms`,
    );
  assert.deepEqual(r.broken, [], summary);
  assert.equal(r.faults.length, 2, summary);
  for (const f of r.faults)
    assert.ok(f.tally.retriedRecovered > 0, `${f.kind}: nothing was retried: ${summary}`);
  assert.ok(r.reference.checked > 0, summary);
});
