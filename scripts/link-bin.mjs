#!/usr/bin/env node
// Makes `npx prism` run this checkout's CLI directly. npm links the bins of dependencies
// into node_modules/.bin but never the root package's own, so without this link `npx prism`
// installs the project into npm's exec cache as a `file:` dependency — re-running the
// native build — before it starts. Runs from `prepare`, after the TypeScript build.
import { chmodSync, existsSync, lstatSync, mkdirSync, symlinkSync, unlinkSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'dist', 'cli', 'main.js');
const binDir = join(root, 'node_modules', '.bin');
const link = join(binDir, 'prism');

if (!existsSync(target)) {
  console.error(`link-bin: ${target} is missing (did the TypeScript build run?)`);
  process.exit(1);
}
chmodSync(target, 0o755);
mkdirSync(binDir, { recursive: true });
try {
  if (lstatSync(link)) unlinkSync(link);
} catch {
  // no previous link
}
symlinkSync(relative(binDir, target), link);
