/**
 * A soak with engines failing under it (`npm run soak -- --topology …`, test/fault-soak.test.ts):
 * starts the topology's processes, drives the gateway with the soak's clients (soak.ts) while
 * faults.ts kills and hangs engines on its schedule, then — with every engine back — sends the
 * requests that were recovered on another engine again, fault-free, with the same seeds (the
 * reference pass) and compares their answers. RSS and open fds of every process, and every
 * engine's KV blocks in use, are read at the start, half-way and at the end (once idle).
 */
import { writeFileSync } from 'node:fs';
import { faultOutcomes, tally, type FaultOutcome, type Tally } from './fault-report.js';
import { runFaults, type FaultEvent, type ScheduledFault } from './faults.js';
import { processSample, runSoak, type ProcessSample, type SoakReport } from './soak.js';
import { sendOne, type RequestRecord } from './send.js';
import { startTopology, topologyName, type Topology, type TopologySpec } from './topology.js';

export interface FaultSoakOptions {
  readonly topology: TopologySpec;
  readonly streams: number;
  readonly seconds: number;
  readonly faults: readonly ScheduledFault[];
  readonly hangForMs: number;
  readonly maxTokens: readonly [number, number];
  readonly disconnectRate: number;
  readonly stopRate: number;
  readonly seed: number;
  /** Threads per engine. */
  readonly threads: number;
  /** Extra `prism gateway` flags (`--retry off`, health timing). */
  readonly gatewayArgs?: readonly string[];
  /** At most this many recovered requests are sent again in the reference pass. */
  readonly referenceLimit: number;
  /** Where to write the gateway's stderr (its retry and health lines) at the end. */
  readonly gatewayLog?: string;
  /** Where to write the faults (first line) and every request's record (one JSON line each, the answer's text left out). */
  readonly recordsPath?: string;
  readonly log?: (line: string) => void;
}

export interface ProcessSnapshot {
  readonly at: string;
  readonly processes: readonly (ProcessSample & {
    readonly name: string;
    readonly pid?: number;
    readonly kvBlocksInUse?: number;
    readonly kvBlocksLeased?: number;
    readonly kvBlocksTotal?: number;
  })[];
}

export interface ReferenceCheck {
  /** Recovered requests sent again. */
  readonly checked: number;
  /** Those whose answer differed from the fault-free one. */
  readonly mismatched: number;
  /** Those the reference pass could not complete. */
  readonly failed: number;
  readonly examples: readonly string[];
}

export interface FaultSoakReport {
  readonly topology: string;
  readonly soak: SoakReport;
  readonly totals: Tally;
  /** A few of the requests lost, answered twice or failed without a clear error (what broke). */
  readonly worst: readonly string[];
  readonly faults: readonly FaultOutcome[];
  readonly reference: ReferenceCheck;
  readonly snapshots: readonly ProcessSnapshot[];
  /** The invariants the run broke (empty: it passed). */
  readonly broken: readonly string[];
}

async function snapshot(t: Topology, at: string): Promise<ProcessSnapshot> {
  const engines = await Promise.all(
    t.engines.map(async (e) => {
      const pid = e.pid();
      const s = await e.status(5000);
      return {
        name: e.name,
        ...(pid !== undefined ? { pid } : {}),
        ...processSample(pid, at),
        ...(s
          ? {
              kvBlocksInUse: s.totalBlocks - s.freeBlocks,
              kvBlocksLeased: s.leasedBlocks,
              kvBlocksTotal: s.totalBlocks,
            }
          : {}),
      };
    }),
  );
  return {
    at,
    processes: [{ name: 'gateway', pid: t.gateway.pid, ...processSample(t.gateway.pid, at) }, ...engines],
  };
}

