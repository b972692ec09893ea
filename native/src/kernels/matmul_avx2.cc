// AVX2 matmul kernels (baseline build: AVX2 + FMA + F16C).
//
// Quantized weights: the activations are quantized once per call to int8 blocks of 32
// (QuantizedActivations), then each tile of R weight rows × T tokens runs integer dot
// products per block (maddubs + madd), scaled to f32 and accumulated in f32. 4-bit weights
// come repacked (kLayoutQ4X, two blocks per 32-byte load); Q8_0 and Q6_K are read in place. A weight block
// is unpacked once per tile and reused for T tokens; an activation block is reused for R
// rows. Decode (n ≤ 2) streams each weight row exactly once; larger n splits rows (or
// tokens) across threads and walks tokens in cache-sized chunks.
//
// ActivationPrecision::Int16 (chosen per weight): the activations are quantized to int16
// blocks of 32 instead, the weight block is widened to int16 once per tile and the dot
// products use madd (int16 × int16 → int32 pairs); same work split and offset term, tiles
// of 2 rows × 4 tokens (widening costs more than the int8 unpack, so it is shared by more
// tokens) and the same token count per chunk as int8 (twice the bytes: about all of L1).
// Tiles and chunk, changed together from the int8 shapes, made n = 1024 ~1.4x faster.
// Per-lane int32 sums are at most about 2^24 (4 products of ≤ 128 × 32767; Q6_K's scaled
// weights: 2^29), so the f32 conversion is exact or rounds at ≤ 6e-8 relative, far below
// the int16 rounding.
//
// Float weights (F32/F16/BF16): the same R × T tiling with f32 FMAs, converting the weights
// on the fly (F16C / bf16 shift); activations stay f32.
#include <algorithm>

#include "kernels/internal.h"
#include "kernels/planes.h"
#include "kernels/quant_blocks_x86.h"

namespace prism::kernels {
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int hsumI32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// One block of 32 activations scaled to integers in [-qmax, qmax]: d = max|x| / qmax,
// q = round(x / d) as four vectors of 8 int32 (values 0-7, 8-15, 16-23, 24-31), sum = Σq.
// The int8 and int16 quantizers below differ only in qmax and in how they pack q.
struct ScaledBlock {
  __m256i q[4];
  float d;
  int sum;
};

static inline ScaledBlock scaleBlock(const float* p, float qmax) {
  const __m256 signMask = _mm256_set1_ps(-0.0f);
  __m256 v0 = _mm256_loadu_ps(p), v1 = _mm256_loadu_ps(p + 8), v2 = _mm256_loadu_ps(p + 16),
         v3 = _mm256_loadu_ps(p + 24);
  __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(signMask, v0), _mm256_andnot_ps(signMask, v1)),
                           _mm256_max_ps(_mm256_andnot_ps(signMask, v2), _mm256_andnot_ps(signMask, v3)));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  float amax = _mm_cvtss_f32(m4);
  __m256 id = _mm256_set1_ps(amax != 0 ? qmax / amax : 0.0f);
  ScaledBlock out;
  out.d = amax / qmax;
  const __m256 v[4] = {v0, v1, v2, v3};
  for (int k = 0; k < 4; ++k)
    out.q[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  out.sum = hsumI32(_mm256_add_epi32(_mm256_add_epi32(out.q[0], out.q[1]), _mm256_add_epi32(out.q[2], out.q[3])));
  return out;
}

// Quantizes rows [t0, t1) of x (cols a multiple of 32) into `qa`: per block of 32,
// d = max|x| / 127, q = round(x / d), s = d * Σq.
void quantizeActivations(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations& qa) {
  const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * ldx;
    int8_t* q = qa.qs + t * qa.cols;
    for (int64_t b = 0; b < qa.blocks; ++b) {
      ScaledBlock blk = scaleBlock(xt + b * kQK, 127.0f);
      // packs work within 128-bit lanes; the permute restores the original order.
      __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(blk.q[0], blk.q[1]), _mm256_packs_epi32(blk.q[2], blk.q[3]));
      packed = _mm256_permutevar8x32_epi32(packed, perm);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kQK), packed);
      qa.d[t * qa.blocks + b] = blk.d;
      qa.s[t * qa.blocks + b] = blk.d * static_cast<float>(blk.sum);
    }
  }
}

