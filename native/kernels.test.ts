/**
 * Kernel tests through the addon's test hooks: every storage type × every instruction-set
 * family this CPU supports × both activation precisions (int8, int16), against the f32
 * product of the dequantized weights; the
 * reference (de)quantizers' round-trip error; and dequantization checked bit for bit against
 * the Python `gguf` package on the same bytes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { cpuFeatures, kernelTestHooks, TENSOR_TYPES, type TensorType } from './native.js';
import { firstDifference, norms, randomMatrix, worstRelativeError } from './test-matrices.js';

const TYPES: readonly TensorType[] = TENSOR_TYPES;
const BLOCK: Record<TensorType, number> = {
  F32: 1,
  F16: 1,
  BF16: 1,
  Q8_0: 32,
  Q4_0: 32,
  Q4_1: 32,
  Q4_K: 256,
  Q6_K: 256,
  Q5_0: 32,
  Q5_1: 32,
  Q5_K: 256,
  Q3_K: 256,
  Q2_K: 256,
  IQ4_NL: 32,
  IQ4_XS: 256,
};

/** Families the CPU can run (the kernels refuse the others). */
function supportedIsas(): string[] {
  const f = cpuFeatures();
  const isas = ['reference'];
  if (f.avx2 && f.fma && f.f16c) isas.push('avx2');
  // The BF16-weight kernel additionally needs avx512bf16 and falls back to AVX2 without it.
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni) isas.push('avx512');
  return isas;
}

const QUANTIZED: ReadonlySet<TensorType> = new Set(TYPES.filter((t) => BLOCK[t] > 1));
type Precision = 'int8' | 'int16';

/**
 * Tolerance per (type, isa, precision): the reference kernel computes in f32 on the
 * dequantized weights; the fast quantized kernels round the activations per 32 values to
 * int8 (error ~ 1/254 of each block's max, largely averaging out over a row) or to int16
 * (~1/65534: the bound is 100x tighter, so an int16 request that silently ran the int8
 * kernel fails), and AVX-512's BF16 kernel rounds them to bf16.
 */
function tolerance(type: TensorType, isa: string, precision: Precision): number {
  if (isa === 'reference') return 1e-5;
  if (type === 'F32' || type === 'F16') return 1e-5;
  if (type === 'BF16' && (isa !== 'avx512' || !cpuFeatures().avx512bf16)) return 1e-5;
  if (QUANTIZED.has(type) && precision === 'int16') return 1e-4;
  return 1e-2;
}

for (const isa of supportedIsas()) {
  for (const precision of ['int8', 'int16'] as const) {
    test(`matmul (${isa}, ${precision} activations) matches the dequantized f32 product for every type and awkward shapes`, () => {
      let seed = 1;
      for (const type of TYPES) {
        const block = BLOCK[type];
        // Float types also get column counts that are not a multiple of the vector width.
        const colChoices = block === 1 ? [8, 37, 200] : [block, block * 3, block === 32 ? 576 : 512];
        // Tails of the row/token tiles, odd block counts, and (last) a shape large enough that
        // the kernels' cache blocking splits the rows into several groups.
        const shapes: [number, number, number][] = [];
        for (const rows of [1, 5, 67]) {
          for (const cols of colChoices) for (const n of [1, 3, 17, 64]) shapes.push([rows, cols, n]);
        }
        shapes.push([301, 1536, 7]);
        for (const [rows, cols, n] of shapes) {
          const w = randomMatrix(rows * cols, seed++);
          const x = randomMatrix(n * cols, seed++, 3);
          const q = kernelTestHooks.quantize(type, w, rows, cols);
          const wd = kernelTestHooks.dequantize(type, q, rows, cols);
          const y = kernelTestHooks.matmul(type, q, rows, cols, x, n, `${isa}+${precision}`);
          assert.equal(y.length, rows * n);
          const err = worstRelativeError(y, wd, x, rows, cols, n);
          assert.ok(
            err < tolerance(type, isa, precision),
            `${type} ${isa} ${precision} rows=${rows} cols=${cols} n=${n}: relative error ${err}`,
          );
        }
      }
    });
  }
}