/** Sends the recovered requests again (the faults are over) and compares their answers. */
async function referencePass(
  t: Topology,
  records: readonly RequestRecord[],
  limit: number,
): Promise<ReferenceCheck> {
  const recovered = records.filter((r) => r.outcome === 'completed' && r.retries > 0).slice(0, limit);
  let mismatched = 0;
  let failed = 0;
  const examples: string[] = [];
  const queue = [...recovered];
  const worker = async (): Promise<void> => {
    for (let r = queue.shift(); r; r = queue.shift()) {
      const again = await sendOne(t, {
        ...r.plan,
        id: `${r.plan.id}-ref`,
        cutAfterEvents: undefined,
        cutBeforeHeadersMs: undefined,
      });
      if (again.outcome !== 'completed') {
        failed++;
        if (examples.length < 5)
          examples.push(`${r.plan.id}: the reference pass got ${again.outcome} ${again.detail ?? ''}`);
      } else if (again.text !== r.text) {
        mismatched++;
        if (examples.length < 5)
          examples.push(
            `${r.plan.id} (${r.plan.scenario.name}): ${JSON.stringify(r.text)} ≠ reference ${JSON.stringify(again.text)}`,
          );
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return { checked: recovered.length, mismatched, failed, examples };
}

/** The run's invariants, as sentences for what it broke. */
function verdict(
  r: Omit<FaultSoakReport, 'broken'>,
  spare: boolean,
  events: readonly FaultEvent[],
): string[] {
  const broken: string[] = [];
  const t = r.totals;
  if (t.lost > 0) broken.push(`${t.lost} request(s) lost (never answered nor failed)`);
  if (t.duplicated > 0) broken.push(`${t.duplicated} request(s) got part of their answer twice`);
  if (t.failedUnclear > 0) broken.push(`${t.failedUnclear} request(s) failed without a clear error`);
  if (r.reference.mismatched > 0)
    broken.push(`${r.reference.mismatched} recovered answer(s) differ from the fault-free run`);
  if (r.reference.failed > 0) broken.push(`${r.reference.failed} reference request(s) failed`);
  // With a spare engine, a request whose client had nothing yet is not failed while an engine
  // it was not sent to is left: it is retried there.
  if (spare && t.failedUntried > 0)
    broken.push(
      `${t.failedUntried} request(s) failed before any of their answer reached the client while an engine was left (not retried)`,
    );
  for (const e of events)
    if (e.error) broken.push(`${e.engine} did not restart after fault at ${new Date(e.at).toISOString()}`);
  const end = r.snapshots.at(-1)!;
  for (const p of end.processes) {
    if (p.kvBlocksInUse !== undefined && (p.kvBlocksInUse > 0 || (p.kvBlocksLeased ?? 0) > 0))
      broken.push(`${p.name}: ${p.kvBlocksInUse} KV block(s) in use (${p.kvBlocksLeased} leased) once idle`);
    if (p.name !== 'gateway' && p.kvBlocksInUse === undefined) broken.push(`${p.name}: no status at the end`);
  }
  const start = r.snapshots[0].processes[0];
  const gw = end.processes[0];
  if (start.openFds !== undefined && gw.openFds !== undefined && gw.openFds > start.openFds + 8)
    broken.push(`gateway fds ${start.openFds} → ${gw.openFds} once idle`);
  return broken;
}

export async function runFaultSoak(o: FaultSoakOptions): Promise<FaultSoakReport> {
  const log = o.log ?? (() => {});
  const t = await startTopology(o.topology, { threads: o.threads, gatewayArgs: o.gatewayArgs, log });
  try {
    const records: RequestRecord[] = [];
    const outputTimes: number[] = [];
    const snapshots = [await snapshot(t, 'start')];
    const middle = new Promise<ProcessSnapshot>((resolve) =>
      setTimeout(() => resolve(snapshot(t, 'middle')), (o.seconds * 1000) / 2),
    );
    const faults = runFaults(t.engines, o.faults, o.hangForMs, log);
    log(
      `soak: ${topologyName(o.topology)}, ${o.streams} streams for ${o.seconds} s, ${o.faults.length} fault(s)`,
    );
    const soak = await runSoak(
      { url: t.url, managementUrl: t.managementUrl, pid: t.gateway.pid, model: t.model },
      {
        streams: o.streams,
        seconds: o.seconds,
        disconnectRate: o.disconnectRate,
        stopRate: o.stopRate,
        maxTokens: o.maxTokens,
        seed: o.seed,
        log,
        observer: { request: (r) => records.push(r), output: (at) => outputTimes.push(at) },
        beforeIdle: async () => {
          faults.cancel();
          await faults.settled();
        },
      },
    );
    snapshots.push(await middle, await snapshot(t, 'end'));
    outputTimes.sort((a, b) => a - b);
    const clientsEnd = records.reduce((m, r) => Math.max(m, r.endedAt), 0);
    // Engines a request can be sent to in turn: the replicas; a split pair's retry goes to its
    // decode engine only for a failed prefill, so "an engine left" is not counted there.
    const replicas = o.topology.kind === 'replicas' ? o.topology.n : 1;
    log(`soak: reference pass over the recovered requests (at most ${o.referenceLimit})`);
    const reference = await referencePass(t, records, o.referenceLimit);
    if (o.recordsPath)
      writeFileSync(
        o.recordsPath,
        [
          JSON.stringify({ faults: faults.events }),
          ...records.map(({ plan, body: _body, text, ...r }) =>
            JSON.stringify({ ...r, id: plan.id, scenario: plan.scenario.name, textLength: text?.length }),
          ),
        ].join('\n') + '\n',
      );
    const partial = {
      topology: topologyName(o.topology),
      soak,
      totals: tally(records, replicas),
      worst: records
        .filter(
          (r) =>
            r.duplicated ||
            r.outcome === 'lost' ||
            r.outcome === 'transport' ||
            (r.outcome.startsWith('status:') && !r.clearError),
        )
        .slice(0, 8)
        .map(
          (r) =>
            `${r.plan.id} ${r.plan.scenario.name} ${r.outcome} after ${r.endedAt - r.startedAt} ms: ${r.duplicated ?? r.detail ?? ''}`,
        ),
      faults: faultOutcomes(faults.events, records, outputTimes, clientsEnd, replicas),
      reference,
      snapshots,
    };
    return { ...partial, broken: verdict(partial, o.topology.kind === 'replicas', faults.events) };
  } finally {
    await t.close();
    if (o.gatewayLog) writeFileSync(o.gatewayLog, t.gateway.stderr());
  }
}
