#!/usr/bin/env node
// Builds the CUDA backend (native/cuda/), apart from the CPU addon: nothing here can break a
// machine without CUDA.
//
//   node scripts/build-cuda.mjs            libprism_cuda.so into build/Release/ with the
//                                          machine's nvcc and cuBLASLt. Run by the install
//                                          step after the CPU addon; when there is no nvcc
//                                          (or no cuBLASLt) it says so in one line and stops.
//                                          PRISM_CUDA=1 makes that an error, PRISM_CUDA=0 skips.
//   node scripts/build-cuda.mjs --emu      build/cuda-emu/libprism_cuda_emu.so: the same
//                                          sources compiled as plain C++ for the CPU emulation
//                                          of CUDA (native/cuda/src/emu.h), for the tests.
//   node scripts/build-cuda.mjs --tools    build/cuda-tools/kernel_check: the kernel-check
//                                          program (native/cuda/check/), host C++ only.
//   node scripts/build-cuda.mjs --ci       compiles every CUDA source for sm_90a with the
//                                          toolchain pinned in native/cuda/toolchain.txt
//                                          (nvcc 13.0 from the Python package index, fetched
//                                          once into a cache folder): the compile check a
//                                          machine without CUDA runs, so code that does not
//                                          compile cannot land. Beside each object in
//                                          build/cuda-ci/ it leaves ptxas's resource report
//                                          (F.o.ptxas.txt: registers, stack, spills) and the
//                                          SASS (F.o.sass, cuobjdump), which
//                                          native/cuda/build.test.ts reads.
//
// Every mode is incremental: it does nothing when the sources, flags and compiler are those
// of its last successful run (a stamp file beside the output). The test builds (--emu, --tools,
// --ci) also keep their outputs by that stamp in the user's cache (build-results/, beside the
// pinned toolchain): a fresh clone whose sources were compiled before with the same flags and
// compiler takes that compile's outputs instead of compiling again, as a compiler cache would.
// PRISM_BUILD_CACHE=0 turns that off.
// Environment: PRISM_NVCC (the compiler), PRISM_CUDA_ARCHS (e.g. "90a" or "80,90a"; default:
// the GPU's own, from nvidia-smi, else 90a), CXX (the host compiler of --emu / --tools).
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism, homedir, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findPython } from './pip-sdist.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cudaDir = join(root, 'native', 'cuda');
const srcDir = join(cudaDir, 'src');

/** The library's translation units for each build (.cu: CUDA C++; the emulation compiles them as C++). */
const CUDA_ONLY = ['runtime_cuda.cu', 'gemm_cublaslt.cu'];
const EMU_ONLY = ['emu.cc', 'runtime_emu.cc', 'gemm_emu.cc'];
function librarySources(kind) {
  const cu = readdirSync(srcDir)
    .filter((f) => f.endsWith('.cu'))
    .sort();
  if (kind === 'cuda') return cu;
  return [...cu.filter((f) => !CUDA_ONLY.includes(f)), ...EMU_ONLY];
}

function log(line) {
  console.log(`prism: ${line}`);
}

function run(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts });
}

/**
 * Runs compile jobs with bounded parallelism; rejects with the first failure's output, else
 * returns each job's output (stdout and stderr) in job order.
 */
async function runJobs(jobs) {
  const width = Math.max(1, Math.min(availableParallelism(), 8));
  let next = 0;
  const failures = [];
  const outputs = [];
  async function worker() {
    while (next < jobs.length && failures.length === 0) {
      const index = next++;
      const [cmd, args, label] = jobs[index];
      await new Promise((resolve) => {
        const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        p.stdout.on('data', (d) => (out += d));
        p.stderr.on('data', (d) => (out += d));
        p.on('close', (code) => {
          if (code !== 0) failures.push(`${label}:\n${out}`);
          outputs[index] = out;
          resolve();
        });
        p.on('error', (e) => {
          failures.push(`${label}: ${e.message}`);
          resolve();
        });
      });
    }
  }
  await Promise.all(Array.from({ length: width }, worker));
  if (failures.length) throw new Error(failures[0]);
  return outputs;
}

