// AVX2 matmul kernels (baseline build: AVX2 + FMA + F16C) of the weights the group layouts
// do not hold: int16 activations on the file's blocks and on Layout::Q4X, and float weights.
// (With int8 activations prepareLinear repacks every quantized type into a group layout:
// q4g_avx2.cc, planes_avx2.cc.)
//
// Int16 activations (ActivationPrecision::Int16, chosen per weight): the activations are
// quantized once per call to int16 blocks of 32 (QuantizedActivations16), then each tile of
// R weight rows × T tokens widens every weight block to int16 once and multiplies it (madd,
// int16 × int16 → int32 pairs) against T tokens' blocks, scaled to f32 and accumulated in
// f32. 4-bit weights come repacked (Layout::Q4X, two blocks per 32-byte load); the other
// types are read in place. Tiles of 2 rows × 4 tokens (widening costs more than an int8
// unpack, so it is shared by more tokens) and token chunks of about all of L1 (those shapes,
// changed together from the former int8 ones, made n = 1024 ~1.4x faster). Decode streams
// each weight row exactly once; larger n splits rows (or tokens) across threads. Per-lane
// int32 sums are at most about 2^24 (4 products of ≤ 128 × 32767; Q6_K's scaled weights:
// 2^29), so the f32 conversion is exact or rounds at ≤ 6e-8 relative, far below the int16
// rounding.
//
// Float weights (F32/F16/BF16): R × T tiles of f32 FMAs, converting the weights on the fly
// (F16C / bf16 shift); activations stay f32.
#include <algorithm>

#include "kernels/float_gemm.h"
#include "kernels/float_tiles.h"
#include "kernels/internal.h"
#include "kernels/isa_kernels.h"
#include "kernels/quant_blocks_x86.h"
#include "kernels/vec_avx2.h"
#include "kernels/work_split.h"

namespace prism::kernels {
namespace {

// Quantizes rows [t0, t1) of x (cols a multiple of 32) into `qa`: per block of 32,
// d = max|x| / 32767, q = round(x / d), s = d * Σq, and the halves' sa = d * Σq[0..15],
// sb = d * Σq[16..31].
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
    for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = hsum256(acc[r][t]) + off[r][t];
}

// Int16 tiles: 2 rows × 4 tokens. Widening a weight block costs more than the int8 unpack,
// so each widened block serves 4 tokens; 8 accumulators + 2-4 widened halves fit in 16
// registers (the activations are read straight from L1 by madd).
constexpr int kRowTile16 = 2;
constexpr int kTokenTile16 = 4;

// R rows of the file's blocks of Dec's type over tokens [t0, t1), in token tiles.
template <class Dec>
struct BlockRows {
  static size_t rowBytes(const LinearWeight& W) { return typeRowBytes(W.type, W.cols); }
  template <int R>
  static void rows(const LinearWeight& W, size_t rowBytes, const QuantizedActivations16& qa, int64_t r0, int64_t t0,
                   int64_t t1, float* y, int64_t ldy) {
    int64_t t = t0;
    for (; t + kTokenTile16 <= t1; t += kTokenTile16) quantTile16<Dec, R, kTokenTile16>(W, rowBytes, qa, r0, t, y, ldy);
    for (; t < t1; ++t) quantTile16<Dec, R, 1>(W, rowBytes, qa, r0, t, y, ldy);
  }
};

// Rows [rb, re) × tokens [tb, te) on the calling thread: rows in L2-sized groups × tokens in
// chunks, R = kRowTile16 rows at a time (the last ones singly) through Rows::rows<R>.
template <class Rows>
struct Int16Kernel {
  using Act = QuantizedActivations16;
  static constexpr int kRowTile = kRowTile16;
  static void range(const LinearWeight& W, const Act& qa, int64_t rb, int64_t re, int64_t tb, int64_t te, float* y,
                    int64_t ldy) {
    const size_t rowBytes = Rows::rowBytes(W);
    const int64_t group = rowGroupFor(rowBytes, kRowTile);
    const int64_t chunk = tokenChunkFor(W.cols, kTokenTile16);
    for (int64_t g0 = rb; g0 < re; g0 += group) {
      int64_t g1 = std::min(re, g0 + group);
      for (int64_t c0 = tb; c0 < te; c0 += chunk) {
        int64_t c1 = std::min(te, c0 + chunk);
        int64_t r = g0;
        for (; r + kRowTile <= g1; r += kRowTile) Rows::template rows<kRowTile>(W, rowBytes, qa, r, c0, c1, y, ldy);
        for (; r < g1; ++r) Rows::template rows<1>(W, rowBytes, qa, r, c0, c1, y, ldy);
      }
    }
  }
};

// Quantizes the activations (the owner itself for small batches: a second parallel region
// costs more than quantizing one or two tokens) and shares the tiles among the threads
// (work_split.h), spreading a LoRA prefetch over them.
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
  splitRowsOrTokens(pool, W.rows, Kernel::kRowTile, n, scratch.hasPrefetch() ? &scratch : nullptr,
                    [&](int64_t rb, int64_t re, int64_t tb, int64_t te) { Kernel::range(W, qa, rb, re, tb, te, y, ldy); });
}