// Same blocks at 16 bits: d = max|x| / 32767, q = round(x / d), s = d * Σq, and the halves'
// sa = d * Σq[0..15], sb = d * Σq[16..31].
void quantizeActivations(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations16& qa) {
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * ldx;
    int16_t* q = qa.qs + t * qa.cols;
    for (int64_t b = 0; b < qa.blocks; ++b) {
      ScaledBlock blk = scaleBlock(xt + b * kQK, 32767.0f);
      // packs works within 128-bit lanes; the 64-bit permute restores the original order.
      __m256i p01 = _mm256_permute4x64_epi64(_mm256_packs_epi32(blk.q[0], blk.q[1]), 0xD8);
      __m256i p23 = _mm256_permute4x64_epi64(_mm256_packs_epi32(blk.q[2], blk.q[3]), 0xD8);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kQK), p01);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kQK + 16), p23);
      const int sumA = hsumI32(_mm256_add_epi32(blk.q[0], blk.q[1]));
      qa.d[t * qa.blocks + b] = blk.d;
      qa.s[t * qa.blocks + b] = blk.d * static_cast<float>(blk.sum);
      qa.sa[t * qa.blocks + b] = blk.d * static_cast<float>(sumA);
      qa.sb[t * qa.blocks + b] = blk.d * static_cast<float>(blk.sum - sumA);
    }
  }
}

