/**
 * `npm run soak -- --streams 256 --minutes 10 [--url URL --management-url URL --pid PID]`
 * drives a running `prism serve` (or, with `--spawn`, one it starts on free ports) with mixed
 * families, random disconnects and stopInfer cancels (bench/soak/soak.ts), and prints the
 * report. Exit code 1 when an invariant is broken: errors other than deliberate cancels, lost
 * streams, or KV blocks still in use once idle.
 */
import { parseArgs } from 'node:util';
import { closeSoakClient, runSoak, type SoakReport } from './soak/soak.js';
import { startServeProcess, type ServeProcess } from './soak/serve-process.js';

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '64' },
    minutes: { type: 'string', default: '1' },
    url: { type: 'string', default: 'http://127.0.0.1:1025' },
    'management-url': { type: 'string' },
    pid: { type: 'string' },
    model: { type: 'string' },
    spawn: { type: 'boolean', default: false },
    'disconnect-rate': { type: 'string', default: '0.1' },
    'stop-rate': { type: 'string', default: '0.2' },
    'max-tokens': { type: 'string', default: '4-48' },
    seed: { type: 'string', default: '1' },
    json: { type: 'boolean', default: false },
  },
});

const [lo, hi] = values['max-tokens'].split('-').map(Number);
let server: ServeProcess | undefined;
if (values.spawn) server = await startServeProcess();
const url = server?.url ?? values.url;
const managementUrl =
  server?.managementUrl ??
  values['management-url'] ??
  url.replace(/:(\d+)$/, (_, p: string) => `:${Number(p) + 1}`);
const model =
  values.model ?? ((await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] }).data[0].id;
const log = (line: string): void => void process.stderr.write(line + '\n');
log(`soak: ${values.streams} streams for ${values.minutes} min against ${url} (model ${model})`);
const report: SoakReport = await runSoak(
  { url, managementUrl, model, pid: server?.pid ?? (values.pid ? Number(values.pid) : undefined) },
  {
    streams: Number(values.streams),
    seconds: Number(values.minutes) * 60,
    disconnectRate: Number(values['disconnect-rate']),
    stopRate: Number(values['stop-rate']),
    maxTokens: [lo, hi ?? lo],
    seed: Number(values.seed),
    log,
  },
);
closeSoakClient();
if (server) await server.stop();
if (values.json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
else {
  const r = report;
  const lines = [
    `requests ${r.requests}: completed ${r.completed}, client disconnects ${r.deliberateDisconnects}, stopInfer ${r.deliberateStops}`,
    `errors by status ${JSON.stringify(r.errorsByStatus)}, transport errors ${r.transportErrors}, streams lost ${r.streamsLost}`,
    `TTFT ms p50 ${r.ttftMs.p50} p99 ${r.ttftMs.p99} (n ${r.ttftMs.n}); inter-token ms p50 ${r.interTokenMs.p50} p99 ${r.interTokenMs.p99} (n ${r.interTokenMs.n})`,
    `KV blocks in use after: ${r.kvBlocksInUseAfter} of ${r.kvBlocksTotal}`,
    `process: ${r.process.map((s) => `${s.at} rss ${s.rssMb ?? 'n/a'} MB fds ${s.openFds ?? 'n/a'}`).join('; ')}`,
    `by scenario ${JSON.stringify(r.byScenario)}`,
    ...r.examples.map((e) => `  e.g. ${e}`),
  ];
  process.stdout.write(lines.join('\n') + '\n');
}
const bad =
  Object.keys(report.errorsByStatus).length > 0 ||
  report.transportErrors > 0 ||
  report.streamsLost > 0 ||
  report.kvBlocksInUseAfter !== 0;
process.exitCode = bad ? 1 : 0;
