#!/usr/bin/env node
// Runs every test file (*.test.ts next to the code, and test/**/*.test.ts) with Node's own
// test runner through tsx. Node 20's --test takes no globs, so the files are listed here.
// Python-backed tests run with the project's own virtual environment (scripts/python-env.mjs).
// Usage: npm test [-- substring ...]   (only files whose path contains a substring)
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { delimiter, join, relative } from 'node:path';
import { ensurePythonEnv } from './python-env.mjs';

const root = new URL('..', import.meta.url).pathname;
const skip = new Set(['node_modules', 'dist', 'build', 'models', '.git', '.venv']);

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    if (skip.has(name)) continue;
    const full = join(dir, name);
    if (statSync(full).isDirectory()) walk(full, out);
    else if (name.endsWith('.test.ts')) out.push(relative(root, full));
  }
  return out;
}

const filters = process.argv.slice(2);
const files = walk(root, [])
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const pythonBin = ensurePythonEnv(root);
const env = pythonBin ? { ...process.env, PATH: `${pythonBin}${delimiter}${process.env.PATH}` } : process.env;
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', ...files],
  { cwd: root, stdio: 'inherit', env },
);
process.exit(result.status ?? 1);