// Integer dot of one 32-value block of signed weights: 8 int32 partial sums.
template <class Dec>
inline __m256i blockDot(__m256i w, __m256i wAbs, __m256i x, __m256i intScales) {
  __m256i p16 = _mm256_maddubs_epi16(wAbs, _mm256_sign_epi8(x, w));
  if constexpr (Dec::kIntScales) return _mm256_madd_epi16(p16, intScales);
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

// One tile: rows [r0, r0+R) × tokens [t0, t0+T).
template <class Dec, int R, int T>
void quantTile(const LinearWeight& W, size_t rowBytes, const QuantizedActivations& qa, int64_t r0, int64_t t0,
               float* y, int64_t ldy) {
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = weightData(W) + rowBytes * static_cast<size_t>(r0 + r);
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const int64_t blocks = qa.blocks;
  for (int64_t b = 0; b < blocks; ++b) {
    __m256i x[T];
    __m256 dx[T];
    for (int t = 0; t < T; ++t) {
      x[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qa.qs + (t0 + t) * qa.cols + b * kQK));
      dx[t] = _mm256_set1_ps(qa.d[(t0 + t) * blocks + b]);
    }
    for (int r = 0; r < R; ++r) {
      __m256i w = Dec::weights(rows[r], b);
      __m256i wAbs = _mm256_sign_epi8(w, w);
      __m256i isc;
      if constexpr (Dec::kIntScales) isc = Dec::intScales(rows[r], b);
      else isc = _mm256_setzero_si256();
      __m256 dw = _mm256_set1_ps(Dec::scale(rows[r], b));
      for (int t = 0; t < T; ++t) {
        __m256 dot = _mm256_cvtepi32_ps(blockDot<Dec>(w, wAbs, x[t], isc));
        acc[r][t] = _mm256_fmadd_ps(dot, _mm256_mul_ps(dw, dx[t]), acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = hsum(acc[r][t]);
}

// Largest row/token tile sizes. 4 rows × 2 tokens keeps 8 accumulators + 4 weight blocks +
// activations within the 16 ymm registers.
constexpr int kRowTile = 4;
constexpr int kTokenTile = 2;
// Tokens per pass for the float kernels (their activations are f32, 4× the int8 size).
constexpr int64_t kTokenChunk = 64;

template <class Dec, int R>
void quantRows(const LinearWeight& W, size_t rowBytes, const QuantizedActivations& qa, int64_t r0,
               int64_t t0, int64_t t1, float* y, int64_t ldy) {
  int64_t t = t0;
  for (; t + kTokenTile <= t1; t += kTokenTile) quantTile<Dec, R, kTokenTile>(W, rowBytes, qa, r0, t, y, ldy);
  for (; t < t1; ++t) quantTile<Dec, R, 1>(W, rowBytes, qa, r0, t, y, ldy);
}

// ---- int16 activations, GGUF blocks read in place (Q8_0, Q6_K, Q5_*, Q3_K, Q2_K, IQ4_*) ----

// One tile with int16 activations: each weight block is widened to two vectors of 16 int16
// (values 0..15, 16..31) once and multiplied (madd) against R × T activation blocks. Q6_K's
// (Q3_K's, Q2_K's) two per-16 integer scales multiply the two halves' weights; a type with
// offsets (Q5_1, Q5_K, Q2_K) adds offset · (d_x · Σq_x) per half, in a scalar beside the
// vector accumulator.
template <class Dec, int R, int T>
void quantTile16(const LinearWeight& W, size_t rowBytes, const QuantizedActivations16& qa, int64_t r0, int64_t t0,
                 float* y, int64_t ldy) {
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = weightData(W) + rowBytes * static_cast<size_t>(r0 + r);
  __m256 acc[R][T];
  float off[R][T] = {};
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const int64_t blocks = qa.blocks;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int r = 0; r < R; ++r) {
      if constexpr (Dec::kOffsets) {
        float ma, mb;
        Dec::offsets(rows[r], b, &ma, &mb);
        for (int t = 0; t < T; ++t) {
          const int64_t i = (t0 + t) * blocks + b;
          off[r][t] += ma * qa.sa[i] + mb * qa.sb[i];
        }
      }
      __m256i w = Dec::weights(rows[r], b);
      __m256i wa = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(w));
      __m256i wb = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(w, 1));
      if constexpr (Dec::kIntScales) {
        int sa, sb;
        Dec::halfScales(rows[r], b, &sa, &sb);
        // Scaling the widened weights keeps one madd per half: |w·sc| ≤ 32·128 fits int16,
        // and a lane of the two madds summed (4 products ≤ 4096·32767) stays below 2^29
        // (its f32 conversion rounds at 6e-8 relative, far below the int16 rounding).
        wa = _mm256_mullo_epi16(wa, _mm256_set1_epi16(static_cast<int16_t>(sa)));
        wb = _mm256_mullo_epi16(wb, _mm256_set1_epi16(static_cast<int16_t>(sb)));
      }
      __m256 dw = _mm256_set1_ps(Dec::scale(rows[r], b));
      for (int t = 0; t < T; ++t) {
        const int16_t* xb = qa.qs + (t0 + t) * qa.cols + b * kQK;
        __m256i p = _mm256_add_epi32(
            _mm256_madd_epi16(wa, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb))),
            _mm256_madd_epi16(wb, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb + 16))));
        __m256 dx = _mm256_set1_ps(qa.d[(t0 + t) * blocks + b]);
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dw, dx), acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = hsum(acc[r][t]) + off[r][t];
}

// Int16 tiles: 2 rows × 4 tokens. Widening a weight block costs more than the int8 unpack,
// so each widened block serves 4 tokens; 8 accumulators + 2-4 widened halves fit in 16
// registers (the activations are read straight from L1 by madd).
constexpr int kRowTile16 = 2;
constexpr int kTokenTile16 = 4;

template <class Dec, int R>
void quantRows16(const LinearWeight& W, size_t rowBytes, const QuantizedActivations16& qa, int64_t r0,
                 int64_t t0, int64_t t1, float* y, int64_t ldy) {
  int64_t t = t0;
  for (; t + kTokenTile16 <= t1; t += kTokenTile16) quantTile16<Dec, R, kTokenTile16>(W, rowBytes, qa, r0, t, y, ldy);
  for (; t < t1; ++t) quantTile16<Dec, R, 1>(W, rowBytes, qa, r0, t, y, ldy);
}

