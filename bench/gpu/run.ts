/**
 * The GPU benchmark (issue 29): Prism's CUDA backend on random-weight files with the shapes
 * of Llama-3.2-1B/3B and Llama-3.1-8B (scripts/make-gpu-models.py writes them on the
 * machine), and PyTorch + transformers on the same GPU and the same BF16 weights side by side
 * (bench/gpu/torch_peer.py). One table:
 *   single-stream decode tok/s and its share of the device's read bandwidth measured in the
 *   same run (bytes read per token ÷ GB/s); the host's share of a decode step; aggregate
 *   decode at 64 and 256 sequences; prefill of one 2,048-token prompt (tok/s, TFLOP/s).
 *
 *   node --import tsx bench/gpu/run.ts [--sizes 1b,3b,8b] [--types bf16,q4_k,q8_0] [--peer no]
 *                                      [--kernels legacy,fast] [--runs N] [--budget-s S] [--json FILE]
 *
 * Each row runs every kernel set of --kernels (LoadModelOptions.cudaKernels) on the same file:
 * tok/s side by side, whether the sets' greedy tokens agree, and the bytes-and-launches
 * model's prediction of each set's share of the read rate (bench/gpu/roofline-model.ts) beside
 * the measured one.
 *
 * --budget-s: rows that would start after that many seconds are listed as skipped (the
 * device check runs under a time limit).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { projectRoot } from '../../engine/default-model.js';
import { cudaDevices, parseDevice } from '../../native/native.js';
import { fmt, median, nowMs, pairedRooflinePercent } from '../stats.js';
import { cudaKernelsList, kernelSetColumns } from './kernel-sets.js';
import { benchPrismGpu, type GpuBenchResult } from './prism-gpu.js';

interface PeerRow {
  measure: string;
  tok_s: number;
  tflops?: number;
  warmup_s?: number;
}

interface Row {
  size: string;
  type: string;
  path: string;
  bytesPerToken: number;
  kernels: string;
  prism?: GpuBenchResult;
  peer?: PeerRow[];
  error?: string;
  skipped?: string;
}

const root = projectRoot();
const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1b,3b,8b' },
    types: { type: 'string', default: 'bf16,q4_k,q8_0' },
    models: { type: 'string', default: join(root, 'models', 'gpu') },
    tokenizer: { type: 'string' },
    device: { type: 'string', default: 'cuda:0' },
    peer: { type: 'string', default: 'yes' },
    kernels: { type: 'string', default: 'legacy,fast' },
    runs: { type: 'string', default: '3' },
    'budget-s': { type: 'string', default: '0' },
    json: { type: 'string' },
    // Smaller runs (a smoke test of the script, e.g. on the CPU emulation of CUDA):
    layers: { type: 'string' },
    vocab: { type: 'string' },
    'new-tokens': { type: 'string', default: '128' },
    'prompt-tokens': { type: 'string', default: '32' },
    aggregate: { type: 'string', default: '64,256' },
    'aggregate-new-tokens': { type: 'string', default: '32' },
    'prefill-tokens': { type: 'string', default: '2048' },
  },
});
const device = parseDevice(values.device!);
const runs = Number(values.runs);
const budgetMs = Number(values['budget-s']) * 1000;
const t0 = nowMs();
const gpu = cudaDevices().find((d) => d.device === device);
if (!gpu) throw new Error(`no ${device}`);

function python(args: string[], timeoutS = 900): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync('python3', args, {
    cwd: root,
    encoding: 'utf8',
    timeout: timeoutS * 1000,
    maxBuffer: 1 << 26,
  });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

function modelFile(size: string, type: string): { path: string; bytesPerToken: number } {
  const common = ['scripts/make-gpu-models.py', '--sizes', size, '--types', type, '--out', values.models!];
  if (values.tokenizer) common.push('--tokenizer', values.tokenizer);
  if (values.layers) common.push('--layers', values.layers);
  if (values.vocab) common.push('--vocab', values.vocab);
  const made = python(common);
  if (made.status !== 0) throw new Error(`make-gpu-models failed: ${made.stderr.trim()}`);
  const listed = python([...common, '--list']);
  const entry = JSON.parse(listed.stdout.trim().split('\n')[0]!) as { path: string; bytesPerToken: number };
  return entry;
}

const kernelSets = cudaKernelsList(values.kernels!);
const rows: Row[] = [];
for (const size of values.sizes!.split(',')) {
  for (const type of values.types!.split(',')) {
    let peerRows: PeerRow[] | undefined;
    for (const kernels of kernelSets) {
      const row: Row = { size, type, path: '', bytesPerToken: 0, kernels };
      rows.push(row);
      if (budgetMs > 0 && nowMs() - t0 > budgetMs) {
        row.skipped = `time budget of ${values['budget-s']} s spent`;
        continue;
      }
      try {
        const m = modelFile(size, type);
        row.path = m.path;
        row.bytesPerToken = m.bytesPerToken;
        process.stderr.write(`bench/gpu: ${size} ${type}: Prism (${kernels} kernels) on ${device} ...\n`);
        row.prism = await benchPrismGpu(m.path, {
          device,
          cudaKernels: kernels,
          blockSize: 128,
          promptTokens: Number(values['prompt-tokens']),
          newTokens: Number(values['new-tokens']),
          aggregateSequences: values.aggregate!.split(',').map(Number),
          aggregateNewTokens: Number(values['aggregate-new-tokens']),
          prefillTokens: Number(values['prefill-tokens']),
          runs,
        });
        // The peer once per file, on the row of the first kernel set.
        if (type === 'bf16' && values.peer === 'yes' && peerRows === undefined) {
          process.stderr.write(`bench/gpu: ${size} ${type}: PyTorch ...\n`);
          const r = python(['bench/gpu/torch_peer.py', '--model', m.path, '--runs', String(runs)], 1200);
          peerRows = r.stdout
            .split('\n')
            .filter((l) => l.startsWith('{'))
            .map((l) => JSON.parse(l) as PeerRow);
          row.peer = peerRows;
          if (r.status !== 0)
            row.error = `PyTorch peer exited ${r.status}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`;
        }
      } catch (e) {
        row.error = (e as Error).message;
      }
    }
  }
}

// The PyTorch peer ran once per file (on its first kernel set's row).
const peer = (r: Row, measure: string) =>
  rows
    .find((x) => x.size === r.size && x.type === r.type && x.peer)
    ?.peer?.find((p) => p.measure === measure);
const lines = [
  `GPU benchmark on ${gpu.name} (${device}, ${(gpu.totalBytes / 2 ** 30).toFixed(0)} GiB, ${gpu.multiprocessors} SMs); ${runs} runs, medians`,
  '| shape | type | kernels | GB/token | read GB/s | Prism decode tok/s (% of read) | model % of read | launches/step | same tokens | PyTorch decode | host ms/step | Prism agg 64 | PyTorch agg 64 | Prism agg 256 | Prism prefill 2048 tok/s (TFLOP/s) | PyTorch prefill (TFLOP/s) |',
  '|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|',
];
for (const r of rows) {
  if (r.skipped || !r.prism) {
    lines.push(
      `| ${r.size} | ${r.type} | ${r.kernels} | ${r.skipped ?? `failed: ${r.error ?? '?'}`} ||||||||||||||`,
    );
    continue;
  }
  const p = r.prism;
  const bw = p.bandwidthGBs;
  // Each run against the bandwidth probed just before it, then the median (bench/stats.ts).
  const pct = p.single && bw.length ? pairedRooflinePercent(p.single.runsTokS, bw, r.bytesPerToken) : NaN;
  const agg = (n: number) => p.aggregate.find((a) => a.sequences === n)?.tokS;
  const pd = peer(r, 'decode1');
  const k = kernelSetColumns(r, rows, Number(values['prompt-tokens']) + Number(values['new-tokens']) / 2, bw);
  const pa = peer(r, 'aggregate');
  const pp = peer(r, 'prefill');
  lines.push(
    `| ${r.size} | ${r.type} | ${r.kernels} | ${fmt(r.bytesPerToken / 1e9, 2)} | ${fmt(bw.length ? median(bw) : NaN, 0)} | ` +
      `${fmt(p.single?.tokS, 1)} (${fmt(pct, 0)}%) | ${k.model} | ${k.launches} | ${k.sameTokens} | ${fmt(pd?.tok_s, 1)} | ${fmt(p.single?.hostMs, 3)} | ` +
      `${fmt(agg(64), 0)} | ${fmt(pa?.tok_s, 0)} | ${fmt(agg(256), 0)} | ` +
      `${fmt(p.prefill?.tokS, 0)} (${fmt(p.prefill?.tflops, 0)}) | ${pp ? `${fmt(pp.tok_s, 0)} (${fmt(pp.tflops, 0)})` : '—'} |`,
  );
  if (r.error) lines.push(`|  | | (${r.error}) ||||||||||||||`);
}
console.log(lines.join('\n'));
if (values.json) writeFileSync(values.json, JSON.stringify({ gpu, rows }, null, 2));
