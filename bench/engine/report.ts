/**
 * The engine benchmark's result record and its two renderings: a plain-text table for the
 * terminal and a Markdown section for docs/benchmarks.md. No measuring happens here.
 */
import { fmt } from '../stats.js';

/**
 * 'llama.cpp': node-llama-cpp's prebuilt binary (AMX on), the tokenizer and the continuations'
 * peer; 'llama.cpp source': llama.cpp built from source for this host class
 * (scripts/build-llama-cpp.mjs), measured by its own llama-bench and llama-batched-bench.
 */
export const ENGINE_NAMES = ['llama.cpp', 'llama.cpp source', 'prism'] as const;
export type EngineName = (typeof ENGINE_NAMES)[number];
/** The llama.cpp builds Prism is set against; a measure's ratio is against the faster one. */
export const LLAMA_PEERS = ['llama.cpp', 'llama.cpp source'] as const satisfies readonly EngineName[];

/** Prism's median ÷ the faster llama.cpp peer's, and which peer that is; undefined without both sides. */
export function againstBestPeer(
  median: Partial<Record<EngineName, number>>,
): { peer: EngineName; ratio: number } | undefined {
  const prism = median.prism;
  let peer: EngineName | undefined;
  for (const name of LLAMA_PEERS) {
    const v = median[name];
    if (v !== undefined && !Number.isNaN(v) && (peer === undefined || v > median[peer]!)) peer = name;
  }
  return prism === undefined || peer === undefined ? undefined : { peer, ratio: prism / median[peer]! };
}

export interface MeasureResult {
  readonly label: string;
  /** tok/s of every measured run (warm-up excluded), per engine that ran. */
  readonly runs: Partial<Record<EngineName, number[]>>;
  readonly median: Partial<Record<EngineName, number>>;
  /** prism ÷ llama.cpp (node-llama-cpp's prebuilt) of the medians (NaN when one side did not run). */
  readonly ratio: number;
  /** prism ÷ the faster llama.cpp peer (againstBestPeer), when Prism and a peer ran. */
  readonly best?: { readonly peer: EngineName; readonly ratio: number };
  /**
   * Single-stream decode only: per engine and run, the machine's sustained read rate (GB/s)
   * in the seconds of that run (the mean of the reads just before and just after it).
   */
  readonly readGBs?: Partial<Record<EngineName, number[]>>;
}

export interface Roofline {
  /** Median of the sustained reads taken around the measured single-stream decode runs. */
  readonly bandwidthGBs: number;
  /** Those reads, in order: before each measured round and after each engine's run (each: the median of 3 reads of 1 GiB with the decode's thread count). */
  readonly bandwidthRuns: readonly number[];
  /** Prism's weight bytes per decoded token. */
  readonly weightBytes: number;
  /** bandwidth ÷ weight bytes: the single-stream decode rate if only weight reads counted. */
  readonly tokPerSec: number;
  /** Each engine's decode GB/s as a percentage of the read rate of the same seconds: the median over runs. */
  readonly percent: Partial<Record<EngineName, number>>;
  /** ... and the lowest over runs (the issue's target is a floor on every round, not the median). */
  readonly minPercent?: Partial<Record<EngineName, number>>;
  /** Each engine's median decode rate in weight GB/s (tok/s × its bytes per token). */
  readonly decodeGBs?: Partial<Record<EngineName, number>>;
  /** The weight bytes each engine reads per token (llama.cpp: the file's encoding, where known). */
  readonly bytesPerToken?: Partial<Record<EngineName, number>>;
}

export interface Continuation {
  readonly question: string;
  readonly promptTokens: number;
  readonly ids: Partial<Record<EngineName, number[]>>;
  readonly text: Partial<Record<EngineName, string>>;
  readonly identical?: boolean;
  readonly commonPrefix?: number;
}

export interface EngineBenchReport {
  readonly date: string;
  readonly commit: string;
  readonly machine: string;
  /** 1-minute load average when the measures started and ended: how busy the shared machine was. */
  readonly loadAverage: { readonly start: number; readonly end: number };
  readonly command: string;
  readonly model: { readonly path: string; readonly name?: string; readonly weightBytes?: number };
  readonly settings: {
    readonly threads: number;
    readonly runs: number;
    readonly warmupRuns: number;
    readonly promptTokens: number;
    readonly newTokens: number;
    readonly sequences: number;
    readonly prefillTokens: number;
    readonly tokenizer: string;
  };
  readonly engines: Partial<Record<EngineName, Record<string, string | number | boolean>>>;
  readonly skipped: Partial<Record<EngineName, string>>;
  /** A measure left out with --measures is absent. */
  readonly measures: {
    readonly singleDecode?: MeasureResult;
    readonly aggregateDecode?: MeasureResult;
    readonly prefill?: MeasureResult;
  };
  readonly roofline?: Roofline;
  /**
   * Prism's memory on this file: weights read per token, the KV pool, and how much the
   * process's resident set grew while Prism loaded (repacked weights, KV pool, activation
   * buffers; mmapped file pages once touched by the repack).
   */
  readonly prismMemory?: {
    readonly weightBytes: number;
    readonly kvBytes: number;
    readonly rssGrowthBytes: number;
  };
  readonly continuations: readonly Continuation[];
}

