/**
 * The float GEMM of many-token passes (native/src/kernels/float_gemm.h, kernels.h's
 * matmulManyTokens: the encoders and vision towers), through the kernel test hook's
 * "avx2-gemm" / "avx512-gemm" families: within f32 rounding of the f64 product on ragged
 * shapes (tile, panel and chunk tails; the row split and the panel split across threads), each
 * token's bits independent of the batch it is in, and the two families bit-identical.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { cpuFeatures, kernelTestHooks, type TensorType } from './native.js';
import { randomMatrix, worstRelativeError } from './test-matrices.js';

const FLOATS: readonly TensorType[] = ['F32', 'F16', 'BF16'];

function gemmFamilies(): string[] {
  const f = cpuFeatures();
  const out: string[] = [];
  if (f.avx2 && f.fma && f.f16c) out.push('avx2-gemm');
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni) out.push('avx512-gemm');
  return out;
}

function bitsEqual(a: Float32Array, b: Float32Array): number {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return x.findIndex((v, i) => v !== y[i]);
}

test('float GEMM matches the f64 product of the weights on ragged shapes', (t) => {
  const families = gemmFamilies();
  if (families.length === 0) return t.skip('this CPU has no AVX2');
  let seed = 11;
  // Rows: one tile's tail, a few tiles, many (the row split); n: a panel's tail, several
  // panels, many (the panel chunks, and with few rows the panel split); cols past the vector
  // width and long ones (one panel chunk holds fewer panels).
  const shapes: [number, number, number][] = [];
  for (const rows of [1, 5, 13, 67])
    for (const cols of [8, 37, 384]) for (const n of [1, 3, 17, 33, 70]) shapes.push([rows, cols, n]);
  shapes.push([384, 1536, 100], [7, 1536, 130]);
  for (const family of families) {
    for (const type of FLOATS) {
      for (const [rows, cols, n] of shapes) {
        const q = kernelTestHooks.quantize(type, randomMatrix(rows * cols, seed++), rows, cols);
        const w = kernelTestHooks.dequantize(type, q, rows, cols);
        const x = randomMatrix(n * cols, seed++, 3);
        const y = kernelTestHooks.matmul(type, q, rows, cols, x, n, family);
        assert.equal(y.length, rows * n);
        const err = worstRelativeError(y, w, x, rows, cols, n);
        assert.ok(err < 1e-5, `${family} ${type} rows=${rows} cols=${cols} n=${n}: relative error ${err}`);
      }
    }
  }
});

test("float GEMM: every token of an n-token pass gets the one-token pass's bits", (t) => {
  // An input's embedding must not depend on the inputs packed beside it in a pass.
  const families = gemmFamilies();
  if (families.length === 0) return t.skip('this CPU has no AVX2');
  const rows = 37,
    cols = 300,
    nMax = 40;
  let seed = 500;
  for (const family of families) {
    for (const type of FLOATS) {
      const q = kernelTestHooks.quantize(type, randomMatrix(rows * cols, seed++), rows, cols);
      const x = randomMatrix(nMax * cols, seed++, 3);
      const one = new Float32Array(nMax * rows);
      for (let tk = 0; tk < nMax; tk++)
        one.set(
          kernelTestHooks.matmul(type, q, rows, cols, x.subarray(tk * cols, (tk + 1) * cols), 1, family),
          tk * rows,
        );
      for (const n of [2, 15, 16, 17, 31, 33, 40]) {
        const y = kernelTestHooks.matmul(type, q, rows, cols, x.subarray(0, n * cols), n, family);
        const i = bitsEqual(y, one.subarray(0, n * rows));
        assert.equal(
          i,
          -1,
          `${family} ${type} n=${n}: token ${Math.floor(i / rows)} row ${i % rows}: ${y[i]} vs ${one[i]}`,
        );
      }
    }
  }
});

test('float GEMM: the AVX-512 and AVX2 families give the same bits', (t) => {
  if (!gemmFamilies().includes('avx512-gemm')) return t.skip('this CPU has no AVX-512');
  let seed = 900;
  for (const type of FLOATS) {
    for (const [rows, cols, n] of [
      [13, 37, 33],
      [384, 384, 70],
    ] as const) {
      const q = kernelTestHooks.quantize(type, randomMatrix(rows * cols, seed++), rows, cols);
      const x = randomMatrix(n * cols, seed++, 3);
      const a = kernelTestHooks.matmul(type, q, rows, cols, x, n, 'avx2-gemm');
      const b = kernelTestHooks.matmul(type, q, rows, cols, x, n, 'avx512-gemm');
      const i = bitsEqual(a, b);
      assert.equal(i, -1, `${type} ${rows}x${cols} n=${n}: output ${i}: avx2 ${a[i]} vs avx512 ${b[i]}`);
    }
  }
});

test('float GEMM: quantized weights take matmul(), and only the two GEMM families exist', (t) => {
  if (gemmFamilies().length === 0) return t.skip('this CPU has no AVX2');
  const rows = 5,
    cols = 64,
    n = 20;
  const q = kernelTestHooks.quantize('Q8_0', randomMatrix(rows * cols, 3), rows, cols);
  const x = randomMatrix(n * cols, 4);
  const viaGemm = kernelTestHooks.matmul('Q8_0', q, rows, cols, x, n, 'avx2-gemm');
  const viaMatmul = kernelTestHooks.matmul('Q8_0', q, rows, cols, x, n, 'avx2');
  assert.equal(bitsEqual(viaGemm, viaMatmul), -1);
  const f = kernelTestHooks.quantize('F32', randomMatrix(rows * cols, 5), rows, cols);
  for (const family of ['reference-gemm', 'amx-gemm', 'gemm'])
    assert.throws(() => kernelTestHooks.matmul('F32', f, rows, cols, x, n, family), /isa/);
});
