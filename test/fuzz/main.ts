/**
 * `npm run fuzz -- [--cases N] [--seed S] [--concurrency C] [--json] [--report-status 424]`: the gateway fuzzer
 * against an in-process server (test/fuzz/server.ts). Prints the statuses seen, RSS before and
 * after, and every invariant broken (with its seed and case index); exits 1 if any was.
 */
import { parseArgs } from 'node:util';
import { MODEL_NAME } from '../gateways-harness.js';
import { closeFuzzAgent, runFuzz } from './fuzz.js';
import { heapMb, rssMb, startFuzzServer } from './server.js';

const { values } = parseArgs({
  options: {
    cases: { type: 'string', default: '10000' },
    seed: { type: 'string' },
    concurrency: { type: 'string', default: '4' },
    json: { type: 'boolean', default: false },
    'report-status': { type: 'string', multiple: true },
  },
});
const cases = Number(values.cases);
const seed = values.seed !== undefined ? Number(values.seed) : Date.now() % 2 ** 31;
if (!Number.isInteger(cases) || cases < 1)
  throw new Error(`--cases: must be a positive integer, got ${values.cases}`);

const h = await startFuzzServer();
const rss: number[] = [rssMb()];
const heap: number[] = [heapMb()];
const every = Math.max(1, Math.floor(cases / 10));
const report = await runFuzz(
  { service: h.url, management: h.managementUrl, metrics: h.metricsUrl },
  {
    cases,
    seed,
    servedModel: MODEL_NAME,
    concurrency: Number(values.concurrency),
    reportStatuses: (values['report-status'] ?? []).map(Number),
    onProgress: (done) => {
      if (done % every === 0) {
        rss.push(rssMb());
        heap.push(heapMb());
        if (!values.json)
          process.stderr.write(
            `fuzz: ${done}/${cases} cases, rss ${rss.at(-1)} MB, heap ${heap.at(-1)} MB\n`,
          );
      }
    },
  },
);
const health = await fetch(`${h.url}/health`).then(
  (r) => r.status,
  (e: Error) => e.message,
);
closeFuzzAgent();
await h.close();
const out = {
  ...report,
  healthAfter: health,
  rssMb: rss,
  heapMb: heap,
  failures: report.failures.slice(0, 50),
};
if (values.json) process.stdout.write(JSON.stringify(out, null, 2) + '\n');
else {
  process.stdout.write(
    `fuzz: ${report.cases} cases, seed ${seed}, ${report.seconds.toFixed(1)} s; statuses ${JSON.stringify(report.byStatus)}\n` +
      `rss (MB) at each tenth: ${rss.join(' ')}; JS heap (MB): ${heap.join(' ')}; /health after: ${health}\n` +
      `${report.failures.length} invariant violations\n`,
  );
  for (const f of report.failures.slice(0, 20)) process.stdout.write(JSON.stringify(f) + '\n');
}
process.exitCode = report.failures.length === 0 && health === 200 ? 0 : 1;