/** The engines with a measured run, in ENGINE_NAMES order (llama.cpp and Prism always shown). */
function enginesThatRan(report: EngineBenchReport): EngineName[] {
  const ran = new Set(measures(report).flatMap((m) => Object.keys(m.runs)));
  return ENGINE_NAMES.filter((e) => e !== 'llama.cpp source' || ran.has(e));
}

const ratioText = (r: number) => (Number.isNaN(r) ? '—' : `${r.toFixed(2)}×`);

function measures(report: EngineBenchReport): MeasureResult[] {
  const { singleDecode, aggregateDecode, prefill } = report.measures;
  return [singleDecode, aggregateDecode, prefill].filter((m): m is MeasureResult => m !== undefined);
}

/** Terminal rendering. */
export function renderText(report: EngineBenchReport): string {
  const lines: string[] = [];
  const ran = enginesThatRan(report);
  const withSource = ran.includes('llama.cpp source');
  const header = [
    'measure (tok/s, median)',
    ...ran.map((e) => e),
    'prism/llama.cpp',
    ...(withSource ? ['prism/best peer'] : []),
    `runs ${ran.join(' | ')}`,
  ];
  const rows = measures(report).map((m) => [
    m.label,
    ...ran.map((e) => fmt(m.median[e])),
    ratioText(m.ratio),
    ...(withSource ? [m.best ? `${ratioText(m.best.ratio)} (${m.best.peer})` : '—'] : []),
    ran.map((e) => (m.runs[e] ?? []).map((v) => fmt(v)).join(' ') || '—').join(' | '),
  ]);
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]) =>
    cells.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  lines.push(`model: ${report.model.path}${report.model.name ? ` (${report.model.name})` : ''}`);
  lines.push(
    `threads: ${report.settings.threads}; medians of ${report.settings.runs} runs after ${report.settings.warmupRuns} warm-up`,
  );
  lines.push('');
  lines.push(line(header));
  lines.push(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) lines.push(line(r));
  lines.push('');
  if (report.roofline) {
    const rf = report.roofline;
    lines.push(
      `decode roofline: sustained read ${rf.bandwidthGBs.toFixed(1)} GB/s ÷ ${(rf.weightBytes / 1e6).toFixed(1)} MB/token = ${rf.tokPerSec.toFixed(0)} tok/s;` +
        ` ${ran.map((e) => `${e} ${fmt(rf.percent[e])}%`).join(', ')} of the read rate of the same seconds`,
    );
  } else {
    lines.push('decode roofline: not measured (needs the Prism native core)');
  }
  for (const [name, why] of Object.entries(report.skipped)) lines.push(`${name}: skipped — ${why}`);
  lines.push('');
  for (const c of report.continuations) {
    const agreement =
      c.identical === undefined
        ? ''
        : c.identical
          ? ' [identical]'
          : ` [differ after ${c.commonPrefix} common tokens]`;
    lines.push(`Q: ${c.question}${agreement}`);
    for (const name of ENGINE_NAMES) {
      if (c.text[name] !== undefined) lines.push(`  ${name.padEnd(9)}: ${JSON.stringify(c.text[name])}`);
    }
  }
  lines.push('');
  for (const [name, details] of Object.entries(report.engines)) {
    lines.push(
      `${name}: ${Object.entries(details)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')}`,
    );
  }
  return lines.join('\n');
}

const escapeCell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, '↵');

