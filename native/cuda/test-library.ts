/**
 * The CUDA library the device tests load: the CPU emulation build (scripts/build-cuda.mjs
 * --emu, built or brought up to date here), or PRISM_TEST_CUDA_LIBRARY when set (a GPU build,
 * scripts/device-check.sh).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../../engine/default-model.js';

export function cudaTestLibrary(): string {
  const r = spawnSync(process.execPath, [join(projectRoot(), 'scripts', 'build-cuda.mjs'), '--emu'], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  return process.env.PRISM_TEST_CUDA_LIBRARY ?? r.stdout.trim().split('\n').pop()!;
}