test('int16 activations: exact on integer-valued blocks, and extreme activations do not overflow', () => {
  // Weights and activations that int16 represents exactly (small integers, block max
  // 32767·d): the kernels must then agree with the f64 product to f32 rounding. Large
  // activation magnitudes (1e4) against Q8_0's ±127 and Q6_K's scaled ±32·128 weights
  // drive the int32 lanes to their largest values.
  const rows = 9;
  for (const isa of supportedIsas().filter((i) => i !== 'reference')) {
    for (const type of QUANTIZED) {
      const cols = BLOCK[type] * 2;
      const q = kernelTestHooks.quantize(type, randomMatrix(rows * cols, 5, 4), rows, cols);
      const wd = kernelTestHooks.dequantize(type, q, rows, cols);
      const x = randomMatrix(5 * cols, 6, 1e4);
      for (let i = 0; i < x.length; i += 32) x[i] = i % 64 === 0 ? 1e4 * 7 : -1e4 * 7; // block extremes
      const y = kernelTestHooks.matmul(type, q, rows, cols, x, 5, `${isa}+int16`);
      const err = worstRelativeError(y, wd, x, rows, cols, 5);
      assert.ok(err < 1e-4, `${type} ${isa}+int16 with large activations: relative error ${err}`);
    }
  }
});

test('AVX-512 int16 kernels (Q4_0, Q4_1, Q4_K, Q8_0) agree with the AVX2 int16 kernels', (t) => {
  if (!supportedIsas().includes('avx512')) {
    t.skip('this CPU has no AVX-512 VNNI');
    return;
  }
  // Both quantize the activations to the same int16 blocks and compute the same exact
  // integer dot per block and the same f32 scale products; only the order in which the f32
  // terms are summed differs (16 lanes against 8, a pair's two blocks in different lanes, the
  // lone last block and the offsets added apart). Each side rounds at most ~2 times per block
  // (the block term, its offset term) plus the lanes' horizontal sum, each at 2^-24 of a
  // partial sum of the order of |W_r|·|x_t|: the bound below, (4·blocks + 32)·2^-24 relative,
  // 6e-6 at the default model's 576 columns (seen: ~1.5e-7), under the int16 rounding itself (~1e-5, the
  // 1e-4 tolerance above). Shapes: decode (n = 1, 8-row tiles and their 1-row tails), the
  // 2-16 token tiles of speculation's verify steps and short prefills, odd block counts
  // (the Q4X pair's lone last block), several row groups; Q6_K is the control (both run
  // the AVX2 kernel).
  let seed = 1000;
  let worst = 0;
  for (const type of ['Q4_0', 'Q4_1', 'Q4_K', 'Q8_0', 'Q6_K'] as const) {
    const block = BLOCK[type];
    const colChoices = block === 32 ? [32, 96, 576, 1536] : [256, 768, 1536];
    for (const cols of colChoices) {
      for (const [rows, n] of [
        [1, 1],
        [13, 1],
        [67, 1],
        [192, 1],
        [67, 2],
        [9, 3],
        [67, 4],
        [67, 5],
        [40, 8],
        [67, 16],
        [301, 7],
      ] as const) {
        const w = randomMatrix(rows * cols, seed++);
        const x = randomMatrix(n * cols, seed++, 3);
        const q = kernelTestHooks.quantize(type, w, rows, cols);
        const wn = norms(kernelTestHooks.dequantize(type, q, rows, cols), rows, cols);
        const xn = norms(x, n, cols);
        const y512 = kernelTestHooks.matmul(type, q, rows, cols, x, n, 'avx512+int16');
        const y2 = kernelTestHooks.matmul(type, q, rows, cols, x, n, 'avx2+int16');
        const bound = (4 * (cols / 32) + 32) * 2 ** -24;
        for (let tk = 0; tk < n; tk++) {
          for (let r = 0; r < rows; r++) {
            const i = tk * rows + r;
            const e = Math.abs(y512[i]! - y2[i]!) / (wn[r]! * xn[tk]! + 1e-30);
            worst = Math.max(worst, e);
            assert.ok(
              e <= bound,
              `${type} rows=${rows} cols=${cols} n=${n} row ${r} token ${tk}: ${e} > ${bound}`,
            );
          }
        }
      }
    }
  }
  t.diagnostic(`worst |y512 - y2| / (|W_r|·|x_t|): ${worst.toExponential(2)}`);
});

