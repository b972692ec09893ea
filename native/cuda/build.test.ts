/**
 * The CUDA backend on machines without a GPU (issue 29): its sources compile with the nvcc the
 * GPU machines have (13.0, pinned in native/cuda/toolchain.txt, fetched once into the user's
 * cache), and every kernel agrees with the CPU reference when run under the CPU emulation of
 * CUDA (native/cuda/src/emu.h) by the same kernel-check program the GPU runs
 * (native/cuda/check/). scripts/device-check.sh runs that program on the GPU itself. The
 * compiled SASS of the fast decode GEMV is read for what its design promises (issue 40):
 * 128-bit weight loads, dp4a on the int8 path, nothing in local memory.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../engine/default-model.js';

const root = projectRoot();

function buildCuda(mode: string): string {
  const r = spawnSync(process.execPath, [join(root, 'scripts', 'build-cuda.mjs'), mode], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, `build-cuda ${mode} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout.trim().split('\n').pop() ?? '';
}

test('the CUDA sources compile for sm_90a with the pinned nvcc 13.0', { timeout: 40 * 60_000 }, () => {
  buildCuda('--ci');
});

/** The functions of a cuobjdump --dump-sass listing, by mangled name. */
function sassFunctions(sass: string): Map<string, string> {
  const out = new Map<string, string>();
  const parts = sass.split(/\n\s*Function : (\S+)\n/);
  for (let i = 1; i + 1 < parts.length; i += 2) out.set(parts[i]!, parts[i + 1]!);
  return out;
}

// GGML numbers of the fast GEMV's types (gemvFastKernel<TYPE, NTOK>, native/cuda/src/weights.h).
const FAST_TYPES = [0, 1, 2, 3, 6, 7, 8, 10, 11, 12, 13, 14, 20, 23, 30];
const INT8_X = [2, 3, 8, 12]; // Q4_0, Q4_1, Q8_0, Q4_K: dp4a
const EIGHT_BYTE_GROUPS = [10, 11]; // Q2_K, Q3_K: 8 bytes of quants per group, no 16-byte load

test('the fast decode GEMV compiles to what its design promises (SASS and ptxas, sm_90a)', () => {
  // After the compile check above (the --ci build is incremental: this only reads its reports).
  buildCuda('--ci');
  const obj = join(root, 'build', 'cuda-ci', 'k_gemv_fast.cu.o');
  const ptxas = readFileSync(`${obj}.ptxas.txt`, 'utf8');
  const fns = sassFunctions(readFileSync(`${obj}.sass`, 'utf8'));
  let kernels = 0;
  for (const [name, body] of fns) {
    const m = /gemvFastKernelILi(\d+)ELi(\d+)E/.exec(name);
    if (!m) continue;
    kernels++;
    const type = Number(m[1]);
    const at = `gemvFastKernel<${type}, ${m[2]}>`;
    // Local memory: no spills, no arrays moved off registers.
    assert.doesNotMatch(body, /\b(LDL|STL)\b/, `${at}: local-memory loads or stores`);
    const report = new RegExp(
      `${name}[^\\n]*\\n[^\\n]*?(\\d+) bytes stack frame, (\\d+) bytes spill stores, (\\d+) bytes spill loads`,
    ).exec(ptxas);
    assert.ok(report, `${at}: no ptxas -v report`);
    assert.deepEqual(report.slice(1).map(Number), [0, 0, 0], `${at}: ${report[0]}`);
    // 128-bit global loads of the weights (the types whose group is 16 bytes or more).
    if (!EIGHT_BYTE_GROUPS.includes(type)) assert.match(body, /LDG\.E\.128/, `${at}: no 128-bit global load`);
    // The int8 path's dot products are dp4a.
    if (INT8_X.includes(type)) assert.match(body, /IDP\.4A/, `${at}: no dp4a`);
  }
  assert.equal(kernels, FAST_TYPES.length * 4, 'every type × NTOK 1, 2, 4, 8');
});

test(
  'every CUDA kernel agrees with the CPU reference under the CPU emulation',
  { timeout: 20 * 60_000 },
  () => {
    const lib = buildCuda('--emu');
    const program = buildCuda('--tools');
    const r = spawnSync(program, ['--lib', lib, '--quick'], { cwd: root, encoding: 'utf8' });
    process.stdout.write(r.stdout);
    assert.equal(r.status, 0, `kernel_check failed:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /all kernels agree with the CPU reference/);
    // Every kernel family ran at least one case.
    for (const kernel of ['dequantize', 'GEMV', 'GEMM', 'rmsNorm', 'swiglu', 'rope', 'attention', 'sampling'])
      assert.match(r.stdout, new RegExp(`${kernel}.*\\s[1-9]\\d*\\s.*ok`), kernel);
  },
);