/** Markdown rendering: the body of the "Engine" section of docs/benchmarks.md. */
export function renderMarkdown(report: EngineBenchReport): string {
  const s = report.settings;
  const out: string[] = [];
  out.push(`- Date: ${report.date}`);
  out.push(`- Commit: \`${report.commit}\``);
  out.push(
    `- Machine: ${report.machine}; 1-minute load average ${report.loadAverage.start.toFixed(1)} when the measures` +
      ` started, ${report.loadAverage.end.toFixed(1)} when they ended`,
  );
  out.push(`- Command: \`${report.command}\``);
  out.push(
    `- Model: \`${report.model.path}\`${report.model.name ? ` (${report.model.name})` : ''}` +
      (report.model.weightBytes
        ? `, ${(report.model.weightBytes / 1e6).toFixed(1)} MB of weights read per token`
        : ''),
  );
  out.push(
    `- Settings: ${s.threads} ${s.threads === 1 ? 'thread' : 'threads'}; single stream = ${s.newTokens} new tokens after a ${s.promptTokens}-token prompt` +
      ` (decode only: the ${s.newTokens - 1} steps after the first token); aggregate = ${s.sequences} sequences` +
      ` × ${s.newTokens} new tokens (decode phase only); prefill = one ${s.prefillTokens}-token prompt up to its first token;` +
      ` greedy; medians of ${s.runs} runs after ${s.warmupRuns} warm-up, the two engines interleaved run by run.`,
  );
  out.push(`- Token ids: ${s.tokenizer}`);
  out.push('');
  const ran = enginesThatRan(report);
  const withSource = ran.includes('llama.cpp source');
  const title = (e: EngineName) => (e === 'prism' ? 'Prism' : e);
  out.push(
    `| measure (tok/s, median) | ${ran.map(title).join(' | ')} | Prism / llama.cpp |` +
      `${withSource ? ' Prism / best peer |' : ''} runs (${ran.map(title).join('; ')}) |`,
  );
  out.push(`|---|${ran.map(() => '---:|').join('')}---:|${withSource ? '---|' : ''}---|`);
  for (const m of measures(report)) {
    const runs = ran.map((e) => (m.runs[e] ?? []).map((v) => fmt(v)).join(', ') || '—').join('; ');
    const best = m.best ? `${ratioText(m.best.ratio)} against ${m.best.peer}` : '—';
    out.push(
      `| ${m.label} | ${ran.map((e) => fmt(m.median[e])).join(' | ')} | ${ratioText(m.ratio)} |` +
        `${withSource ? ` ${best} |` : ''} ${runs} |`,
    );
  }
  out.push('');
  if (report.roofline) {
    const rf = report.roofline;
    out.push(
      `Decode roofline: sustained read rate ${rf.bandwidthGBs.toFixed(1)} GB/s (median of the reads taken around the decode runs)` +
        ` ÷ ${(rf.weightBytes / 1e6).toFixed(1)} MB of weights per token = **${rf.tokPerSec.toFixed(0)} tok/s** single-stream` +
        ` upper bound; run by run against the read rate of its own seconds, ` +
        `${ran.map((e) => `${title(e)} reaches ${fmt(rf.percent[e])}%`).join(', ')} of it.`,
    );
  } else {
    out.push('Decode roofline: not measured (it needs the Prism native core).');
  }
  for (const [name, why] of Object.entries(report.skipped)) out.push(`\n${name} did not run: ${why}`);
  out.push('');
  out.push('Greedy continuations (chat template applied, at most 32 tokens):');
  out.push('');
  out.push('| question | llama.cpp | Prism | same tokens? |');
  out.push('|---|---|---|---|');
  for (const c of report.continuations) {
    const same =
      c.identical === undefined ? '—' : c.identical ? 'identical' : `first ${c.commonPrefix} tokens agree`;
    out.push(
      `| ${escapeCell(c.question)} | ${escapeCell(c.text['llama.cpp'] ?? '—')} | ${escapeCell(c.text.prism ?? '—')} | ${same} |`,
    );
  }
  out.push('');
  out.push('Engine details:');
  out.push('');
  for (const [name, details] of Object.entries(report.engines)) {
    out.push(
      `- ${name}: ${Object.entries(details)
        .map(([k, v]) => `${k} = ${v}`)
        .join('; ')}`,
    );
  }
  return out.join('\n');
}

/** Markers around the generated part of the engine section, so re-runs replace only it. */
export const DOC_BEGIN = '<!-- bench:engine:begin (generated by `npm run bench:engine -- --update-docs`) -->';
export const DOC_END = '<!-- bench:engine:end -->';

/** Replaces the text between the markers of `doc` with `body`; errors when the markers are missing. */
export function replaceDocSection(doc: string, body: string): string {
  const begin = doc.indexOf(DOC_BEGIN);
  const end = doc.indexOf(DOC_END);
  if (begin < 0 || end < begin) {
    throw new Error(
      'docs/benchmarks.md has no engine-benchmark markers; add the two marker comments to its Engine section',
    );
  }
  return doc.slice(0, begin + DOC_BEGIN.length) + '\n' + body + '\n' + doc.slice(end);
}
