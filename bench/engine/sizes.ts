/**
 * The size suite of the engine benchmark (`npm run bench:engine -- --suite sizes`): the three
 * measures for random-weight GGUFs with real models' layer shapes (scripts/make-size-models.py
 * writes them into models/sizes/, once, cached on disk), one row per size × type, with the
 * decode roofline of each file. No measuring happens here: the runner is passed in.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fmt } from '../stats.js';
import { ENGINE_NAMES, type EngineBenchReport, type EngineName, type MeasureResult } from './report.js';

export const SIZE_NAMES = [
  '1b',
  '3b',
  '8b',
  'qwen1.5b',
  'moe-1b-a400m',
  'moe-30b-a3b',
  'moe-30b-a3b-l8',
] as const;
export const TYPE_NAMES = [
  'q4_0',
  'q4_1',
  'q4_k',
  'q8_0',
  'f16',
  'bf16',
  'q5_k_m',
  'q5_k_s',
  'q3_k_m',
  'q2_k',
  'iq4_xs',
] as const;
/** What `--suite sizes` runs without --sizes/--types: the rows the kernel targets are set on. */
export const DEFAULT_SIZES = ['1b', '3b'];
export const DEFAULT_TYPES = ['q4_0', 'q4_k', 'q8_0', 'q5_k_m', 'q3_k_m', 'iq4_xs'];

export interface SizeModel {
  readonly size: string;
  readonly type: string;
  /** The real model whose layer shapes the file has. */
  readonly shape: string;
  readonly path: string;
  readonly exists: boolean;
  /** Weight bytes read per decoded token in the file's own encoding (all but token_embd). */
  readonly bytesPerToken: number;
}

export function parseList(
  flag: string,
  value: string | undefined,
  allowed: readonly string[],
  fallback: string[],
) {
  if (value === undefined) return fallback;
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const item of items) {
    if (!allowed.includes(item))
      throw new RangeError(`--${flag} takes a comma-separated subset of ${allowed.join(',')}; got '${item}'`);
  }
  if (items.length === 0) throw new RangeError(`--${flag} must name at least one of ${allowed.join(',')}`);
  return items;
}

function python(root: string): string {
  if (process.env.PYTHON) return process.env.PYTHON;
  const venv = join(root, '.venv', 'bin', 'python');
  return existsSync(venv) ? venv : 'python3';
}