function hashOf(files, extra) {
  const h = createHash('sha256');
  for (const f of files) h.update(f).update(readFileSync(f));
  h.update(JSON.stringify(extra));
  return h.digest('hex');
}

function upToDate(stampFile, stamp, outputs) {
  return (
    existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp && outputs.every((o) => existsSync(o))
  );
}

// ---- the result cache of the test builds ------------------------------------------------------

const RESULTS_KEPT = 6; // per mode: a few source versions (branches) side by side

function resultsDir(mode, stamp) {
  return join(cacheHome(), 'prism', 'build-results', `${mode}-${stamp.slice(0, 32)}`);
}

/**
 * Copies the cached outputs of the build with this stamp into place, then writes the stamp;
 * false when caching is off or nothing complete is cached under it. Outputs are named by their
 * file name in the cache (every mode writes them into one folder).
 */
function restoreResults(mode, stamp, stampFile, outputs) {
  if (process.env.PRISM_BUILD_CACHE === '0') return false;
  const dir = resultsDir(mode, stamp);
  if (!existsSync(join(dir, '.complete'))) return false;
  if (!outputs.every((o) => existsSync(join(dir, basename(o))))) return false;
  try {
    mkdirSync(dirname(stampFile), { recursive: true });
    for (const o of outputs) {
      copyFileSync(join(dir, basename(o)), `${o}.partial`);
      if (statSync(join(dir, basename(o))).mode & 0o100) chmodSync(`${o}.partial`, 0o755);
      renameSync(`${o}.partial`, o);
    }
  } catch (e) {
    // Another checkout replacing the entry meanwhile, say: compile as without a cache.
    log(`cached build results unusable (${e.message}); compiling`);
    for (const o of outputs) rmSync(`${o}.partial`, { force: true });
    return false;
  }
  writeFileSync(stampFile, stamp);
  return true;
}

/** Keeps a successful build's outputs under its stamp, and only the newest few of the mode. */
function storeResults(mode, stamp, outputs) {
  if (process.env.PRISM_BUILD_CACHE === '0') return;
  const dir = resultsDir(mode, stamp);
  const staging = `${dir}.partial-${process.pid}`;
  try {
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    for (const o of outputs) {
      copyFileSync(o, join(staging, basename(o)));
      if (statSync(o).mode & 0o100) chmodSync(join(staging, basename(o)), 0o755);
    }
    writeFileSync(join(staging, '.complete'), stamp);
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
    const parent = dirname(dir);
    const mine = readdirSafe(parent)
      .filter((f) => f.startsWith(`${mode}-`) && !f.includes('.partial'))
      .map((f) => ({ f, t: statSync(join(parent, f)).mtimeMs }))
      .sort((a, b) => b.t - a.t);
    for (const { f } of mine.slice(RESULTS_KEPT)) rmSync(join(parent, f), { recursive: true, force: true });
  } catch (e) {
    // A cache that cannot be written costs the next clone a compile, nothing more.
    rmSync(staging, { recursive: true, force: true });
    log(`build results not cached (${e.message})`);
  }
}

/** The version line of a host compiler, so a compiler upgrade is a new stamp. */
function compilerVersion(cmd) {
  try {
    return run(cmd, ['--version']).split('\n')[0];
  } catch {
    return 'unknown';
  }
}

/** Every header of the CPU core (native/src/**): what the kernel-check program's sources include. */
function cpuHeaders() {
  const dir = join(root, 'native', 'src');
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.h'))
    .map((f) => join(dir, f))
    .sort();
}

function headers() {
  const list = [join(cudaDir, 'prism_cuda.h')];
  for (const f of readdirSync(srcDir)) if (f.endsWith('.h')) list.push(join(srcDir, f));
  return list.sort();
}

// ---- finding the machine's CUDA ---------------------------------------------------------------

function findNvcc() {
  const candidates = [
    process.env.PRISM_NVCC,
    process.env.CUDA_HOME && join(process.env.CUDA_HOME, 'bin', 'nvcc'),
    'nvcc',
  ];
  candidates.push('/usr/local/cuda/bin/nvcc');
  for (const c of candidates) {
    if (!c) continue;
    try {
      const version = run(c, ['--version']);
      return { nvcc: c, version: /release [\d.]+, V[\d.]+/.exec(version)?.[0] ?? version.trim() };
    } catch {
      // the next one
    }
  }
  return null;
}

