#!/usr/bin/env node
// Comments that stay true: fails when a comment in the project's own source cites a
// repository file that does not exist (a file renamed or removed while a comment still
// points readers at it). Part of `npm run lint`, and run by `npm test`
// (scripts/check-comment-paths.test.ts) so CI catches it too.
//
// What counts as a citation, in comments only (// and /* */ in TypeScript, JavaScript,
// C++ and CUDA; # in Python and shell):
// - a path under one of the project's top-level folders with a file name or a closing slash
//   (`engine/scheduler.ts`, `native/src/kernels/`), checked from the repository root;
// - a relative path (`./python-env.mjs`, `../native/native.ts`), checked from the file or
//   the root (one that leaves the repository, such as `../shared/`, is not checked);
// - a bare file name with one of the project's source extensions (`engine-parts.ts`,
//   `forward.cc`), which some tracked file must carry.
// A compiled name (`.js`) also matches its TypeScript source. Paths that only exist at
// build or run time (`build/`, `dist/`, `models/`, `node_modules/`, `native/third_party/`,
// generated fixtures) are not checked. A comment that cites another project's file on
// purpose says whose it is on the same line (e.g. "vLLM's scheduler.py"), which this
// check skips.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOTS = [
  'bench',
  'cli',
  'config',
  'deploy',
  'docs',
  'engine',
  'gateways',
  'native',
  'proto',
  'scripts',
  'test',
];
/** Extensions of the project's own code: a bare name with one is a repository file (config.json is a format). */
const SOURCE_EXT = ['ts', 'mts', 'cts', 'js', 'mjs', 'cjs', 'cc', 'h', 'cu', 'cuh', 'proto'];
const UNCHECKED = [
  /^build\//,
  /^dist\//,
  /^models\//,
  /^node_modules\//,
  /^native\/third_party\//,
  /^test\/fixtures\/generated/,
  /^gen\//,
  /^bench\/results\//,
];
/** A possessive before the name on the same line: a citation of another project's file. */
const FOREIGN = /\b[\w.@/-]+['’]s\s+(?:[\w.-]+\s+)?[`'"]?[\w./-]*$/;

const LINE_COMMENT = {
  ts: '//',
  mts: '//',
  cts: '//',
  js: '//',
  mjs: '//',
  cjs: '//',
  cc: '//',
  h: '//',
  cu: '//',
  cuh: '//',
  py: '#',
  sh: '#',
};

/** The comment text of a source file, line by line (code lines give ''). */
export function commentLines(text, ext) {
  const marker = LINE_COMMENT[ext];
  if (!marker) return [];
  const block = marker === '//';
  const out = [];
  let inBlock = false;
  for (const line of text.split('\n')) {
    let comment = '';
    let rest = line;
    while (rest.length > 0) {
      if (inBlock) {
        const end = rest.indexOf('*/');
        if (end < 0) {
          comment += ' ' + rest;
          rest = '';
        } else {
          comment += ' ' + rest.slice(0, end);
          rest = rest.slice(end + 2);
          inBlock = false;
        }
        continue;
      }
      const lineAt = indexOutsideStrings(rest, marker);
      const blockAt = block ? indexOutsideStrings(rest, '/*') : -1;
      if (blockAt >= 0 && (lineAt < 0 || blockAt < lineAt)) {
        inBlock = true;
        rest = rest.slice(blockAt + 2);
      } else if (lineAt >= 0) {
        comment += ' ' + rest.slice(lineAt + marker.length);
        rest = '';
      } else rest = '';
    }
    out.push(comment);
  }
  return out;
}

/** Where `needle` starts outside a string or regex-free quote on this line, or -1. */
function indexOutsideStrings(line, needle) {
  let quote = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quote) {
      if (ch === '\\') i++;
      else if (ch === quote) quote = null;
      continue;
    }
    if (ch === '"' || ch === "'" || ch === '`') {
      quote = ch;
      continue;
    }
    if (line.startsWith(needle, i)) {
      // `://` in a URL is not a comment.
      if (needle === '//' && i > 0 && line[i - 1] === ':') continue;
      return i;
    }
  }
  return -1;
}

const NAME = `[A-Za-z0-9_][\\w.-]*\\.(?:${SOURCE_EXT.join('|')})`;
const CITATION = new RegExp(
  `(?:^|[\\s\`'"(\\[])((?:\\.{1,2}/)+[\\w./-]+|(?:${ROOTS.join('|')})/(?:[\\w*{}-]+/)*(?:${NAME}|[\\w*{}-]*/)|${NAME})(?=$|[\\s\`'",;:)\\]]|\\.(?:\\s|$))`,
  'g',
);

/** The repository files a comment line cites that do not exist. */
export function missingCitations(comment, file, tracked, basenames, root) {
  const missing = [];
  for (const m of comment.matchAll(CITATION)) {
    const cited = m[1].replace(/[.,;:]+$/, '');
    const before = comment.slice(0, m.index + m[0].indexOf(m[1]));
    if (FOREIGN.test(before)) continue;
    if (/[*{}]|\.\.\./.test(cited)) continue; // a pattern or an elision, not a file
    if (cited.startsWith('.')) {
      // From the file, or else from the root (`../shared/` is the checkout's sibling).
      const fromFile = relative(root, join(root, dirname(file), cited));
      const fromRoot = relative(root, join(root, cited));
      if (fromFile.startsWith('..') || fromRoot.startsWith('..')) continue; // outside the repository
      if (!exists(fromFile, tracked, root) && !exists(fromRoot, tracked, root)) missing.push(cited);
    } else if (cited.includes('/')) {
      if (UNCHECKED.some((r) => r.test(cited))) continue;
      if (!exists(cited.replace(/\/$/, ''), tracked, root)) missing.push(cited);
    } else if (!hasBasename(cited, basenames)) missing.push(cited);
  }
  return missing;
}

function exists(path, tracked, root) {
  if (UNCHECKED.some((r) => r.test(path))) return true;
  if (tracked.files.has(path) || tracked.dirs.has(path)) return true;
  const ts = path.replace(/\.(m|c)?js$/, '.$1ts');
  if (tracked.files.has(ts)) return true;
  return existsSync(join(root, path)); // untracked but present (a generated file the build makes)
}

function hasBasename(name, basenames) {
  return basenames.has(name) || basenames.has(name.replace(/\.(m|c)?js$/, '.$1ts'));
}

export function trackedFiles(root) {
  const list = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
    .split('\0')
    .filter(Boolean);
  const files = new Set(list);
  const dirs = new Set();
  for (const f of list) for (let d = dirname(f); d !== '.'; d = dirname(d)) dirs.add(d);
  return { files, dirs, list };
}

/** Every dangling citation in the tracked sources: `file:line: name`. */
export function findDanglingCitations(root) {
  const tracked = trackedFiles(root);
  const basenames = new Set(tracked.list.map((f) => basename(f)));
  const problems = [];
  for (const file of tracked.list) {
    const ext = file.slice(file.lastIndexOf('.') + 1);
    if (!(ext in LINE_COMMENT) || UNCHECKED.some((r) => r.test(file))) continue;
    const lines = commentLines(readFileSync(join(root, file), 'utf8'), ext);
    lines.forEach((comment, i) => {
      if (!comment) return;
      for (const name of missingCitations(comment, file, tracked, basenames, root))
        problems.push(`${file}:${i + 1}: cites ${name}, which is not in the repository`);
    });
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const problems = findDanglingCitations(root);
  for (const p of problems) console.error(p);
  if (problems.length > 0) {
    console.error(`check-comment-paths: ${problems.length} comment(s) cite files that do not exist`);
    process.exit(1);
  }
}