function generator(root: string, args: string[], inherit: boolean): string {
  const r = spawnSync(python(root), [join(root, 'scripts', 'make-size-models.py'), ...args], {
    cwd: root,
    encoding: 'utf8',
    stdio: inherit ? ['ignore', 'inherit', 'inherit'] : ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0)
    throw new Error(`scripts/make-size-models.py ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
  return r.stdout ?? '';
}

/** The files of sizes × types as the generator describes them, writing nothing. */
export function listSizeModels(
  root: string,
  sizes: readonly string[],
  types: readonly string[],
): SizeModel[] {
  return generator(root, ['--sizes', sizes.join(','), '--types', types.join(','), '--list'], false)
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as SizeModel);
}

/** The files of sizes × types, written first where missing (the generator keeps existing ones). */
export function ensureSizeModels(
  root: string,
  sizes: readonly string[],
  types: readonly string[],
  log: (line: string) => void,
): SizeModel[] {
  const before = listSizeModels(root, sizes, types);
  if (before.some((m) => !m.exists)) {
    log(`writing ${before.filter((m) => !m.exists).length} size model(s) into models/sizes/ (cached) ...`);
    generator(root, ['--sizes', sizes.join(','), '--types', types.join(',')], true);
  }
  return listSizeModels(root, sizes, types);
}

export interface SizeRow {
  readonly model: SizeModel;
  readonly report: EngineBenchReport;
}

/** The size suite's columns: both llama.cpp peers (see report.ts's ENGINE_NAMES), then Prism. */
const ENGINES: readonly EngineName[] = ENGINE_NAMES;

/** Each engine's median, then Prism ÷ the faster llama.cpp peer, naming it (prebuilt or source). */
function cell(m: MeasureResult | undefined): string[] {
  const best = m?.best;
  const peer = best?.peer === 'llama.cpp source' ? 'source' : 'prebuilt';
  const r = best === undefined || Number.isNaN(best.ratio) ? '—' : `**${best.ratio.toFixed(2)}×** (${peer})`;
  return [...ENGINES.map((e) => fmt(m?.median[e])), r];
}

/**
 * Which kernels each engine ran, from the first row's engine descriptions: Prism's ISA
 * (PRISM_ISA may force AVX2 on an AVX-512 machine) and the CPU features of the ggml backend
 * llama.cpp loaded, so a table measured with either held back says so.
 */
function kernelsLine(rows: readonly SizeRow[]): string[] {
  const engines = rows[0]?.report.engines;
  const isa = engines?.prism?.isa;
  const ggml = engines?.['llama.cpp']?.['ggml CPU features'];
  if (isa === undefined && ggml === undefined) return [];
  return [`- Kernels: Prism ${isa ?? '—'}; llama.cpp's ggml CPU backend ${ggml ?? '—'}`];
}

/** The host's CPU, caches and huge-page mode, as the Prism half saw them (hostInfo()). */
function hostLine(rows: readonly SizeRow[]): string[] {
  const host = rows[0]?.report.engines?.prism?.host;
  return host === undefined ? [] : [`- Host: ${host}`];
}

/** Markdown for docs/benchmarks.md: one table row per file, then the runs behind the medians. */
export function renderSizeSuite(
  rows: readonly SizeRow[],
  meta: {
    date: string;
    commit: string;
    machine: string;
    command: string;
    load: string;
  },
): string {
  const first = rows[0]?.report.settings;
  const out: string[] = [
    `- Date: ${meta.date}`,
    `- Commit: \`${meta.commit}\``,
    `- Machine: ${meta.machine}; 1-minute load average ${meta.load}`,
    `- Command: \`${meta.command}\``,
    first
      ? `- Settings: ${first.threads} ${first.threads === 1 ? 'thread' : 'threads'}; single stream = ${first.newTokens} new tokens after a ${first.promptTokens}-token prompt; ` +
        `aggregate = ${first.sequences} sequences × ${first.newTokens} new tokens; prefill = one ${first.prefillTokens}-token prompt; ` +
        `medians of ${first.runs} runs after ${first.warmupRuns} warm-up, the engines interleaved run by run, on the same file`
      : '- Settings: (no rows)',
    ...kernelsLine(rows),
    ...hostLine(rows),
    "- Read rate of a row: the machine's sustained read rate in the seconds of its single-stream decode runs: before each measured round and after each engine's run, the median of 3 reads of a 1 GiB buffer with the decode's thread count, and each run set against the mean of the reads just before and after it. " +
      "Decode GB/s: tok/s × the weight bytes the engine reads per token (Prism: its own layout; llama.cpp: the file's, every matrix but token_embd). " +
      "÷ read: the median over runs of decode GB/s ÷ the read rate of the same seconds, and in brackets the lowest run: this machine's bandwidth moves with its neighbours from second to second, so a ratio to llama.cpp alone can come from a fast minute",
    '',
    "Peers: *prebuilt* is node-llama-cpp's bundled llama.cpp (AMX on), *source* llama.cpp built from source for this host class by scripts/build-llama-cpp.mjs (AVX-512 VNNI/BF16, AMX off), measured by its llama-bench (decode, prefill) and llama-batched-bench (aggregate); each ratio is Prism ÷ the faster of the two in that measure, the bracket naming which. A '—' in the source columns: no build was found (`npm run build:llama-cpp`, or PRISM_LLAMA_CPP_BIN)",
    '',
    '| shape | type | MB/token | read GB/s | decode GB/s prebuilt | decode GB/s source | decode GB/s Prism | prebuilt ÷ read | source ÷ read | Prism ÷ read | decode prebuilt | decode source | decode Prism | ratio | prefill prebuilt | prefill source | prefill Prism | ratio | aggregate prebuilt | aggregate source | aggregate Prism | ratio |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const { model, report } of rows) {
    const m = report.measures;
    const rf = report.roofline;
    const share = (e: EngineName) => {
      const v = rf?.percent[e];
      if (v === undefined || Number.isNaN(v)) return '—';
      const low = rf?.minPercent?.[e];
      return low === undefined || Number.isNaN(low)
        ? `${v.toFixed(0)}%`
        : `${v.toFixed(0)}% (${low.toFixed(0)}%)`;
    };
    out.push(
      `| ${model.shape} | ${model.type.toUpperCase()} | ${(model.bytesPerToken / 1e6).toFixed(0)} | ${fmt(rf?.bandwidthGBs)} | ` +
        `${ENGINES.map((e) => fmt(rf?.decodeGBs?.[e])).join(' | ')} | ${ENGINES.map(share).join(' | ')} | ` +
        `${[m.singleDecode, m.prefill, m.aggregateDecode].map((x) => cell(x).join(' | ')).join(' | ')} |`,
    );
  }
  out.push('', 'Runs behind the medians (tok/s; prebuilt | source | Prism):', '');
  for (const { model, report } of rows) {
    const parts = Object.values(report.measures)
      .filter((x) => x !== undefined)
      .map(
        (x) =>
          `${x.label}: ${ENGINES.map((e) => (x.runs[e] ?? []).map((v) => fmt(v)).join(', ') || '—').join(' | ')}`,
      );
    const probes = report.roofline?.bandwidthRuns ?? [];
    if (probes.length > 0) parts.push(`sustained reads, GB/s: ${probes.map((v) => fmt(v)).join(', ')}`);
    const tuning = report.engines?.prism?.['decode tuning'];
    if (tuning !== undefined) parts.push(`Prism decode tuning: ${tuning}`);
    const huge = report.engines?.prism?.['huge pages'];
    if (huge !== undefined) parts.push(`huge pages: ${huge}`);
    out.push(`- ${model.shape} ${model.type.toUpperCase()}: ${parts.join('; ')}`);
  }
  const withMemory = rows.filter((r) => r.report.prismMemory);
  if (withMemory.length > 0) {
    out.push('', 'Prism memory per file (measured at load, the process also holds llama.cpp):', '');
    for (const { model, report } of withMemory)
      out.push(`- ${model.shape} ${model.type.toUpperCase()}: ${formatPrismMemory(report.prismMemory!)}`);
  }
  return out.join('\n');
}

/** One line of Prism's memory on a file (printed when it loads, kept in the table's notes). */
export function formatPrismMemory(m: NonNullable<EngineBenchReport['prismMemory']>): string {
  const mib = (b: number) => `${Math.round(b / 2 ** 20)} MiB`;
  return `weights ${mib(m.weightBytes)} read per token, KV pool ${mib(m.kvBytes)}, resident set +${mib(m.rssGrowthBytes)} while Prism loaded`;
}

export const SIZES_BEGIN =
  '<!-- bench:sizes:begin (generated by `npm run bench:engine -- --suite sizes --update-docs`) -->';
export const SIZES_END = '<!-- bench:sizes:end -->';

export function replaceSizesSection(doc: string, body: string): string {
  const begin = doc.indexOf(SIZES_BEGIN);
  const end = doc.indexOf(SIZES_END);
  if (begin < 0 || end < begin)
    throw new Error(
      'docs/benchmarks.md has no size-suite markers; add the two marker comments to its size section',
    );
  return doc.slice(0, begin + SIZES_BEGIN.length) + '\n' + body + '\n' + doc.slice(end);
}