test("int8 activations: every token of a 2-15 token step gets the one-token kernel's bits", () => {
  // Shape independence (a sequence's tokens must not depend on how its steps were cut:
  // speculation's verify steps, batching, recomputation after preemption) rests on this: a
  // multi-token step's tiles (the row tiles and the AVX-512 token-wide tiles of q4g.h)
  // compute each token's exact integer dots and the same f32 steps in the same order as the
  // one-token decode tiles. Rows 37: 4-row tiles with tails, split across threads; columns:
  // several 16-block groups and a padded last group; n up to 15 (16 and more may take AMX).
  const isas = supportedIsas().filter((isa) => isa !== 'reference');
  let seed = 3000;
  for (const isa of isas) {
    for (const type of TYPES) {
      if (BLOCK[type] === 1) continue;
      const rows = 37;
      const cols = BLOCK[type] === 32 ? 608 : 1280;
      const nMax = 15;
      const q = kernelTestHooks.quantize(type, randomMatrix(rows * cols, seed++), rows, cols);
      const x = randomMatrix(nMax * cols, seed++, 3);
      const one = new Float32Array(nMax * rows);
      for (let tk = 0; tk < nMax; tk++)
        one.set(
          kernelTestHooks.matmul(type, q, rows, cols, x.subarray(tk * cols, (tk + 1) * cols), 1, isa),
          tk * rows,
        );
      const oneBits = new Uint32Array(one.buffer);
      for (let n = 2; n <= nMax; n++) {
        const y = kernelTestHooks.matmul(type, q, rows, cols, x.subarray(0, n * cols), n, isa);
        const bits = new Uint32Array(y.buffer, y.byteOffset, n * rows);
        const i = bits.findIndex((b, k) => b !== oneBits[k]);
        assert.equal(
          i,
          -1,
          `${isa} ${type} n=${n}: token ${Math.floor(i / rows)} row ${i % rows}: ${y[i]} vs one-token ${one[i]}`,
        );
      }
    }
  }
});

test('AVX-512 int16 kernels: every token of an n-token matmul equals the one-token matmul bit for bit (n = 2..17, 24)', (t) => {
  if (!supportedIsas().includes('avx512')) {
    t.skip('this CPU has no AVX-512 VNNI');
    return;
  }
  // A sequence's tokens must not depend on the shape of its steps (a speculative verify step
  // of 1 + k tokens, a batch, a recompute after preemption): the multi-token tiles keep the
  // one-token tile's integer dots and f32 operations in the same order, so each token's row
  // of y is the same bits. Shapes: odd block counts (96 columns: the Q4X pair's lone block),
  // the default model's 576 and 1536, rows that leave a remainder after the 4-row tiles and
  // split unevenly across threads (67), token counts of one chunk, two chunks and more.
  let seed = 5000;
  for (const type of ['Q4_0', 'Q4_1', 'Q4_K', 'Q8_0'] as const) {
    const colChoices = BLOCK[type] === 32 ? [96, 576, 1536] : [256, 1536];
    for (const cols of colChoices) {
      for (const rows of [67, 192]) {
        const maxN = 24;
        const w = randomMatrix(rows * cols, seed++);
        const x = randomMatrix(maxN * cols, seed++, 3);
        const q = kernelTestHooks.quantize(type, w, rows, cols);
        const one = Array.from({ length: maxN }, (_, tk) =>
          kernelTestHooks.matmul(
            type,
            q,
            rows,
            cols,
            x.subarray(tk * cols, (tk + 1) * cols),
            1,
            'avx512+int16',
          ),
        );
        for (const n of [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 24]) {
          const y = kernelTestHooks.matmul(type, q, rows, cols, x.subarray(0, n * cols), n, 'avx512+int16');
          for (let tk = 0; tk < n; tk++) {
            const got = new Uint32Array(y.buffer, y.byteOffset + tk * rows * 4, rows);
            const want = new Uint32Array(one[tk]!.buffer, one[tk]!.byteOffset, rows);
            const r = got.findIndex((v, i) => v !== want[i]);
            assert.equal(
              r,
              -1,
              `${type} rows=${rows} cols=${cols} n=${n} token ${tk} row ${r}: ${y[tk * rows + r]} vs one-token ${one[tk]![r]}`,
            );
          }
        }
      }
    }
  }
});

