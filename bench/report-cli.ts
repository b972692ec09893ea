/**
 * What the report-writing benchmarks share on their command line: positive-integer flags,
 * re-rendering a report saved with --json (--from-json), and rewriting their generated part
 * of docs/benchmarks.md between two marker comments (--update-docs).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** A flag's value as a positive integer, or an error naming the flag. */
export function positiveInteger(flag: string, raw: string): number {
  const v = Number(raw);
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${flag}: must be a positive integer, got '${raw}'`);
  return v;
}

export interface DocSection {
  /** The benchmark's name in messages and markers (`bench:grpc`). */
  readonly name: string;
  /** The begin marker written (it starts with `<!-- ${name}:begin`); the end marker is `<!-- ${name}:end -->`. */
  readonly begin: string;
  /** The section's heading and prose, appended with the markers when the document has none; absent: markers required. */
  readonly intro?: string;
}

/** Rewrites the part of docs/benchmarks.md between the section's markers; returns the path written. */
export function updateDocSection(section: DocSection, date: string, table: string): string {
  const path = join(root, 'docs', 'benchmarks.md');
  const doc = readFileSync(path, 'utf8');
  const end = `<!-- ${section.name}:end -->`;
  const body = `${section.begin}\n\nMeasured ${date}.\n\n${table}\n${end}`;
  const at = doc.indexOf(`<!-- ${section.name}:begin`);
  const to = doc.indexOf(end);
  let next: string;
  if (at >= 0 && to > at) next = doc.slice(0, at) + body + doc.slice(to + end.length);
  else if (section.intro !== undefined) next = `${doc.trimEnd()}\n\n${section.intro}\n${body}\n`;
  else throw new Error(`docs/benchmarks.md has no ${section.name} markers`);
  writeFileSync(path, next);
  process.stderr.write(`${section.name}: updated ${relative(process.cwd(), path)}\n`);
  return path;
}

/** --from-json: prints a saved report (as JSON or rendered) and, with --update-docs, writes its section. */
export function replaySavedReport<R extends { readonly date: string }>(
  file: string,
  render: (report: R) => string,
  out: { readonly json: boolean; readonly updateDocs: boolean; readonly section: DocSection },
): void {
  const saved = JSON.parse(readFileSync(file, 'utf8')) as R;
  const table = render(saved);
  process.stdout.write((out.json ? JSON.stringify(saved, null, 2) : table) + '\n');
  if (out.updateDocs) updateDocSection(out.section, saved.date, table);
}