// ---- 4-bit weights in Layout::Q4X -----------------------------------------------------

// hsum256(acc) + Σ_b m[b] · s[b]: adds the per-block offsets (Q4_1 min, Q4_0's -8d, Q4_K's
// -dmin·m) against the activation block sums into the tile's accumulator, 8 blocks per FMA,
// so one horizontal sum serves both.
inline float offsetDotInto(__m256 acc, const float* m, const float* s, int64_t blocks) {
  int64_t b = 0;
  for (; b + 8 <= blocks; b += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(m + b), _mm256_loadu_ps(s + b), acc);
  float tail = 0;
  for (; b < blocks; ++b) tail += m[b] * s[b];
  return hsum256(acc) + tail;
}

// One tile of Layout::Q4X: a 32-byte group is read as two 16-byte halves, each widened to
// 16-bit lanes, where a mask gives block b's values and a shift block b+1's (no byte-level
// unpacking); madd multiplies them against the int16 activations.
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

// R rows of Layout::Q4X over tokens [t0, t1), in token tiles.
struct Q4XRows {
  static size_t rowBytes(const LinearWeight& W) { return q4xRowBytes(W.cols); }
  template <int R>
  static void rows(const LinearWeight& W, size_t, const QuantizedActivations16& qa, int64_t r0, int64_t t0, int64_t t1,
                   float* y, int64_t ldy) {
    int64_t t = t0;
    for (; t + kTokenTile16 <= t1; t += kTokenTile16) q4xTile16<R, kTokenTile16>(weightData(W), W.cols, qa, r0, t, y, ldy);
    for (; t < t1; ++t) q4xTile16<R, 1>(weightData(W), W.cols, qa, r0, t, y, ldy);
  }
};

// ---- float weights ---------------------------------------------------------------------

struct ConvF32 {
  static constexpr bool kInPlace = true;  // float_gemm.h reads the rows as they are
  static __m256 load(const uint8_t* row, int64_t k) { return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k); }
  static float one(const uint8_t* row, int64_t k) { return reinterpret_cast<const float*>(row)[k]; }
};
struct ConvF16 {
  static constexpr bool kInPlace = false;
  static __m256 load(const uint8_t* row, int64_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
  }
  static float one(const uint8_t* row, int64_t k) { return f16ToF32(loadU16(row + 2 * k)); }
};
struct ConvBF16 {
  static constexpr bool kInPlace = false;
  static __m256 load(const uint8_t* row, int64_t k) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static float one(const uint8_t* row, int64_t k) { return bf16ToF32(loadU16(row + 2 * k)); }
};

// Float tiles: 4 rows × 3 tokens = 12 accumulators + 3 activation vectors + 1 weight.
constexpr int kFloatTokenTile = 3;

