/**
 * The encoders' and vision towers' bidirectional attention (native/src/encoder/packed_attention.cc),
 * through the kernel test hook: within f32 rounding of a float64 softmax(q·Kᵀ/√d)·V on every
 * head size the families use (multiples of 8, with and without a 16-float tail) and on inputs
 * of 1 to 300 tokens packed end to end (the query-block and key-tile tails), on one thread and
 * on two; each input's rows the same bits whatever is packed beside it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { cpuFeatures, kernelTestHooks } from './native.js';
import { randomMatrix } from './test-matrices.js';

interface Packed {
  qkv: Float32Array;
  offsets: Int32Array;
}

function pack(lengths: readonly number[], heads: number, headDim: number, seed: number): Packed {
  const offsets = Int32Array.from([
    0,
    ...lengths.map((_, i) => lengths.slice(0, i + 1).reduce((a, b) => a + b, 0)),
  ]);
  const tokens = offsets[offsets.length - 1]!;
  return { qkv: randomMatrix(tokens * 3 * heads * headDim, seed, 2), offsets };
}

function reference({ qkv, offsets }: Packed, heads: number, headDim: number): Float64Array {
  const D = heads * headDim;
  const ld = 3 * D;
  const out = new Float64Array(offsets[offsets.length - 1]! * D);
  for (let s = 0; s + 1 < offsets.length; s++) {
    const t0 = offsets[s]!;
    const n = offsets[s + 1]! - t0;
    for (let h = 0; h < heads; h++)
      for (let i = 0; i < n; i++) {
        const w = new Float64Array(n);
        let mx = -Infinity;
        for (let j = 0; j < n; j++) {
          let dot = 0;
          for (let d = 0; d < headDim; d++)
            dot += qkv[(t0 + i) * ld + h * headDim + d]! * qkv[(t0 + j) * ld + D + h * headDim + d]!;
          w[j] = dot / Math.sqrt(headDim);
          mx = Math.max(mx, w[j]!);
        }
        let sum = 0;
        for (let j = 0; j < n; j++) sum += w[j] = Math.exp(w[j]! - mx);
        for (let d = 0; d < headDim; d++) {
          let acc = 0;
          for (let j = 0; j < n; j++) acc += w[j]! * qkv[(t0 + j) * ld + 2 * D + h * headDim + d]!;
          out[(t0 + i) * D + h * headDim + d] = acc / sum;
        }
      }
  }
  return out;
}

const LENGTH_SETS: readonly (readonly number[])[] = [
  [1],
  [3],
  [1, 2, 3, 4, 5],
  [17, 4, 33],
  [300],
  [255, 16, 1, 129],
];

test('attention matches the float64 reference on every head size and ragged packing', (t) => {
  if (!cpuFeatures().avx2) return t.skip('this CPU has no AVX2');
  let seed = 5;
  for (const headDim of [8, 16, 24, 32, 64, 72])
    for (const lengths of LENGTH_SETS)
      for (const threads of [1, 2]) {
        const heads = headDim >= 64 ? 2 : 3;
        const p = pack(lengths, heads, headDim, seed++);
        const got = kernelTestHooks.attention(p.qkv, p.offsets, heads, headDim, threads);
        const want = reference(p, heads, headDim);
        assert.equal(got.length, want.length);
        let err = 0;
        let norm = 0;
        for (let i = 0; i < got.length; i++) {
          err = Math.max(err, Math.abs(got[i]! - want[i]!));
          norm = Math.max(norm, Math.abs(want[i]!));
        }
        assert.ok(
          err / norm < 1e-5,
          `headDim ${headDim}, lengths ${lengths.join(',')}, threads ${threads}: relative error ${err / norm}`,
        );
      }
});

test('attention: an input gets the same bits alone as packed beside others', (t) => {
  if (!cpuFeatures().avx2) return t.skip('this CPU has no AVX2');
  const heads = 2;
  const headDim = 24;
  const packed = pack([7, 40, 19], heads, headDim, 99);
  const D = heads * headDim;
  const all = kernelTestHooks.attention(packed.qkv, packed.offsets, heads, headDim, 2);
  const middle = packed.qkv.slice(7 * 3 * D, 47 * 3 * D);
  const alone = kernelTestHooks.attention(middle, Int32Array.of(0, 40), heads, headDim, 1);
  assert.deepEqual(
    new Uint32Array(alone.buffer),
    new Uint32Array(all.slice(7 * D, 47 * D).buffer),
    'the middle input depends on its neighbours',
  );
});

test('the attention hook refuses a malformed batch, naming the argument', () => {
  const qkv = new Float32Array(3 * 3 * 8);
  assert.throws(
    () => kernelTestHooks.attention(qkv, Int32Array.of(0, 3), 1, 12, 1),
    /headDim must be a multiple of 8/,
  );
  assert.throws(() => kernelTestHooks.attention(qkv, Int32Array.of(0, 4), 1, 8, 1), /qkv must hold/);
  assert.throws(
    () => kernelTestHooks.attention(qkv, Int32Array.of(0, 2, 1), 1, 8, 1),
    /seqOffsets must not decrease/,
  );
  assert.throws(
    () => kernelTestHooks.attention(qkv, Int32Array.of(0), 1, 8, 1),
    /seqOffsets needs at least 2/,
  );
});