// Rows [rb, re) × tokens [tb, te) on the calling thread, GGUF-layout blocks, with
// activations of type Value (int8_t or int16_t).
template <class Dec, class Value = int8_t>
struct GgufKernel {
  using Act = BlockActivations<Value>;
  static constexpr bool kWide = sizeof(Value) == 2;
  static constexpr int kRowTile = kWide ? kRowTile16 : prism::kernels::kRowTile;
  static void range(const LinearWeight& W, const Act& qa, int64_t rb, int64_t re, int64_t tb,
                    int64_t te, float* y, int64_t ldy) {
    size_t rowBytes = typeRowBytes(W.type, W.cols);
    const int64_t group = rowGroupFor(rowBytes, kRowTile);
    const int64_t chunk = tokenChunkFor(W.cols, kWide ? kTokenTile16 : kTokenTile);
    for (int64_t g0 = rb; g0 < re; g0 += group) {
      int64_t g1 = std::min(re, g0 + group);
      for (int64_t c0 = tb; c0 < te; c0 += chunk) {
        int64_t c1 = std::min(te, c0 + chunk);
        int64_t r = g0;
        if constexpr (sizeof(Value) == 1) {
          for (; r + kRowTile <= g1; r += kRowTile) quantRows<Dec, kRowTile>(W, rowBytes, qa, r, c0, c1, y, ldy);
          for (; r < g1; ++r) quantRows<Dec, 1>(W, rowBytes, qa, r, c0, c1, y, ldy);
        } else {
          for (; r + kRowTile <= g1; r += kRowTile) quantRows16<Dec, kRowTile>(W, rowBytes, qa, r, c0, c1, y, ldy);
          for (; r < g1; ++r) quantRows16<Dec, 1>(W, rowBytes, qa, r, c0, c1, y, ldy);
        }
      }
    }
  }
};

// Splits rows (in whole row tiles) across threads when there are enough of them, otherwise
// tokens; the owner quantizes small activation batches itself (a second parallel region
// costs more than quantizing one or two tokens).
template <class Kernel>
void quantMatmul(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                 ThreadPool& pool, KernelScratch& scratch) {
  using Act = typename Kernel::Act;
  Act qa;
  placeActivations(scratch.bytes(quantizedActivationBytes(n, W.cols, sizeof(*qa.qs))), n, W.cols, &qa);
  if (n <= 4) {
    quantizeActivations(x, ldx, 0, n, qa);
  } else {
    pool.parallelFor(n, [&](int64_t t0, int64_t t1) { quantizeActivations(x, ldx, t0, t1, qa); });
  }
  const int threads = pool.size();
  constexpr int rt = Kernel::kRowTile;
  const int64_t rowTiles = (W.rows + rt - 1) / rt;
  if (rowTiles >= 4 * threads || n < 2 * threads) {
    auto task = [&](int i, int nt) {
      int64_t rb = rowTiles * i / nt * rt, re = std::min(W.rows, rowTiles * (i + 1) / nt * rt);
      if (!scratch.hasPrefetch()) {
        if (rb < re) Kernel::range(W, qa, rb, re, 0, n, y, ldy);
        return;
      }
      // One row tile at a time (the same per-row arithmetic: pieces start on row-tile
      // boundaries), each after its even slice of the prefetch, so the loads spread over the
      // whole matmul instead of stalling it in one burst.
      const int64_t pieces = rowTiles / nt + 1;
      for (int64_t k = 0; k < pieces; k++) {
        scratch.prefetchSlice(i * pieces + k, nt * pieces);
        const int64_t a = rb + k * rt, b = std::min(re, a + rt);
        if (a < b) Kernel::range(W, qa, a, b, 0, n, y, ldy);
      }
    };
    pool.run(TaskRef(task));
  } else {
    pool.parallelFor(n, [&](int64_t t0, int64_t t1) { Kernel::range(W, qa, 0, W.rows, t0, t1, y, ldy); });
  }
}

// ---- 4-bit weights in kLayoutQ4X -----------------------------------------------------

