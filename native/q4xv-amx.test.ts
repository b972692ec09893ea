/**
 * The kLayoutQ4XV AMX-INT8 kernel (native/src/kernels/amx/q4xv_amx.cc) against the layout's
 * scalar statement (q4xv.h: "q4xv-scalar+int16") and the one-token AVX-512 kernel, bit for
 * bit: a token's outputs must not depend on how many tokens share its step (speculation's
 * verify steps and prefill run on the tiles, decode on VNNI). Skipped on CPUs without AMX.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { cpuFeatures, kernelTestHooks, type TensorType } from './native.js';
import { firstDifference, randomMatrix } from './test-matrices.js';

// Rows that are not whole 16-row groups (the last group's padding rows are never stored),
// odd block counts (Q4_0 / Q4_1: 1, 3, 7), a Q4_K row of three super-blocks.
const SHAPES: ReadonlyArray<readonly [TensorType, number, number]> = [
  ['Q4_0', 37, 96],
  ['Q4_0', 16, 32],
  ['Q4_1', 100, 224],
  ['Q4_1', 5, 576],
  ['Q4_K', 45, 768],
];
// Every token count a verify step takes, one past a token tile (17), a tile and a half
// (24, the last tile overlapping the one before) and more than two tiles (40).
const TOKENS = [...Array.from({ length: 17 }, (_, i) => i + 1), 24, 40];

test('q4xv amx: the AMX-INT8 tiles give the scalar statement bits and the one-token kernel bits for every n', (t) => {
  if (!cpuFeatures().amx) {
    t.skip('this CPU (or its OS) has no AMX int8 tiles');
    return;
  }
  let seed = 4101;
  for (const [type, rows, cols] of SHAPES) {
    const w = randomMatrix(rows * cols, seed++);
    const q = kernelTestHooks.quantize(type, w, rows, cols);
    const maxN = TOKENS[TOKENS.length - 1]!;
    // Activations with a spread of block scales (some blocks 50× larger than others).
    const x = randomMatrix(maxN * cols, seed++, 3);
    for (let i = 0; i < x.length; i += 97) x[i]! *= 50;
    // The one-token kernel's bits for every token.
    const single = new Float32Array(maxN * rows);
    for (let tok = 0; tok < maxN; tok++) {
      const y1 = kernelTestHooks.matmul(
        type,
        q,
        rows,
        cols,
        x.subarray(tok * cols, (tok + 1) * cols),
        1,
        'avx512+int16',
      );
      single.set(y1, tok * rows);
    }
    for (const n of TOKENS) {
      const xn = x.subarray(0, n * cols);
      const before = kernelTestHooks.q4xvAmxCalls();
      const amx = kernelTestHooks.matmul(type, q, rows, cols, xn, n, 'q4xv-amx+int16');
      assert.equal(
        kernelTestHooks.q4xvAmxCalls(),
        before + 1,
        `${type} ${rows}x${cols} n=${n}: not run on the tiles`,
      );
      const scalar = kernelTestHooks.matmul(type, q, rows, cols, xn, n, 'q4xv-scalar+int16');
      const vsScalar = firstDifference(amx, scalar, rows);
      assert.equal(vsScalar, null, `${type} ${rows}x${cols} n=${n}: amx vs scalar at ${vsScalar}`);
      const vsSingle = firstDifference(amx, single.subarray(0, n * rows), rows);
      assert.equal(vsSingle, null, `${type} ${rows}x${cols} n=${n}: amx vs one-token steps at ${vsSingle}`);
    }
  }
});

test('q4xv amx: by default a 16-token int16 matmul takes the tiles and a 4-token one the VNNI kernel, with the same bits', (t) => {
  if (!cpuFeatures().amxPrefill) {
    t.skip('the AMX tiles are off here (no AMX, PRISM_AMX=0 or a lower PRISM_ISA)');
    return;
  }
  const [rows, cols] = [40, 160];
  const w = randomMatrix(rows * cols, 77);
  const q = kernelTestHooks.quantize('Q4_1', w, rows, cols);
  // kQ4XVAmxMinTokens (q4xv.h) lies between the two.
  for (const [n, tiles] of [
    [16, true],
    [4, false],
  ] as const) {
    const x = randomMatrix(n * cols, 78 + n, 2);
    const before = kernelTestHooks.q4xvAmxCalls();
    const y = kernelTestHooks.matmul('Q4_1', q, rows, cols, x, n, 'avx512+int16');
    assert.equal(kernelTestHooks.q4xvAmxCalls(), before + (tiles ? 1 : 0), `n=${n}: tiles ${tiles}`);
    const scalar = kernelTestHooks.matmul('Q4_1', q, rows, cols, x, n, 'q4xv-scalar+int16');
    assert.equal(firstDifference(y, scalar, rows), null, `n=${n}`);
  }
});
