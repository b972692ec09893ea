/**
 * `npm run soak -- --streams 256 --minutes 10 [--url URL --management-url URL --pid PID]`
 * drives a running `prism serve` (or, with `--spawn`, one it starts on free ports) with mixed
 * families, random disconnects and stopInfer cancels (bench/soak/soak.ts), and prints the
 * report. Exit code 1 when an invariant is broken: errors other than deliberate cancels, lost
 * streams, or KV blocks still in use once idle.
 *
 * `npm run soak -- --topology single|replicas:N|pd [--kill-every 10m] [--hang-every 15m]
 * [--hang-for 30s] --minutes 60 --streams 1024` starts engines behind `prism gateway` and
 * fails them on that schedule (bench/soak/fault-soak.ts): the report is per fault, and the
 * exit code is 1 when a request was lost, answered twice, failed without a clear error, or —
 * with a spare engine — failed before its client saw output; when a recovered answer differs
 * from the fault-free run of the same seed; or when KV blocks or gateway fds are not back.
 */
import { parseArgs } from 'node:util';
import { runFaultSoak, type FaultSoakReport } from './soak/fault-soak.js';
import { faultSchedule, parseDuration } from './soak/faults.js';
import { closeSoakClient, runSoak, type SoakReport } from './soak/soak.js';
import { startServeProcess, type ServeProcess } from './soak/serve-process.js';
import { parseTopology } from './soak/topology.js';

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '64' },
    minutes: { type: 'string', default: '1' },
    url: { type: 'string', default: 'http://127.0.0.1:1025' },
    'management-url': { type: 'string' },
    pid: { type: 'string' },
    model: { type: 'string' },
    spawn: { type: 'boolean', default: false },
    topology: { type: 'string' },
    'kill-every': { type: 'string' },
    'hang-every': { type: 'string' },
    'hang-for': { type: 'string', default: '30s' },
    retry: { type: 'string', default: 'on' },
    threads: { type: 'string', default: '1' },
    reference: { type: 'string', default: '300' },
    'gateway-log': { type: 'string' },
    records: { type: 'string' },
    'disconnect-rate': { type: 'string', default: '0.1' },
    'stop-rate': { type: 'string', default: '0.2' },
    'max-tokens': { type: 'string', default: '4-48' },
    seed: { type: 'string', default: '1' },
    json: { type: 'boolean', default: false },
  },
});

const [lo, hi] = values['max-tokens'].split('-').map(Number);
const log = (line: string): void => void process.stderr.write(line + '\n');
const common = {
  streams: Number(values.streams),
  seconds: Number(values.minutes) * 60,
  disconnectRate: Number(values['disconnect-rate']),
  stopRate: Number(values['stop-rate']),
  maxTokens: [lo, hi ?? lo] as const,
  seed: Number(values.seed),
  log,
};

const sample = (s: { rssMb?: number; openFds?: number }): string =>
  `rss ${s.rssMb ?? 'n/a'} MB fds ${s.openFds ?? 'n/a'}`;

function soakLines(r: SoakReport): string[] {
  return [
    `requests ${r.requests}: completed ${r.completed}, client disconnects ${r.deliberateDisconnects}, stopInfer ${r.deliberateStops}`,
    `errors by status ${JSON.stringify(r.errorsByStatus)}, transport errors ${r.transportErrors}, streams lost ${r.streamsLost}`,
    `TTFT ms p50 ${r.ttftMs.p50} p99 ${r.ttftMs.p99} (n ${r.ttftMs.n}); inter-token ms p50 ${r.interTokenMs.p50} p99 ${r.interTokenMs.p99} (n ${r.interTokenMs.n})`,
    `KV blocks in use after: ${r.kvBlocksInUseAfter} of ${r.kvBlocksTotal}`,
    `process: ${r.process.map((s) => `${s.at} ${sample(s)}`).join('; ')}`,
    `by scenario ${JSON.stringify(r.byScenario)}`,
    ...r.examples.map((e) => `  e.g. ${e}`),
  ];
}