test("kLayoutQ4XV: the AVX-512 int16 kernels give the scalar statement of the layout's arithmetic bit for bit", (t) => {
  if (!supportedIsas().includes('avx512')) {
    t.skip('this CPU has no AVX-512 VNNI');
    return;
  }
  // With int16 activations on AVX-512, Q4_0 / Q4_1 / Q4_K run as kLayoutQ4XV (kernels/q4xv.h):
  // every kernel forms each block's exact integer dot and then the same f32 steps in the same
  // order. "q4xv-scalar+int16" is that order written out one value at a time (its own scalar
  // activation quantizer included); the vector kernels must give its bits for one token (the
  // two-group and one-group decode tiles) and for n tokens (the token chunks), and it must
  // itself be the int16-accurate product (so the two cannot agree on a wrong answer). Shapes:
  // one row, rows that leave a partial last 16-row group (13, 67), whole groups, odd block
  // counts (96 columns), the default model's 576 and 1536.
  let seed = 7000;
  for (const type of ['Q4_0', 'Q4_1', 'Q4_K'] as const) {
    const colChoices = BLOCK[type] === 32 ? [32, 96, 576, 1536] : [256, 768, 1536];
    for (const cols of colChoices) {
      for (const [rows, n] of [
        [1, 1],
        [13, 2],
        [16, 1],
        [67, 1],
        [67, 7],
        [192, 3],
        [40, 13],
      ] as const) {
        const w = randomMatrix(rows * cols, seed++);
        const x = randomMatrix(n * cols, seed++, 3);
        const q = kernelTestHooks.quantize(type, w, rows, cols);
        const fast = kernelTestHooks.matmul(type, q, rows, cols, x, n, 'avx512+int16');
        const scalar = kernelTestHooks.matmul(type, q, rows, cols, x, n, 'q4xv-scalar+int16');
        const diff = firstDifference(fast, scalar, rows);
        assert.equal(diff, null, `${type} rows=${rows} cols=${cols} n=${n}: ${diff}`);
        const err = worstRelativeError(
          scalar,
          kernelTestHooks.dequantize(type, q, rows, cols),
          x,
          rows,
          cols,
          n,
        );
        assert.ok(err < 1e-4, `${type} rows=${rows} cols=${cols} n=${n}: scalar relative error ${err}`);
      }
    }
  }
  assert.throws(
    () =>
      kernelTestHooks.matmul('Q8_0', new Uint8Array(34), 1, 32, new Float32Array(32), 1, 'q4xv-scalar+int16'),
    /Q4_0, Q4_1 and Q4_K/,
  );
  assert.throws(
    () => kernelTestHooks.matmul('Q4_0', new Uint8Array(18), 1, 32, new Float32Array(32), 1, 'q4xv-scalar'),
    /\+int16/,
  );
});

