/**
 * kLayoutQ8XV (native/src/kernels/q8xv.h): Q8_0 weights with int16 activations on the AVX-512
 * family (the default model's tied output head) in the exact-integer formulation of
 * kLayoutQ4XV. The AVX-512 kernels must give the layout's scalar statement ("q8xv-scalar+int16":
 * each block's exact integer dot, then one f32 FMA chain in block order) bit for bit, for one
 * token (two-group and one-group decode tiles) and for n tokens (the token chunks), and each
 * token of an n-token step the one-token step's bits: a sequence's tokens must not depend on
 * how its steps were shaped (speculation's verify steps, batches, recompute after preemption).
 * Skipped on CPUs without AVX-512 VNNI.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { cpuFeatures, kernelTestHooks } from './native.js';
import { firstDifference, randomMatrix, worstRelativeError } from './test-matrices.js';

const avx512 = (() => {
  const f = cpuFeatures();
  return f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni;
})();

test("kLayoutQ8XV: the AVX-512 int16 kernels give the scalar statement of the layout's arithmetic bit for bit", (t) => {
  if (!avx512) {
    t.skip('this CPU has no AVX-512 VNNI');
    return;
  }
  // Shapes: one row, rows that leave a partial last 16-row group (13, 67, 301), whole groups
  // (16, 192), odd block counts (32, 96 columns), the default model's 576 and 1536; token
  // counts of the decode tiles, one chunk, two chunks and more.
  let seed = 11000;
  for (const cols of [32, 96, 576, 1536]) {
    for (const [rows, n] of [
      [1, 1],
      [13, 2],
      [16, 1],
      [67, 1],
      [67, 7],
      [192, 3],
      [40, 13],
      [301, 16],
      [33, 24],
    ] as const) {
      const w = randomMatrix(rows * cols, seed++);
      const x = randomMatrix(n * cols, seed++, 3);
      const q = kernelTestHooks.quantize('Q8_0', w, rows, cols);
      const fast = kernelTestHooks.matmul('Q8_0', q, rows, cols, x, n, 'avx512+int16');
      const scalar = kernelTestHooks.matmul('Q8_0', q, rows, cols, x, n, 'q8xv-scalar+int16');
      const diff = firstDifference(fast, scalar, rows);
      assert.equal(diff, null, `rows=${rows} cols=${cols} n=${n}: ${diff}`);
      // The scalar statement is itself the int16-accurate product, so the two cannot agree
      // on a wrong answer.
      const err = worstRelativeError(
        scalar,
        kernelTestHooks.dequantize('Q8_0', q, rows, cols),
        x,
        rows,
        cols,
        n,
      );
      assert.ok(err < 1e-4, `rows=${rows} cols=${cols} n=${n}: scalar relative error ${err}`);
    }
  }
});

test('kLayoutQ8XV: block dots beyond 2^24 (extreme weights and activations) keep the scalar bits and stay accurate', (t) => {
  if (!avx512) {
    t.skip('this CPU has no AVX-512 VNNI');
    return;
  }
  // Block 0 of every row: all weights ±1 (q = ±127, one sign per row), all activations near
  // −7 (q from −32767 to ~−32700, H = −128): |I_0| ≈ 32·127·32730 > 2^27, not a multiple of
  // the f32 spacing there, so (float)I_0 rounds, the same way in every kernel. The other
  // blocks mix signs and small values (L up to 255 with H = −1).
  const rows = 35;
  const cols = 96;
  const w = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let k = 0; k < cols; k++)
      w[r * cols + k] = k < 32 ? (r % 2 ? 1 : -1) : (k & 1 ? 0.5 : -0.5) * (1 + (k % 7));
  }
  const q = kernelTestHooks.quantize('Q8_0', w, rows, cols);
  for (const n of [1, 5, 17]) {
    const x = new Float32Array(n * cols);
    for (let t = 0; t < n; t++) {
      for (let k = 0; k < cols; k++) {
        x[t * cols + k] = k < 32 ? -7 + 0.0013 * ((k * 7 + t) % 11) : k % 5 === 0 ? 7 : -0.001 * (k % 11);
      }
    }
    const fast = kernelTestHooks.matmul('Q8_0', q, rows, cols, x, n, 'avx512+int16');
    const scalar = kernelTestHooks.matmul('Q8_0', q, rows, cols, x, n, 'q8xv-scalar+int16');
    const diff = firstDifference(fast, scalar, rows);
    assert.equal(diff, null, `n=${n}: ${diff}`);
    const err = worstRelativeError(fast, kernelTestHooks.dequantize('Q8_0', q, rows, cols), x, rows, cols, n);
    assert.ok(err < 1e-4, `n=${n}: relative error ${err}`);
  }
});

test("kLayoutQ8XV: every token of an n-token step gets the one-token step's bits (n = 2..17, 24)", (t) => {
  if (!avx512) {
    t.skip('this CPU has no AVX-512 VNNI');
    return;
  }
  let seed = 12000;
  for (const cols of [96, 576]) {
    for (const rows of [45, 160]) {
      const maxN = 24;
      const w = randomMatrix(rows * cols, seed++);
      const x = randomMatrix(maxN * cols, seed++, 3);
      const q = kernelTestHooks.quantize('Q8_0', w, rows, cols);
      const one = Array.from({ length: maxN }, (_, tk) =>
        kernelTestHooks.matmul(
          'Q8_0',
          q,
          rows,
          cols,
          x.subarray(tk * cols, (tk + 1) * cols),
          1,
          'avx512+int16',
        ),
      );
      for (const n of [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 24]) {
        const y = kernelTestHooks.matmul('Q8_0', q, rows, cols, x.subarray(0, n * cols), n, 'avx512+int16');
        for (let tk = 0; tk < n; tk++) {
          const diff = firstDifference(y.subarray(tk * rows, (tk + 1) * rows), one[tk]!, rows);
          assert.equal(diff, null, `rows=${rows} cols=${cols} n=${n} token ${tk}: ${diff}`);
        }
      }
    }
  }
});

test('kLayoutQ8XV: the AMX-INT8 tiles give the scalar statement bits for every n (1..17, 24, 40)', (t) => {
  if (!cpuFeatures().amx) {
    t.skip('this CPU (or its OS) has no AMX-INT8 tiles');
    return;
  }
  // "q8xv-amx+int16" runs the tiles whatever n (matmul() hands them only steps of 13 tokens or
  // more): one tile of n rows below 16, full tiles, a last tile overlapping the one before.
  let seed = 13000;
  for (const [rows, cols] of [
    [45, 96],
    [160, 576],
    [7, 32],
  ] as const) {
    const w = randomMatrix(rows * cols, seed++);
    const q = kernelTestHooks.quantize('Q8_0', w, rows, cols);
    for (const n of [1, 2, 3, 5, 8, 12, 13, 15, 16, 17, 24, 40]) {
      const x = randomMatrix(n * cols, seed++, 3);
      const tiles = kernelTestHooks.matmul('Q8_0', q, rows, cols, x, n, 'q8xv-amx+int16');
      const scalar = kernelTestHooks.matmul('Q8_0', q, rows, cols, x, n, 'q8xv-scalar+int16');
      const diff = firstDifference(tiles, scalar, rows);
      assert.equal(diff, null, `rows=${rows} cols=${cols} n=${n}: ${diff}`);
    }
  }
});

test('q8xv-scalar / q8xv-amx: only Q8_0 weights with +int16', () => {
  assert.throws(
    () =>
      kernelTestHooks.matmul('Q4_0', new Uint8Array(18), 1, 32, new Float32Array(32), 1, 'q8xv-scalar+int16'),
    /only Q8_0/,
  );
  assert.throws(
    () => kernelTestHooks.matmul('Q8_0', new Uint8Array(34), 1, 32, new Float32Array(32), 1, 'q8xv-scalar'),
    /\+int16/,
  );
  assert.throws(
    () =>
      kernelTestHooks.matmul('Q4_K', new Uint8Array(144), 1, 256, new Float32Array(256), 1, 'q8xv-amx+int16'),
    /only Q8_0|AMX|not supported/,
  );
});