// hsum(acc) + Σ_b m[b] · s[b]: adds the per-block offsets (Q4_1 min, Q4_0's -8d, Q4_K's
// -dmin·m) against the activation block sums into the tile's accumulator, 8 blocks per FMA,
// so one horizontal sum serves both.
inline float offsetDotInto(__m256 acc, const float* m, const float* s, int64_t blocks) {
  int64_t b = 0;
  for (; b + 8 <= blocks; b += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(m + b), _mm256_loadu_ps(s + b), acc);
  float tail = 0;
  for (; b < blocks; ++b) tail += m[b] * s[b];
  return hsum(acc) + tail;
}

template <int R, int T>
void q4xTile(const uint8_t* weights, int64_t cols, const QuantizedActivations& qa, int64_t r0, int64_t t0, float* y,
             int64_t ldy) {
  Q4XRow rows[R];
  for (int r = 0; r < R; ++r) rows[r] = q4xRow(weights, cols, r0 + r);
  const int8_t* xq[T];
  const float* xd[T];
  for (int t = 0; t < T; ++t) {
    xq[t] = qa.qs + (t0 + t) * qa.cols;
    xd[t] = qa.d + (t0 + t) * qa.blocks;
  }
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const __m256i lowMask = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  const int64_t blocks = qa.blocks;
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    for (int r = 0; r < R; ++r) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r].nibbles + b * 16));
      __m256i w0 = _mm256_and_si256(v, lowMask);
      __m256i w1 = _mm256_and_si256(_mm256_srli_epi16(v, 4), lowMask);
      __m256 d0 = _mm256_broadcast_ss(rows[r].d + b);
      __m256 d1 = _mm256_broadcast_ss(rows[r].d + b + 1);
      for (int t = 0; t < T; ++t) {
        __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[t] + b * kQK));
        __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[t] + b * kQK + kQK));
        __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(w0, x0), ones);
        __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(w1, x1), ones);
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_mul_ps(d0, _mm256_broadcast_ss(xd[t] + b)), acc[r][t]);
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_mul_ps(d1, _mm256_broadcast_ss(xd[t] + b + 1)), acc[r][t]);
      }
    }
  }
  if (b < blocks) {  // odd block count: the last group holds one block, in its low nibbles
    for (int r = 0; r < R; ++r) {
      __m256i w0 = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r].nibbles + b * 16)), lowMask);
      __m256 d0 = _mm256_set1_ps(rows[r].d[b]);
      for (int t = 0; t < T; ++t) {
        __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[t] + b * kQK));
        __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(w0, x0), ones);
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_mul_ps(d0, _mm256_set1_ps(xd[t][b])), acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      y[(t0 + t) * ldy + r0 + r] = offsetDotInto(acc[r][t], rows[r].m, qa.s + (t0 + t) * blocks, blocks);
}