test('matmul handles zero weights and zero activations without NaN', () => {
  for (const isa of supportedIsas().flatMap((i) => [i, `${i}+int16`])) {
    for (const type of TYPES) {
      const cols = BLOCK[type] === 1 ? 64 : BLOCK[type] * 2;
      const zeros = new Float32Array(5 * cols);
      const q = kernelTestHooks.quantize(type, zeros, 5, cols);
      const x = randomMatrix(3 * cols, 99);
      const fromZeroWeights = kernelTestHooks.matmul(type, q, 5, cols, x, 3, isa);
      assert.ok(
        fromZeroWeights.length === 15 && fromZeroWeights.every((v) => v === 0),
        `${type} ${isa}: zero weights give ${Array.from(fromZeroWeights).slice(0, 4).join(',')}`,
      );
      const w = kernelTestHooks.quantize(type, randomMatrix(5 * cols, 7), 5, cols);
      const y = kernelTestHooks.matmul(type, w, 5, cols, new Float32Array(3 * cols), 3, isa);
      assert.ok(
        y.every((v) => v === 0),
        `${type} ${isa}: zero activations give ${Array.from(y).slice(0, 4).join(',')}`,
      );
    }
  }
});

/** Types whose int8 layouts the AMX driver serves (native/src/kernels/amx/matmul_amx.cc). */
const AMX_TYPES: readonly TensorType[] = ['Q5_K', 'IQ4_XS', 'Q4_0', 'Q4_1', 'Q4_K', 'Q8_0', 'Q6_K'];

test('amx: the AMX int8 tiles match the dequantized product and the AVX-512 kernels on ragged shapes', (t) => {
  if (!cpuFeatures().amx) {
    t.skip('this CPU (or its OS) has no AMX int8 tiles');
    return;
  }
  let seed = 7001;
  for (const type of AMX_TYPES) {
    // Rows and tokens that are not whole 16-tiles, blocks that end inside a 16-block group
    // (768, 2304), and n below the 16 at which matmul() switches (the "amx" family uses the
    // tiles for any n).
    for (const [rows, cols, n] of [
      [1, 256, 1],
      [16, 256, 16],
      [17, 768, 17],
      [45, 2304, 40],
      [33, 512, 3],
    ] as const) {
      const w = randomMatrix(rows * cols, seed++);
      const x = randomMatrix(n * cols, seed++, 3);
      const q = kernelTestHooks.quantize(type, w, rows, cols);
      const wd = kernelTestHooks.dequantize(type, q, rows, cols);
      const amx = kernelTestHooks.matmul(type, q, rows, cols, x, n, 'amx');
      const vnni = kernelTestHooks.matmul(type, q, rows, cols, x, n, 'avx512');
      const err = worstRelativeError(amx, wd, x, rows, cols, n);
      assert.ok(
        err < tolerance(type, 'avx512', 'int8'),
        `${type} amx rows=${rows} cols=${cols} n=${n}: relative error ${err}`,
      );
      // Same quantized activations and exact integer sums: only the f32 accumulation order
      // differs from the VNNI kernel.
      const xn = norms(x, n, cols);
      const wn = norms(wd, rows, cols);
      for (let tok = 0; tok < n; tok++) {
        for (let r = 0; r < rows; r++) {
          const d = Math.abs(amx[tok * rows + r]! - vnni[tok * rows + r]!) / (wn[r]! * xn[tok]! + 1e-30);
          assert.ok(
            d < 1e-6,
            `${type} amx vs avx512 rows=${rows} cols=${cols} n=${n} at (${tok}, ${r}): ${d}`,
          );
        }
      }
    }
  }
});

