/**
 * The CUDA backend on machines without a GPU (issue 29): its sources compile with the nvcc the
 * GPU machines have (13.0, pinned in native/cuda/toolchain.txt, fetched once into the user's
 * cache), and every kernel agrees with the CPU reference when run under the CPU emulation of
 * CUDA (native/cuda/src/emu.h) by the same kernel-check program the GPU runs
 * (native/cuda/check/). scripts/device-check.sh runs that program on the GPU itself.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
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