// The decoder of each file type with int16 activations (quant_blocks_x86.h).
template <TensorType T>
constexpr auto blockDecoder() {
  if constexpr (T == TensorType::Q8_0) return DecQ8_0{};
  else if constexpr (T == TensorType::Q6_K) return DecQ6_K{};
  else if constexpr (T == TensorType::Q5_0) return DecQ5<false>{};
  else if constexpr (T == TensorType::Q5_1) return DecQ5<true>{};
  else if constexpr (T == TensorType::Q5_K) return DecQ5_K{};
  else if constexpr (T == TensorType::Q3_K) return DecQ3_K{};
  else if constexpr (T == TensorType::Q2_K) return DecQ2_K{};
  else if constexpr (T == TensorType::IQ4_NL) return DecIQ4<false>{};
  else return DecIQ4<true>{};  // IQ4_XS
}

template <TensorType T>
constexpr auto floatConverter() {
  if constexpr (T == TensorType::F32) return ConvF32{};
  else if constexpr (T == TensorType::F16) return ConvF16{};
  else return ConvBF16{};
}

}  // namespace

template <TensorType T>
void IsaKernels<Isa::Avx2>::blocks16(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y,
                                     int64_t ldy, ThreadPool& pool, KernelScratch& scratch) {
  quantMatmul<Int16Kernel<BlockRows<decltype(blockDecoder<T>())>>>(W, x, n, ldx, y, ldy, pool, scratch);
}
template MatmulFn IsaKernels<Isa::Avx2>::blocks16<TensorType::Q8_0>;
template MatmulFn IsaKernels<Isa::Avx2>::blocks16<TensorType::Q6_K>;
template MatmulFn IsaKernels<Isa::Avx2>::blocks16<TensorType::Q5_0>;
template MatmulFn IsaKernels<Isa::Avx2>::blocks16<TensorType::Q5_1>;
template MatmulFn IsaKernels<Isa::Avx2>::blocks16<TensorType::Q5_K>;
template MatmulFn IsaKernels<Isa::Avx2>::blocks16<TensorType::Q3_K>;
template MatmulFn IsaKernels<Isa::Avx2>::blocks16<TensorType::Q2_K>;
template MatmulFn IsaKernels<Isa::Avx2>::blocks16<TensorType::IQ4_NL>;
template MatmulFn IsaKernels<Isa::Avx2>::blocks16<TensorType::IQ4_XS>;

void IsaKernels<Isa::Avx2>::q4x16(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                                  ThreadPool& pool, KernelScratch& scratch) {
  quantMatmul<Int16Kernel<Q4XRows>>(W, x, n, ldx, y, ldy, pool, scratch);
}

template <TensorType T>
void IsaKernels<Isa::Avx2>::floats(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y,
                                   int64_t ldy, ThreadPool& pool, KernelScratch&) {
  floatMatmul<Avx2Vec, decltype(floatConverter<T>()), kFloatTokenTile>(W, x, n, ldx, y, ldy, pool);
}
template MatmulFn IsaKernels<Isa::Avx2>::floats<TensorType::F32>;
template MatmulFn IsaKernels<Isa::Avx2>::floats<TensorType::F16>;
template MatmulFn IsaKernels<Isa::Avx2>::floats<TensorType::BF16>;

// The GEMM of many-token passes (float_gemm.h): 6 rows × 16 tokens = 12 accumulators, 2
// activation vectors and the broadcast weight, of the 16 registers (4 × 24 and 3 × 32 measured
// no faster on Zen 3, docs/benchmarks.md).
constexpr int kGemmRows = 6, kGemmVectors = 2;

template <TensorType T>
void IsaKernels<Isa::Avx2>::floatGemm(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y,
                                      int64_t ldy, ThreadPool& pool, KernelScratch& scratch) {
  FloatGemm<Avx2Vec, decltype(floatConverter<T>()), kGemmRows, kGemmVectors>::run(W, x, n, ldx, y, ldy, pool, scratch);
}
template MatmulFn IsaKernels<Isa::Avx2>::floatGemm<TensorType::F32>;
template MatmulFn IsaKernels<Isa::Avx2>::floatGemm<TensorType::F16>;
template MatmulFn IsaKernels<Isa::Avx2>::floatGemm<TensorType::BF16>;

size_t IsaKernels<Isa::Avx2>::floatGemmScratchBytes(int64_t n, int64_t cols, int threads) {
  return FloatGemm<Avx2Vec, ConvF32, kGemmRows, kGemmVectors>::scratchBytes(n, cols, threads);
}

}  // namespace prism::kernels