function faultLines(r: FaultSoakReport): string[] {
  const t = r.totals;
  const lines = [
    `topology ${r.topology}`,
    ...soakLines(r.soak),
    `all requests: ${t.requests}; completed ${t.completed} (${t.retriedRecovered} after a retry); failed with a clear error ${t.failedClear} ` +
      `(${t.failedBeforeOutput} before any output, ${t.failedUntried} of them with an engine left untried, ${t.retriedFailed} after a retry); ` +
      `unclear errors ${t.failedUnclear}; ` +
      `lost ${t.lost}; duplicated ${t.duplicated}; cut or stopped on purpose ${t.deliberate}`,
  ];
  lines.push(...r.worst.map((w) => `    worst: ${w}`));
  r.faults.forEach((f, i) => {
    const ft = f.tally;
    lines.push(
      `fault ${i + 1}: ${f.kind} ${f.engine} at +${Math.round((f.at - r.faults[0].at) / 1000)} s` +
        `${f.recoveredAt ? `, back after ${((f.recoveredAt - f.at) / 1000).toFixed(1)} s` : ''}: ` +
        `in flight ${f.inFlight}; of ${ft.requests} in its window: retried and recovered ${ft.retriedRecovered}, ` +
        `completed ${ft.completed}, failed with a clear error ${ft.failedClear} (${ft.failedBeforeOutput} before any output, ` +
        `${ft.failedUntried} with an engine left), ` +
        `unclear ${ft.failedUnclear}, lost ${ft.lost}, duplicated ${ft.duplicated}; service gap ${(f.serviceGapMs / 1000).toFixed(1)} s`,
      ...f.examples.map((e) => `    e.g. ${e}`),
    );
  });
  const ref = r.reference;
  lines.push(
    `reference pass: ${ref.checked} recovered answers sent again: ${ref.mismatched} differ, ${ref.failed} failed`,
  );
  lines.push(...ref.examples.map((e) => `    e.g. ${e}`));
  for (const s of r.snapshots)
    lines.push(
      `${s.at}: ` +
        s.processes
          .map(
            (p) =>
              `${p.name}${p.pid ? ` (pid ${p.pid})` : ''} ${sample(p)}` +
              (p.kvBlocksTotal !== undefined
                ? ` KV ${p.kvBlocksInUse}/${p.kvBlocksTotal} (${p.kvBlocksLeased} leased)`
                : ''),
          )
          .join('; '),
    );
  lines.push(
    r.broken.length === 0 ? 'invariants: all held' : `invariants broken:\n  ${r.broken.join('\n  ')}`,
  );
  return lines;
}

if (values.topology !== undefined) {
  if (values.retry !== 'on' && values.retry !== 'off')
    throw new Error(`--retry: must be on or off, got '${values.retry}'`);
  const topology = parseTopology(values.topology);
  const report = await runFaultSoak({
    ...common,
    topology,
    faults: faultSchedule({
      seconds: common.seconds,
      killEveryMs: values['kill-every'] ? parseDuration(values['kill-every'], '--kill-every') : undefined,
      hangEveryMs: values['hang-every'] ? parseDuration(values['hang-every'], '--hang-every') : undefined,
    }),
    hangForMs: parseDuration(values['hang-for'], '--hang-for'),
    threads: Number(values.threads),
    gatewayArgs: ['--retry', values.retry],
    referenceLimit: Number(values.reference),
    ...(values['gateway-log'] ? { gatewayLog: values['gateway-log'] } : {}),
    ...(values.records ? { recordsPath: values.records } : {}),
  });
  closeSoakClient();
  process.stdout.write(
    (values.json ? JSON.stringify(report, null, 2) : faultLines(report).join('\n')) + '\n',
  );
  process.exitCode = report.broken.length > 0 ? 1 : 0;
} else {
  let server: ServeProcess | undefined;
  if (values.spawn) server = await startServeProcess();
  const url = server?.url ?? values.url;
  const managementUrl =
    server?.managementUrl ??
    values['management-url'] ??
    url.replace(/:(\d+)$/, (_, p: string) => `:${Number(p) + 1}`);
  const model =
    values.model ??
    ((await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] }).data[0].id;
  log(`soak: ${values.streams} streams for ${values.minutes} min against ${url} (model ${model})`);
  const report = await runSoak(
    { url, managementUrl, model, pid: server?.pid ?? (values.pid ? Number(values.pid) : undefined) },
    common,
  );
  closeSoakClient();
  if (server) await server.stop();
  process.stdout.write((values.json ? JSON.stringify(report, null, 2) : soakLines(report).join('\n')) + '\n');
  const bad =
    Object.keys(report.errorsByStatus).length > 0 ||
    report.transportErrors > 0 ||
    report.streamsLost > 0 ||
    report.kvBlocksInUseAfter !== 0;
  process.exitCode = bad ? 1 : 0;
}