/** The toolkit folder nvcc uses (its TOP), from a dry run. */
function cudaRoot(nvcc) {
  let text;
  try {
    text = execFileSync(nvcc, ['--dryrun', '-c', '-x', 'cu', '/dev/null', '-o', '/dev/null'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (e) {
    text = `${e.stdout ?? ''}${e.stderr ?? ''}`;
  }
  const m = /TOP=(\S+)/.exec(text);
  return m ? m[1] : null;
}

/** cuBLASLt's header and library: in the toolkit, or where distribution packages put them. */
function findCublasLt(top) {
  const includeDirs = [
    top && join(top, 'include'),
    top && join(top, 'targets', 'x86_64-linux', 'include'),
    '/usr/include',
    '/usr/local/include',
  ].filter(Boolean);
  const libDirs = [
    top && join(top, 'lib64'),
    top && join(top, 'lib'),
    top && join(top, 'targets', 'x86_64-linux', 'lib'),
    '/usr/lib/x86_64-linux-gnu',
    '/usr/lib64',
  ].filter(Boolean);
  // Python's CUDA wheels (nvidia/cu13/..., nvidia/cublas/...), as on machines whose toolkit
  // came with PyTorch.
  for (const base of pythonNvidiaDirs()) {
    for (const d of walkDirs(base, 3)) {
      if (existsSync(join(d, 'cublasLt.h'))) includeDirs.push(d);
      if (readdirSafe(d).some((f) => /^libcublasLt\.so(\.\d+)*$/.test(f))) libDirs.push(d);
    }
  }
  const include = includeDirs.find((d) => existsSync(join(d, 'cublasLt.h')));
  const lib = libDirs.find((d) => readdirSafe(d).some((f) => /^libcublasLt\.so(\.\d+)*$/.test(f)));
  if (!include || !lib) return null;
  // A wheel ships only the versioned name (libcublasLt.so.13): link that file by name.
  const files = readdirSafe(lib).filter((f) => /^libcublasLt\.so(\.\d+)*$/.test(f));
  const link = files.includes('libcublasLt.so') ? '-lcublasLt' : `-l:${files.sort()[0]}`;
  return { include, lib, link };
}

/** The folders of python3's `nvidia` namespace package, if there is one. */
function pythonNvidiaDirs() {
  try {
    const out = run(process.env.PYTHON || 'python3', [
      '-c',
      'import nvidia; print("\\n".join(nvidia.__path__))',
    ]);
    return out.split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

function walkDirs(dir, depth) {
  const out = [dir];
  if (depth === 0) return out;
  for (const f of readdirSafe(dir)) {
    const p = join(dir, f);
    try {
      if (statSync(p).isDirectory()) out.push(...walkDirs(p, depth - 1));
    } catch {
      // unreadable: skipped
    }
  }
  return out;
}

function readdirSafe(d) {
  try {
    return readdirSync(d);
  } catch {
    return [];
  }
}

function gpuArchs() {
  const fromEnv = process.env.PRISM_CUDA_ARCHS;
  if (fromEnv)
    return fromEnv
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  try {
    const caps = run('nvidia-smi', ['--query-gpu=compute_cap', '--format=csv,noheader'])
      .split('\n')
      .map((s) => s.trim())
      .filter(Boolean);
    const archs = [...new Set(caps.map((c) => c.replace('.', '')))].map((a) => (a === '90' ? '90a' : a));
    if (archs.length) return archs;
  } catch {
    // no driver here: build for Hopper
  }
  return ['90a'];
}

function gencode(archs) {
  return archs.flatMap((a) => [`-gencode=arch=compute_${a},code=sm_${a}`]);
}

const NVCC_FLAGS = [
  '-std=c++20',
  '-O3',
  '--expt-relaxed-constexpr',
  '-Xcompiler',
  '-fPIC,-Wall',
  '-lineinfo',
];

// ---- the real library ---------------------------------------------------------------------------

async function buildCuda() {
  const want = process.env.PRISM_CUDA;
  if (want === '0') {
    log('CUDA backend skipped (PRISM_CUDA=0)');
    return;
  }
  const found = findNvcc();
  const top = found ? cudaRoot(found.nvcc) : null;
  const blas = found ? findCublasLt(top) : null;
  if (!found || !blas) {
    const why = !found
      ? 'no nvcc found (PRISM_NVCC, CUDA_HOME, PATH, /usr/local/cuda)'
      : `nvcc ${found.version} found but not cuBLASLt (cublasLt.h and libcublasLt.so)`;
    if (want === '1') throw new Error(`PRISM_CUDA=1 but the CUDA backend cannot be built: ${why}`);
    log(`CUDA backend skipped: ${why}; set PRISM_CUDA=1 to require it`);
    return;
  }
  const archs = gpuArchs();
  const outDir = join(root, 'build', 'Release');
  const objDir = join(root, 'build', 'cuda-obj');
  const lib = join(outDir, 'libprism_cuda.so');
  const sources = librarySources('cuda');
  const flags = [...NVCC_FLAGS, ...gencode(archs), `-I${blas.include}`];
  const stampFile = join(outDir, 'libprism_cuda.stamp');
  const stamp = hashOf([...sources.map((f) => join(srcDir, f)), ...headers()], {
    flags,
    v: found.version,
    blas,
  });
  if (upToDate(stampFile, stamp, [lib])) return;
  mkdirSync(outDir, { recursive: true });
  mkdirSync(objDir, { recursive: true });
  log(`building the CUDA backend (nvcc ${found.version}, sm_${archs.join(', sm_')}) ...`);
  const t0 = Date.now();
  await runJobs(
    sources.map((f) => [found.nvcc, [...flags, '-c', join(srcDir, f), '-o', join(objDir, `${f}.o`)], f]),
  );
  run(found.nvcc, [
    '-shared',
    ...gencode(archs),
    '-o',
    lib,
    ...sources.map((f) => join(objDir, `${f}.o`)),
    `-L${blas.lib}`,
    blas.link,
    '-Xlinker',
    `-rpath,${blas.lib}`,
  ]);
  writeFileSync(stampFile, stamp);
  log(`CUDA backend built: ${lib} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
}

// ---- the CPU emulation build (tests) ---------------------------------------------------------------

function cxx() {
  return process.env.CXX || 'c++';
}

async function buildEmu() {
  const outDir = join(root, 'build', 'cuda-emu');
  const lib = join(outDir, 'libprism_cuda_emu.so');
  const sources = librarySources('emu');
  const flags = [
    '-std=c++20',
    '-O2',
    '-g',
    '-fPIC',
    '-DPRISM_CUDA_EMU',
    '-Wall',
    '-Wextra',
    '-Wno-unused-parameter',
  ];
  flags.push('-Wno-unknown-pragmas');
  const stampFile = join(outDir, 'stamp');
  const stamp = hashOf([...sources.map((f) => join(srcDir, f)), ...headers()], {
    flags,
    cxx: cxx(),
    version: compilerVersion(cxx()),
  });
  if (upToDate(stampFile, stamp, [lib])) return lib;
  if (restoreResults('emu', stamp, stampFile, [lib])) {
    log('CUDA emulation library: an identical earlier build taken from the cache (build/cuda-emu)');
    return lib;
  }
  mkdirSync(outDir, { recursive: true });
  log('building the CUDA emulation library for tests (build/cuda-emu) ...');
  await runJobs(
    sources.map((f) => [
      cxx(),
      [...flags, '-x', 'c++', '-c', join(srcDir, f), '-o', join(outDir, `${f}.o`)],
      f,
    ]),
  );
  run(cxx(), ['-shared', '-o', lib, ...sources.map((f) => join(outDir, `${f}.o`)), '-pthread']);
  writeFileSync(stampFile, stamp);
  storeResults('emu', stamp, [lib]);
  return lib;
}

// ---- the kernel-check program ----------------------------------------------------------------------

/** The CPU reference kernels it compares with, and what they link against. */
const CPU_REFERENCE = [
  'native/src/kernels/reference.cc',
  'native/src/kernels/reference_blocks.cc',
  'native/src/kernels/planes_repack.cc',
  'native/src/kernels/types.cc',
  'native/src/kernels/repack.cc',
  'native/src/kernels/weight_memory.cc',
  'native/src/thread_pool.cc',
  'native/src/sampler.cc',
];

async function buildTools() {
  const outDir = join(root, 'build', 'cuda-tools');
  const program = join(outDir, 'kernel_check');
  const checkDir = join(cudaDir, 'check');
  const own = readdirSync(checkDir)
    .filter((f) => f.endsWith('.cc'))
    .map((f) => join(checkDir, f));
  const sources = [
    ...own,
    join(cudaDir, 'host', 'cuda_library.cc'),
    ...CPU_REFERENCE.map((f) => join(root, f)),
  ];
  const extraHeaders = [
    ...readdirSync(checkDir)
      .filter((f) => f.endsWith('.h'))
      .map((f) => join(checkDir, f)),
    join(cudaDir, 'host', 'cuda_library.h'),
    join(cudaDir, 'host', 'cuda_functions.inc'),
  ];
  const flags = [
    '-std=c++20',
    '-O2',
    '-g',
    '-mavx2',
    '-mfma',
    '-mf16c',
    '-mbmi2',
    '-pthread',
    '-Wall',
    '-Wextra',
  ];
  flags.push('-Wno-unused-parameter', `-I${join(root, 'native', 'src')}`);
  const stampFile = join(outDir, 'stamp');
  const stamp = hashOf([...sources, ...extraHeaders, join(cudaDir, 'prism_cuda.h'), ...cpuHeaders()], {
    flags,
    cxx: cxx(),
    version: compilerVersion(cxx()),
  });
  if (upToDate(stampFile, stamp, [program])) return program;
  if (restoreResults('tools', stamp, stampFile, [program])) {
    log('kernel-check program: an identical earlier build taken from the cache (build/cuda-tools)');
    return program;
  }
  mkdirSync(outDir, { recursive: true });
  log('building the kernel-check program (build/cuda-tools/kernel_check) ...');
  const objects = sources.map((f) => join(outDir, `${f.slice(root.length + 1).replaceAll('/', '_')}.o`));
  await runJobs(sources.map((f, i) => [cxx(), [...flags, '-c', f, '-o', objects[i]], f]));
  run(cxx(), ['-o', program, ...objects, '-pthread', '-ldl']);
  writeFileSync(stampFile, stamp);
  storeResults('tools', stamp, [program]);
  return program;
}

// ---- the CI compile check with the pinned toolchain --------------------------------------------

function cacheHome() {
  return process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
}

/**
 * The toolchain of native/cuda/toolchain.txt (pinned versions and sha256), unpacked once into
 * the user's cache folder. Returns its nvcc and cuBLAS header folder.
 */
function pinnedToolchain() {
  const spec = join(cudaDir, 'toolchain.txt');
  const key = createHash('sha256').update(readFileSync(spec)).digest('hex').slice(0, 16);
  const home = join(cacheHome(), 'prism', `cuda-toolchain-${key}`);
  const nvcc = join(home, 'nvidia', 'cu13', 'bin', 'nvcc');
  const done = join(home, '.complete');
  if (!existsSync(done)) {
    log('fetching the pinned CUDA toolchain for the compile check (native/cuda/toolchain.txt) ...');
    const work = join(tmpdir(), `prism-cuda-toolchain-${process.pid}`);
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work, { recursive: true });
    try {
      const py = findPython('the CUDA compile check');
      execFileSync(
        py,
        [
          '-m',
          'pip',
          'download',
          '--no-deps',
          '--quiet',
          '--only-binary=:all:',
          '--require-hashes',
          '-r',
          spec,
          '-d',
          work,
        ],
        { stdio: ['ignore', 'inherit', 'inherit'] },
      );
      rmSync(home, { recursive: true, force: true });
      mkdirSync(home, { recursive: true });
      // Everything of the compiler packages; of cuBLAS only its headers (the library is
      // 600 MB and a compile check links nothing).
      const unpack = [
        'import sys, zipfile',
        'dest = sys.argv[1]',
        'for w in sys.argv[2:]:',
        '    z = zipfile.ZipFile(w)',
        "    only_headers = 'cublas' in w.split('/')[-1]",
        '    for n in z.namelist():',
        "        if not n.startswith('nvidia/'): continue",
        "        if only_headers and '/include/' not in n: continue",
        '        z.extract(n, dest)',
      ].join('\n');
      const wheels = readdirSync(work)
        .filter((f) => f.endsWith('.whl'))
        .map((f) => join(work, f));
      execFileSync(py, ['-c', unpack, home, ...wheels], { stdio: 'inherit' });
      for (const dir of [join(home, 'nvidia', 'cu13', 'bin'), join(home, 'nvidia', 'cu13', 'nvvm', 'bin')])
        for (const f of readdirSafe(dir))
          if (!f.endsWith('.profile') && !f.includes('.stub')) chmodSync(join(dir, f), 0o755);
      writeFileSync(done, readFileSync(spec));
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  return {
    nvcc,
    include: join(home, 'nvidia', 'cu13', 'include'),
    cuobjdump: join(home, 'nvidia', 'cu13', 'bin', 'cuobjdump'),
    bin: join(home, 'nvidia', 'cu13', 'bin'),
  };
}

async function buildCi() {
  const tc = pinnedToolchain();
  const version = /release [\d.]+, V[\d.]+/.exec(run(tc.nvcc, ['--version']))?.[0] ?? 'unknown';
  const outDir = join(root, 'build', 'cuda-ci');
  const sources = librarySources('cuda');
  const flags = [...NVCC_FLAGS, ...gencode(['90a']), `-I${tc.include}`, '-Xptxas', '-v'];
  const stampFile = join(outDir, 'stamp');
  const objects = sources.map((f) => join(outDir, `${f}.o`));
  const reports = objects.flatMap((o) => [`${o}.ptxas.txt`, `${o}.sass`]);
  const stamp = hashOf([...sources.map((f) => join(srcDir, f)), ...headers()], { flags, version });
  if (upToDate(stampFile, stamp, [...objects, ...reports])) {
    log(`CUDA sources unchanged since their last compile check (nvcc ${version})`);
    return;
  }
  if (restoreResults('ci', stamp, stampFile, [...objects, ...reports])) {
    log(
      `CUDA compile check: these sources passed it before (nvcc ${version}); its objects and reports taken from the cache`,
    );
    return;
  }
  mkdirSync(outDir, { recursive: true });
  log(`compile check of ${sources.length} CUDA sources for sm_90a (nvcc ${version}) ...`);
  const t0 = Date.now();
  const outputs = await runJobs(
    sources.map((f, i) => [tc.nvcc, [...flags, '-c', join(srcDir, f), '-o', objects[i]], f]),
  );
  objects.forEach((o, i) => writeFileSync(`${o}.ptxas.txt`, outputs[i]));
  // cuobjdump runs nvdisasm, found beside it.
  const env = { ...process.env, PATH: `${tc.bin}:${process.env.PATH ?? ''}` };
  for (const o of objects)
    writeFileSync(
      `${o}.sass`,
      execFileSync(tc.cuobjdump, ['--dump-sass', o], { env, encoding: 'utf8', maxBuffer: 1 << 28 }),
    );
  writeFileSync(stampFile, stamp);
  storeResults('ci', stamp, [...objects, ...reports]);
  log(`CUDA compile check passed (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
}

// ---- main ----------------------------------------------------------------------------------------

const mode = process.argv[2] ?? '';
try {
  if (mode === '') await buildCuda();
  else if (mode === '--emu') console.log(await buildEmu());
  else if (mode === '--tools') console.log(await buildTools());
  else if (mode === '--ci') await buildCi();
  else throw new Error(`unknown option ${mode} (--emu, --tools or --ci)`);
} catch (e) {
  console.error(`prism: ${e.message}`);
  process.exit(1);
}