// The same with int16 activations: a 32-byte group is read as two 16-byte halves, each
// widened to 16-bit lanes, where a mask gives block b's values and a shift block b+1's (no
// byte-level unpacking); madd multiplies them against the int16 activations.
template <int R, int T>
void q4xTile16(const uint8_t* weights, int64_t cols, const QuantizedActivations16& qa, int64_t r0, int64_t t0,
               float* y, int64_t ldy) {
  Q4XRow rows[R];
  for (int r = 0; r < R; ++r) rows[r] = q4xRow(weights, cols, r0 + r);
  const int16_t* xq[T];
  const float* xd[T];
  for (int t = 0; t < T; ++t) {
    xq[t] = qa.qs + (t0 + t) * qa.cols;
    xd[t] = qa.d + (t0 + t) * qa.blocks;
  }
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const __m256i lowMask = _mm256_set1_epi16(0x0F);
  auto x16 = [](const int16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
  const int64_t blocks = qa.blocks;
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    for (int r = 0; r < R; ++r) {
      const __m128i* g = reinterpret_cast<const __m128i*>(rows[r].nibbles + b * 16);
      __m256i lo = _mm256_cvtepu8_epi16(_mm_loadu_si128(g));      // group bytes 0..15
      __m256i hi = _mm256_cvtepu8_epi16(_mm_loadu_si128(g + 1));  // group bytes 16..31
      __m256i w0a = _mm256_and_si256(lo, lowMask), w0b = _mm256_and_si256(hi, lowMask);
      __m256i w1a = _mm256_srli_epi16(lo, 4), w1b = _mm256_srli_epi16(hi, 4);
      __m256 d0 = _mm256_broadcast_ss(rows[r].d + b);
      __m256 d1 = _mm256_broadcast_ss(rows[r].d + b + 1);
      for (int t = 0; t < T; ++t) {
        const int16_t* xb = xq[t] + b * kQK;
        __m256i p0 = _mm256_add_epi32(_mm256_madd_epi16(w0a, x16(xb)), _mm256_madd_epi16(w0b, x16(xb + 16)));
        __m256i p1 = _mm256_add_epi32(_mm256_madd_epi16(w1a, x16(xb + 32)), _mm256_madd_epi16(w1b, x16(xb + 48)));
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_mul_ps(d0, _mm256_broadcast_ss(xd[t] + b)), acc[r][t]);
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_mul_ps(d1, _mm256_broadcast_ss(xd[t] + b + 1)), acc[r][t]);
      }
    }
  }
  if (b < blocks) {  // odd block count: the last group holds one block, in its low nibbles
    for (int r = 0; r < R; ++r) {
      const __m128i* g = reinterpret_cast<const __m128i*>(rows[r].nibbles + b * 16);
      __m256i w0a = _mm256_and_si256(_mm256_cvtepu8_epi16(_mm_loadu_si128(g)), lowMask);
      __m256i w0b = _mm256_and_si256(_mm256_cvtepu8_epi16(_mm_loadu_si128(g + 1)), lowMask);
      __m256 d0 = _mm256_set1_ps(rows[r].d[b]);
      for (int t = 0; t < T; ++t) {
        const int16_t* xb = xq[t] + b * kQK;
        __m256i p0 = _mm256_add_epi32(_mm256_madd_epi16(w0a, x16(xb)), _mm256_madd_epi16(w0b, x16(xb + 16)));
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_mul_ps(d0, _mm256_set1_ps(xd[t][b])), acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      y[(t0 + t) * ldy + r0 + r] = offsetDotInto(acc[r][t], rows[r].m, qa.s + (t0 + t) * blocks, blocks);
}

// 4 rows × 2 tokens: 8 accumulators + 2 unpacked blocks + 2 row scales in 16 registers
// (2 × 4 measured the same; 3 × 3 and 4 × 3 spill and were slower).
constexpr int kQ4XRowTile = 4;
constexpr int kQ4XTokenTile = 2;

template <int R, class Value>
void q4xRows(const uint8_t* weights, int64_t cols, const BlockActivations<Value>& qa, int64_t r0, int64_t t0,
             int64_t t1, float* y, int64_t ldy) {
  int64_t t = t0;
  if constexpr (sizeof(Value) == 1) {
    for (; t + kQ4XTokenTile <= t1; t += kQ4XTokenTile) q4xTile<R, kQ4XTokenTile>(weights, cols, qa, r0, t, y, ldy);
    for (; t < t1; ++t) q4xTile<R, 1>(weights, cols, qa, r0, t, y, ldy);
  } else {
    for (; t + kTokenTile16 <= t1; t += kTokenTile16) q4xTile16<R, kTokenTile16>(weights, cols, qa, r0, t, y, ldy);
    for (; t < t1; ++t) q4xTile16<R, 1>(weights, cols, qa, r0, t, y, ldy);
  }
}

template <class Value = int8_t>
struct Q4XKernel {
  using Act = BlockActivations<Value>;
  static constexpr bool kWide = sizeof(Value) == 2;
  static constexpr int kRowTile = kWide ? kRowTile16 : kQ4XRowTile;
  static void range(const LinearWeight& W, const Act& qa, int64_t rb, int64_t re, int64_t tb, int64_t te, float* y,
                    int64_t ldy) {
    const uint8_t* weights = weightData(W);
    const int64_t group = rowGroupFor(q4xRowBytes(W.cols), kRowTile);
    const int64_t chunk = tokenChunkFor(W.cols, kWide ? kTokenTile16 : kQ4XTokenTile);
    for (int64_t g0 = rb; g0 < re; g0 += group) {
      int64_t g1 = std::min(re, g0 + group);
      for (int64_t c0 = tb; c0 < te; c0 += chunk) {
        int64_t c1 = std::min(te, c0 + chunk);
        int64_t r = g0;
        for (; r + kRowTile <= g1; r += kRowTile) q4xRows<kRowTile>(weights, W.cols, qa, r, c0, c1, y, ldy);
        for (; r < g1; ++r) q4xRows<1>(weights, W.cols, qa, r, c0, c1, y, ldy);
      }
    }
  }
};

// ---- float weights ---------------------------------------------------------------------

struct ConvF32 {
  static __m256 load(const uint8_t* row, int64_t k) { return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k); }
  static float one(const uint8_t* row, int64_t k) { return reinterpret_cast<const float*>(row)[k]; }
};
struct ConvF16 {
  static __m256 load(const uint8_t* row, int64_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
  }
  static float one(const uint8_t* row, int64_t k) { return f16ToF32(loadU16(row + 2 * k)); }
};
struct ConvBF16 {
  static __m256 load(const uint8_t* row, int64_t k) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static float one(const uint8_t* row, int64_t k) { return bf16ToF32(loadU16(row + 2 * k)); }
};

template <class Conv, int R, int T>
void floatTile(const LinearWeight& W, size_t rowBytes, const float* x, int64_t ldx, int64_t r0, int64_t t0,
               float* y, int64_t ldy) {
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = weightData(W) + rowBytes * static_cast<size_t>(r0 + r);
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const int64_t cols = W.cols, vecCols = cols & ~int64_t(7);
  for (int64_t k = 0; k < vecCols; k += 8) {
    __m256 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm256_loadu_ps(x + (t0 + t) * ldx + k);
    for (int r = 0; r < R; ++r) {
      __m256 w = Conv::load(rows[r], k);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(w, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float s = hsum(acc[r][t]);
      for (int64_t k = vecCols; k < cols; ++k) s += Conv::one(rows[r], k) * x[(t0 + t) * ldx + k];
      y[(t0 + t) * ldy + r0 + r] = s;
    }
  }
}

// Float tiles: 4 rows × 3 tokens = 12 accumulators + 3 activation vectors + 1 weight.
constexpr int kFloatTokenTile = 3;

template <class Conv>
void floatRange(const LinearWeight& W, const float* x, int64_t ldx, int64_t rb, int64_t re, int64_t tb,
                int64_t te, float* y, int64_t ldy) {
  size_t rowBytes = typeRowBytes(W.type, W.cols);
  for (int64_t c0 = tb; c0 < te; c0 += kTokenChunk) {
    int64_t c1 = std::min(te, c0 + kTokenChunk);
    for (int64_t r = rb; r < re;) {
      int rt = re - r >= kRowTile ? kRowTile : 1;
      int64_t t = c0;
      if (rt == kRowTile) {
        for (; t + kFloatTokenTile <= c1; t += kFloatTokenTile)
          floatTile<Conv, kRowTile, kFloatTokenTile>(W, rowBytes, x, ldx, r, t, y, ldy);
        for (; t < c1; ++t) floatTile<Conv, kRowTile, 1>(W, rowBytes, x, ldx, r, t, y, ldy);
      } else {
        for (; t + kFloatTokenTile <= c1; t += kFloatTokenTile)
          floatTile<Conv, 1, kFloatTokenTile>(W, rowBytes, x, ldx, r, t, y, ldy);
        for (; t < c1; ++t) floatTile<Conv, 1, 1>(W, rowBytes, x, ldx, r, t, y, ldy);
      }
      r += rt;
    }
  }
}

template <class Conv>
void floatMatmul(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                 ThreadPool& pool) {
  const int threads = pool.size();
  const int64_t rowTiles = (W.rows + kRowTile - 1) / kRowTile;
  if (rowTiles >= 4 * threads || n < 2 * threads) {
    auto task = [&](int i, int nt) {
      int64_t rb = rowTiles * i / nt * kRowTile, re = std::min(W.rows, rowTiles * (i + 1) / nt * kRowTile);
      if (rb < re) floatRange<Conv>(W, x, ldx, rb, re, 0, n, y, ldy);
    };
    pool.run(TaskRef(task));
  } else {
    pool.parallelFor(n, [&](int64_t t0, int64_t t1) { floatRange<Conv>(W, x, ldx, 0, W.rows, t0, t1, y, ldy); });
  }
}

}  // namespace

bool matmulAvx2(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                ThreadPool& pool, KernelScratch& scratch) {
  const bool wide = W.precision == ActivationPrecision::Int16;
  if (isPlaneLayout(W.layout)) {
    planeMatmulAvx2(W, x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout == kLayoutQ4GK) {
    q4gkMatmulAvx2(W, x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout == kLayoutQ8G) {
    q8gMatmulAvx2(W, x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout == kLayoutQ6G) {
    q6gMatmulAvx2(W, x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout == kLayoutQ4G16 || W.layout == kLayoutQ4G32 || W.layout == kLayoutQ4G0) {
    q4gMatmulAvx2(W, x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout == kLayoutQ4X) {
    if (wide) quantMatmul<Q4XKernel<int16_t>>(W, x, n, ldx, y, ldy, pool, scratch);
    else quantMatmul<Q4XKernel<int8_t>>(W, x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout != kLayoutGguf) return false;
  switch (W.type) {
    case TensorType::Q8_0:
      if (wide) quantMatmul<GgufKernel<DecQ8_0, int16_t>>(W, x, n, ldx, y, ldy, pool, scratch);
      else quantMatmul<GgufKernel<DecQ8_0>>(W, x, n, ldx, y, ldy, pool, scratch);
      return true;
    case TensorType::Q6_K:
      if (wide) quantMatmul<GgufKernel<DecQ6_K, int16_t>>(W, x, n, ldx, y, ldy, pool, scratch);
      else quantMatmul<GgufKernel<DecQ6_K>>(W, x, n, ldx, y, ldy, pool, scratch);
      return true;
    // With int8 activations these are repacked into bit planes (planes.h): only int16 here.
    case TensorType::Q5_0:
      if (!wide) return false;
      quantMatmul<GgufKernel<DecQ5<false>, int16_t>>(W, x, n, ldx, y, ldy, pool, scratch);
      return true;
    case TensorType::Q5_1:
      if (!wide) return false;
      quantMatmul<GgufKernel<DecQ5<true>, int16_t>>(W, x, n, ldx, y, ldy, pool, scratch);
      return true;
    case TensorType::Q5_K:
      if (!wide) return false;
      quantMatmul<GgufKernel<DecQ5_K, int16_t>>(W, x, n, ldx, y, ldy, pool, scratch);
      return true;
    case TensorType::Q3_K:
      if (!wide) return false;
      quantMatmul<GgufKernel<DecQ3_K, int16_t>>(W, x, n, ldx, y, ldy, pool, scratch);
      return true;
    case TensorType::Q2_K:
      if (!wide) return false;
      quantMatmul<GgufKernel<DecQ2_K, int16_t>>(W, x, n, ldx, y, ldy, pool, scratch);
      return true;
    case TensorType::IQ4_NL:
      if (!wide) return false;
      quantMatmul<GgufKernel<DecIQ4<false>, int16_t>>(W, x, n, ldx, y, ldy, pool, scratch);
      return true;
    case TensorType::IQ4_XS:
      if (!wide) return false;
      quantMatmul<GgufKernel<DecIQ4<true>, int16_t>>(W, x, n, ldx, y, ldy, pool, scratch);
      return true;
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q4_K:
      return false;  // prepareLinear always repacks these (kLayoutQ4X)
    default:
      return false;
    case TensorType::F32:
      floatMatmul<ConvF32>(W, x, n, ldx, y, ldy, pool);
      return true;
    case TensorType::F16:
      floatMatmul<ConvF16>(W, x, n, ldx, y, ldy, pool);
      return true;
    case TensorType::BF16:
      floatMatmul<ConvBF16>(W, x, n, ldx, y, ldy, pool);
      return true;
  }
  return false;
}

}  // namespace prism::kernels