test('amx: PRISM_AMX=0 and a lower PRISM_ISA keep batches off the tiles', (t) => {
  if (!cpuFeatures().amx) {
    t.skip('this CPU (or its OS) has no AMX int8 tiles');
    return;
  }
  assert.equal(
    cpuFeatures().amxPrefill,
    cpuFeatures().selected === 'avx512' && process.env.PRISM_AMX !== '0',
  );
  // What a fresh process reports under each switch (the choice is made once per process).
  const probe = (env: Record<string, string>) => {
    const run = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { cpuFeatures } from '${new URL('./native.ts', import.meta.url).href}'; process.stdout.write(JSON.stringify(cpuFeatures()));`,
      ],
      { encoding: 'utf8', env: { ...process.env, ...env } },
    );
    assert.equal(run.status, 0, run.stderr);
    const features = JSON.parse(run.stdout) as {
      amx: boolean;
      amxPrefill: boolean;
      selected: string;
    };
    return { ...features, stderr: run.stderr };
  };
  const off = probe({ PRISM_AMX: '0', PRISM_ISA: 'avx512' });
  const avx2 = probe({ PRISM_AMX: '1', PRISM_ISA: 'avx2' });
  const on = probe({ PRISM_AMX: '1', PRISM_ISA: 'avx512' });
  assert.equal(off.amxPrefill, false);
  assert.equal(avx2.amxPrefill, false);
  assert.equal(on.amxPrefill, true);
  // A value other than 0 or 1 keeps the switch's default and says so, naming the variable.
  const bad = probe({ PRISM_AMX: 'yes', PRISM_ISA: 'avx512' });
  assert.equal(bad.amxPrefill, true);
  assert.match(bad.stderr, /PRISM_AMX must be 0 or 1; got 'yes', using the default \(on where supported\)/);
});

test('matmul rejects an unknown or unsupported ISA and shapes that do not fit the type', () => {
  const q = kernelTestHooks.quantize('Q8_0', randomMatrix(64, 3), 2, 32);
  const x = randomMatrix(32, 4);
  assert.throws(() => kernelTestHooks.matmul('Q8_0', q, 2, 32, x, 1, 'sse9'), /isa/);
  assert.throws(() => kernelTestHooks.matmul('Q8_0', q, 2, 32, x, 1, 'avx2+int4'), /\+int8 or \+int16/);
  assert.throws(() => kernelTestHooks.matmul('Q8_0', q, 2, 32, x, 1, 'sse9+int16'), /isa/);
  if (!supportedIsas().includes('avx512')) {
    assert.throws(() => kernelTestHooks.matmul('Q8_0', q, 2, 32, x, 1, 'avx512'), /not supported/);
  }
  if (!cpuFeatures().amx) {
    assert.throws(() => kernelTestHooks.matmul('Q8_0', q, 2, 32, x, 1, 'amx'), /not supported/);
  }
  // The amx family is int8's; the int16 layouts' tiles have families of their own.
  assert.throws(() => kernelTestHooks.matmul('Q8_0', q, 2, 32, x, 1, 'amx+int16'), /not supported/);
  assert.throws(() => kernelTestHooks.quantize('Q4_1', randomMatrix(40, 5), 1, 40), /multiple of 32/);
});

/** Max |x - deq(q(x))| over a row relative to the row's max |x|, per type. */
const ROUND_TRIP_BOUND: Record<TensorType, number> = {
  F32: 0,
  F16: 1e-3,
  BF16: 8e-3,
  Q8_0: 1 / 127 + 1e-4, // half a step of max/127 plus f16 rounding of d
  Q4_0: 1 / 8 + 1e-3, // half a step of max/8
  Q4_1: 1 / 15 + 1e-3, // half a step of (max-min)/15 ≤ 2·max/15
  Q4_K: 0.2, // 6-bit scales and mins on top of 4-bit values
  Q6_K: 0.05,
  Q5_0: 1 / 16 + 1e-3, // half a step of max/16
  Q5_1: 1 / 31 + 1e-3, // half a step of (max-min)/31 ≤ 2·max/31
  // The K and IQ4 quantizers here are plain searches (test encodings, not llama.cpp's):
  // bounds from their 6-bit (4-bit for Q2_K) scales on top of 5 / 3 / 2-bit values.
  Q5_K: 0.1,
  Q3_K: 0.35,
  Q2_K: 0.6,
  IQ4_NL: 0.12,
  IQ4_XS: 0.2,
};

test('quantize → dequantize round trip stays within each type’s error bound', () => {
  const rows = 6;
  const cols = 512;
  for (const type of TYPES) {
    const x = randomMatrix(rows * cols, 11, 5);
    const back = kernelTestHooks.dequantize(type, kernelTestHooks.quantize(type, x, rows, cols), rows, cols);
    for (let r = 0; r < rows; r++) {
      let maxAbs = 0;
      let maxErr = 0;
      for (let k = 0; k < cols; k++) {
        maxAbs = Math.max(maxAbs, Math.abs(x[r * cols + k]!));
        maxErr = Math.max(maxErr, Math.abs(x[r * cols + k]! - back[r * cols + k]!));
      }
      assert.ok(maxErr <= ROUND_TRIP_BOUND[type] * maxAbs, `${type} row ${r}: error ${maxErr / maxAbs}`);
    }
  }
});

// Dequantizes every file it is given with gguf.quants and writes the f32 result next to it;
// also quantizes the source floats where gguf has a quantizer for the type.
const PYTHON_GGUF = `
import sys, numpy as np
from gguf import GGMLQuantizationType as T, quants
d, types, rows, cols = sys.argv[1], sys.argv[2].split(','), int(sys.argv[3]), int(sys.argv[4])
for name in types:
    q = np.fromfile(f"{d}/{name}.q", dtype=np.uint8).reshape(rows, -1)
    quants.dequantize(q, T[name]).astype(np.float32).tofile(f"{d}/{name}.deq")
    try:
        x = np.fromfile(f"{d}/{name}.f32", dtype=np.float32).reshape(rows, cols)
        np.ascontiguousarray(quants.quantize(x, T[name])).view(np.uint8).tofile(f"{d}/{name}.pyq")
    except NotImplementedError:
        pass
`;

test('dequantization is bit-exact with the Python gguf package; quantization matches where gguf has a quantizer', (t) => {
  const probe = spawnSync('python3', ['-c', 'import gguf, numpy'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    t.skip('python3 with the gguf package is not available');
    return;
  }
  const rows = 5;
  const cols = 512;
  const dir = mkdtempSync(join(tmpdir(), 'prism-kernels-'));
  try {
    const quantized = new Map<TensorType, Uint8Array>();
    for (const [i, type] of TYPES.entries()) {
      const x = randomMatrix(rows * cols, 100 + i, 2);
      x.fill(0, 0, 40); // an all-zero block
      const q = kernelTestHooks.quantize(type, x, rows, cols);
      quantized.set(type, q);
      writeFileSync(join(dir, `${type}.f32`), x);
      writeFileSync(join(dir, `${type}.q`), q);
    }
    const run = spawnSync('python3', ['-c', PYTHON_GGUF, dir, TYPES.join(','), String(rows), String(cols)], {
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stderr);
    for (const type of TYPES) {
      const ours = new Uint32Array(kernelTestHooks.dequantize(type, quantized.get(type)!, rows, cols).buffer);
      const theirsBytes = readFileSync(join(dir, `${type}.deq`));
      const theirs = new Uint32Array(theirsBytes.buffer, theirsBytes.byteOffset, theirsBytes.byteLength / 4);
      assert.equal(ours.length, theirs.length, type);
      const firstDiff = ours.findIndex((v, i) => v !== theirs[i]);
      assert.equal(firstDiff, -1, `${type}: dequantized value ${firstDiff} differs from gguf's`);
      let pyq: Buffer | undefined;
      try {
        pyq = readFileSync(join(dir, `${type}.pyq`));
      } catch {
        pyq = undefined; // gguf has no quantizer for this type (the K-quants)
      }
      if (pyq !== undefined) {
        assert.ok(
          Buffer.from(quantized.get(type)!).equals(pyq),
          `${type}: quantized bytes differ from gguf's`,
        );
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
