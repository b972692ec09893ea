// AVX-512 matmul kernels (built with AVX-512F/BW/VL/DQ/VNNI/BF16; dispatch.cc calls them only
// when CPUID reports all of those). They are a straightforward widening of the AVX2 kernels
// in matmul_avx2.cc — same activation quantization, same R × T tiling and work split — so
// that the two stay easy to compare:
//   * quantized weights: two 32-value blocks per 512-bit vector (for kLayoutQ4X exactly one
//     32-byte group), integer dot with VNNI (_mm512_dpbusd_epi32) instead of maddubs + madd;
//     Q6_K keeps maddubs + madd because its per-16 integer scales are applied in the madd;
//   * BF16 weights: widened exactly to f32 (a 16-bit shift) for 16-wide FMAs, as on AVX2:
//     _mm512_dpbf16_ps would round the activations to bf16, ~3e-3 relative logit error;
//   * F16 / F32 weights: 16-wide FMAs.
// Quantized weights with ActivationPrecision::Int16 go to int16_avx512.cc (kLayoutQ4XV and
// kLayoutQ8XV, the weights of the small models that use int16 activations); for the others it
// returns false and the dispatcher runs the AVX2 int16 kernels (every AVX-512 CPU has AVX2).
#include <algorithm>
#include <type_traits>

#include "kernels/internal.h"
#include "kernels/planes.h"
#include "kernels/q4xv.h"
#include "kernels/quant_blocks_x86.h"

namespace prism::kernels {
namespace {

// GCC 12.2's AVX-512 intrinsics (_mm512_max_ps, shuffles, extracts…) start from a self-
// initialised _mm512_undefined_*() and trip -W(maybe-)uninitialized inside the compiler's own
// headers (GCC bug 105593, fixed in later releases); the warnings are not about this code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

inline __m256 high256(__m512 v) { return _mm512_castps512_ps256(_mm512_shuffle_f32x4(v, v, 0xEE)); }

inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hsum512(__m512 v) { return hsum256(_mm256_add_ps(_mm512_castps512_ps256(v), high256(v))); }

inline float hmax512(__m512 v) {
  __m256 m8 = _mm256_max_ps(_mm512_castps512_ps256(v), high256(v));
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline int hsumI32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// Same quantization as the AVX2 path (per 32: d = max|x|/127, q = round(x/d), s = d·Σq),
// so both ISAs see bit-identical activations.
void quantizeActivations(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations& qa) {
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * ldx;
    int8_t* q = qa.qs + t * qa.cols;
    for (int64_t b = 0; b < qa.blocks; ++b) {
      const float* p = xt + b * kQK;
      __m512 v0 = _mm512_loadu_ps(p), v1 = _mm512_loadu_ps(p + 16);
      float amax = hmax512(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
      float d = amax / 127.0f;
      __m512 id = _mm512_set1_ps(amax != 0 ? 127.0f / amax : 0.0f);
      __m512i i0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v0, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m512i i1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v1, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m512i i01 = _mm512_add_epi32(i0, i1);
      int sum = hsumI32(_mm256_add_epi32(_mm512_castsi512_si256(i01),
                                         _mm512_castsi512_si256(_mm512_shuffle_i32x4(i01, i01, 0xEE))));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * kQK), _mm512_cvtsepi32_epi8(i0));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * kQK + 16), _mm512_cvtsepi32_epi8(i1));
      qa.d[t * qa.blocks + b] = d;
      qa.s[t * qa.blocks + b] = d * static_cast<float>(sum);
    }
  }
}

// Integer dot of 64 signed weights (two blocks) with activations: 16 int32 partial sums,
// lanes 0..7 from the first block, 8..15 from the second. The sign of w moves onto x.
template <class Dec>
inline __m512i pairDot(__m512i w, __m512i wAbs, __m512i x, __m512i intScales) {
  __m512i xs = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
  if constexpr (Dec::kIntScales) return _mm512_madd_epi16(_mm512_maddubs_epi16(wAbs, xs), intScales);
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), wAbs, xs);
}

// Same for one block (the odd tail), with the 256-bit forms.
template <class Dec>
inline __m256i blockDot(__m256i w, __m256i wAbs, __m256i x, __m256i intScales) {
  __m256i xs = _mm256_sign_epi8(x, w);
  if constexpr (Dec::kIntScales) return _mm256_madd_epi16(_mm256_maddubs_epi16(wAbs, xs), intScales);
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), wAbs, xs);
}

inline __m512i join(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
inline __m512 join(__m256 lo, __m256 hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

// Signed blocks read in place (Q8_0, Q6_K).
template <class Dec, int R, int T>
void ggufTile(const uint8_t* weights, size_t rowBytes, const QuantizedActivations& qa, int64_t r0, int64_t t0,
              float* y, int64_t ldy) {
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = weights + rowBytes * static_cast<size_t>(r0 + r);
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  const int64_t blocks = qa.blocks;
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    __m512i x[T];
    __m512 dx[T];
    for (int t = 0; t < T; ++t) {
      x[t] = _mm512_loadu_si512(qa.qs + (t0 + t) * qa.cols + b * kQK);
      const float* d = qa.d + (t0 + t) * blocks + b;
      dx[t] = join(_mm256_set1_ps(d[0]), _mm256_set1_ps(d[1]));
    }
    for (int r = 0; r < R; ++r) {
      __m512i w = join(Dec::weights(rows[r], b), Dec::weights(rows[r], b + 1));
      __m512i wAbs = _mm512_abs_epi8(w);
      __m512i isc;
      if constexpr (Dec::kIntScales) isc = join(Dec::intScales(rows[r], b), Dec::intScales(rows[r], b + 1));
      else isc = _mm512_setzero_si512();
      __m512 dw = join(_mm256_set1_ps(Dec::scale(rows[r], b)), _mm256_set1_ps(Dec::scale(rows[r], b + 1)));
      for (int t = 0; t < T; ++t) {
        __m512 dot = _mm512_cvtepi32_ps(pairDot<Dec>(w, wAbs, x[t], isc));
        acc[r][t] = _mm512_fmadd_ps(dot, _mm512_mul_ps(dw, dx[t]), acc[r][t]);
      }
    }
  }
  float tail[R][T] = {};
  if (b < blocks) {
    for (int r = 0; r < R; ++r) {
      __m256i w = Dec::weights(rows[r], b);
      __m256i wAbs = _mm256_abs_epi8(w);
      __m256i isc;
      if constexpr (Dec::kIntScales) isc = Dec::intScales(rows[r], b);
      else isc = _mm256_setzero_si256();
      float dw = Dec::scale(rows[r], b);
      for (int t = 0; t < T; ++t) {
        __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qa.qs + (t0 + t) * qa.cols + b * kQK));
        tail[r][t] = static_cast<float>(hsumI32(blockDot<Dec>(w, wAbs, x, isc))) * dw * qa.d[(t0 + t) * blocks + b];
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = hsum512(acc[r][t]) + tail[r][t];
}

// hsum(acc) + Σ_b m[b] · s[b] (see matmul_avx2.cc), 16 blocks per FMA.
inline float offsetDotInto(__m512 acc, const float* m, const float* s, int64_t blocks) {
  int64_t b = 0;
  for (; b + 16 <= blocks; b += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(m + b), _mm512_loadu_ps(s + b), acc);
  float tail = 0;
  for (; b < blocks; ++b) tail += m[b] * s[b];
  return hsum512(acc) + tail;
}

// 4-bit weights in kLayoutQ4X: one 32-byte group unpacks to the 64 values of blocks b, b+1,
// which line up with 64 contiguous activation bytes.
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
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  const __m512i lowMask = _mm512_set1_epi8(0x0F);
  const int64_t blocks = qa.blocks;
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    __m512i x[T];
    __m512 dx[T];
    for (int t = 0; t < T; ++t) {
      x[t] = _mm512_loadu_si512(xq[t] + b * kQK);
      dx[t] = join(_mm256_set1_ps(xd[t][b]), _mm256_set1_ps(xd[t][b + 1]));
    }
    for (int r = 0; r < R; ++r) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r].nibbles + b * 16));
      __m512i w = _mm512_and_si512(join(v, _mm256_srli_epi16(v, 4)), lowMask);
      __m512 dw = join(_mm256_set1_ps(rows[r].d[b]), _mm256_set1_ps(rows[r].d[b + 1]));
      for (int t = 0; t < T; ++t) {
        __m512 dot = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w, x[t]));
        acc[r][t] = _mm512_fmadd_ps(dot, _mm512_mul_ps(dw, dx[t]), acc[r][t]);
      }
    }
  }
  float tail[R][T] = {};
  if (b < blocks) {  // odd block count: the last group holds one block, in its low nibbles
    for (int r = 0; r < R; ++r) {
      __m256i w = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r].nibbles + b * 16)),
                                   _mm256_set1_epi8(0x0F));
      for (int t = 0; t < T; ++t) {
        __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[t] + b * kQK));
        int dot = hsumI32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), w, x));
        tail[r][t] = static_cast<float>(dot) * rows[r].d[b] * xd[t][b];
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      y[(t0 + t) * ldy + r0 + r] = offsetDotInto(acc[r][t], rows[r].m, qa.s + (t0 + t) * blocks, blocks) + tail[r][t];
}

constexpr int kRowTile = 4;
constexpr int kTokenTile = 4;  // 32 zmm registers: 16 accumulators + weights + activations
constexpr int64_t kTokenChunk = 64;

// Walks rows [rb, re) × tokens [tb, te) in token chunks and R × T tiles; Tile<R, T>::run
// computes one tile.
template <template <int, int> class Tile>
void walkTiles(const uint8_t* weights, int64_t cols, size_t rowBytes, const QuantizedActivations& qa, int64_t rb,
               int64_t re, int64_t tb, int64_t te, float* y, int64_t ldy) {
  const int64_t group = rowGroupFor(rowBytes, kRowTile), chunk = tokenChunkFor(cols, kTokenTile);
  for (int64_t g0 = rb; g0 < re; g0 += group) {
    int64_t g1 = std::min(re, g0 + group);
    for (int64_t c0 = tb; c0 < te; c0 += chunk) {
      int64_t c1 = std::min(te, c0 + chunk);
      int64_t r = g0;
      for (; r + kRowTile <= g1; r += kRowTile) {
        int64_t t = c0;
        for (; t + kTokenTile <= c1; t += kTokenTile)
          Tile<kRowTile, kTokenTile>::run(weights, cols, rowBytes, qa, r, t, y, ldy);
        for (; t < c1; ++t) Tile<kRowTile, 1>::run(weights, cols, rowBytes, qa, r, t, y, ldy);
      }
      for (; r < g1; ++r) {
        int64_t t = c0;
        for (; t + kTokenTile <= c1; t += kTokenTile) Tile<1, kTokenTile>::run(weights, cols, rowBytes, qa, r, t, y, ldy);
        for (; t < c1; ++t) Tile<1, 1>::run(weights, cols, rowBytes, qa, r, t, y, ldy);
      }
    }
  }
}

template <class Dec>
struct GgufTile {
  template <int R, int T>
  struct Of {
    static void run(const uint8_t* w, int64_t, size_t rowBytes, const QuantizedActivations& qa, int64_t r0,
                    int64_t t0, float* y, int64_t ldy) {
      ggufTile<Dec, R, T>(w, rowBytes, qa, r0, t0, y, ldy);
    }
  };
};

template <int R, int T>
struct Q4XTile {
  static void run(const uint8_t* w, int64_t cols, size_t, const QuantizedActivations& qa, int64_t r0, int64_t t0,
                  float* y, int64_t ldy) {
    q4xTile<R, T>(w, cols, qa, r0, t0, y, ldy);
  }
};

template <template <int, int> class Tile>
void quantMatmul(const LinearWeight& W, size_t rowBytes, const float* x, int64_t n, int64_t ldx, float* y,
                 int64_t ldy, ThreadPool& pool, KernelScratch& scratch) {
  QuantizedActivations qa;
  qa.n = n;
  qa.cols = W.cols;
  qa.blocks = W.cols / kQK;
  uint8_t* buf = scratch.bytes(quantizedActivationBytes(n, W.cols));
  qa.qs = reinterpret_cast<int8_t*>(buf);
  qa.d = reinterpret_cast<float*>(buf + ((static_cast<size_t>(n * W.cols) + 63) & ~size_t(63)));
  qa.s = qa.d + n * qa.blocks;
  if (n <= 4) {
    quantizeActivations(x, ldx, 0, n, qa);
  } else {
    pool.parallelFor(n, [&](int64_t t0, int64_t t1) { quantizeActivations(x, ldx, t0, t1, qa); });
  }
  const uint8_t* weights = weightData(W);
  const int threads = pool.size();
  const int64_t rowTiles = (W.rows + kRowTile - 1) / kRowTile;
  if (rowTiles >= 4 * threads || n < 2 * threads) {
    auto task = [&](int i, int nt) {
      int64_t rb = rowTiles * i / nt * kRowTile, re = std::min(W.rows, rowTiles * (i + 1) / nt * kRowTile);
      if (rb < re) walkTiles<Tile>(weights, W.cols, rowBytes, qa, rb, re, 0, n, y, ldy);
    };
    pool.run(TaskRef(task));
  } else {
    pool.parallelFor(n, [&](int64_t t0, int64_t t1) {
      walkTiles<Tile>(weights, W.cols, rowBytes, qa, 0, W.rows, t0, t1, y, ldy);
    });
  }
}

// ---- float weights ---------------------------------------------------------------------

// F32 / F16: 16 columns per step.
struct ConvF32 {
  static __m512 load(const uint8_t* row, int64_t k) { return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + k); }
  static float one(const uint8_t* row, int64_t k) { return reinterpret_cast<const float*>(row)[k]; }
};
struct ConvF16 {
  static __m512 load(const uint8_t* row, int64_t k) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k)));
  }
  static float one(const uint8_t* row, int64_t k) { return f16ToF32(loadU16(row + 2 * k)); }
};

template <class Conv, int R, int T>
void floatTile(const LinearWeight& W, size_t rowBytes, const float* x, int64_t ldx, int64_t r0, int64_t t0,
               float* y, int64_t ldy) {
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = weightData(W) + rowBytes * static_cast<size_t>(r0 + r);
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  const int64_t cols = W.cols, vecCols = cols & ~int64_t(15);
  for (int64_t k = 0; k < vecCols; k += 16) {
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_ps(x + (t0 + t) * ldx + k);
    for (int r = 0; r < R; ++r) {
      __m512 w = Conv::load(rows[r], k);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(w, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float s = hsum512(acc[r][t]);
      for (int64_t k = vecCols; k < cols; ++k) s += Conv::one(rows[r], k) * x[(t0 + t) * ldx + k];
      y[(t0 + t) * ldy + r0 + r] = s;
    }
  }
}

// BF16 weights widened exactly to f32 (a 16-bit shift) against f32 activations, as the AVX2
// kernel does: the same numbers on every x86 machine.
struct ConvBF16 {
  static __m512 load(const uint8_t* row, int64_t k) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static float one(const uint8_t* row, int64_t k) { return bf16ToF32(loadU16(row + 2 * k)); }
};

template <class Conv, int R, int T>
void anyFloatTile(const LinearWeight& W, size_t rowBytes, const float* x, int64_t ldx, int64_t r0, int64_t t0,
                  float* y, int64_t ldy) {
  floatTile<Conv, R, T>(W, rowBytes, x, ldx, r0, t0, y, ldy);
}

constexpr int kFloatTokenTile = 4;

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
          anyFloatTile<Conv, kRowTile, kFloatTokenTile>(W, rowBytes, x, ldx, r, t, y, ldy);
        for (; t < c1; ++t) anyFloatTile<Conv, kRowTile, 1>(W, rowBytes, x, ldx, r, t, y, ldy);
      } else {
        for (; t + kFloatTokenTile <= c1; t += kFloatTokenTile)
          anyFloatTile<Conv, 1, kFloatTokenTile>(W, rowBytes, x, ldx, r, t, y, ldy);
        for (; t < c1; ++t) anyFloatTile<Conv, 1, 1>(W, rowBytes, x, ldx, r, t, y, ldy);
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

bool matmulAvx512(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                  ThreadPool& pool, KernelScratch& scratch) {
  if (isPlaneLayout(W.layout)) {
    planeMatmulAvx512(W, x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout == kLayoutQ4GK) {
    q4gkMatmulAvx512(W, x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout == kLayoutQ8G) {
    q8gMatmulAvx512(W, x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout == kLayoutQ6G) {
    q6gMatmulAvx512(W, x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout == kLayoutQ4G16 || W.layout == kLayoutQ4G32 || W.layout == kLayoutQ4G0) {
    q4gMatmulAvx512(W, x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  const bool quantized = W.layout == kLayoutQ4X || W.layout == kLayoutQ4XV || W.type == TensorType::Q8_0 ||
                         W.type == TensorType::Q6_K;
  // Int16 activations: Q4XV and Q8XV (type Q8_0) in int16_avx512.cc, the rest with the AVX2 int16 kernels.
  if (quantized && W.precision != ActivationPrecision::Int8) return int16MatmulAvx512(W, x, n, ldx, y, ldy, pool, scratch);
  if (W.layout == kLayoutQ4X) {
    quantMatmul<Q4XTile>(W, q4xRowBytes(W.cols), x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout != kLayoutGguf) return false;
  const size_t rowBytes = typeRowBytes(W.type, W.cols);
  switch (W.type) {
    case TensorType::Q8_0:
      quantMatmul<GgufTile<DecQ8_0>::Of>(W, rowBytes, x, n, ldx, y, ldy, pool, scratch);
      return true;
    case TensorType::Q6_K:
      quantMatmul<GgufTile<DecQ6_K>::Of>(W, rowBytes, x, n, ldx, y, ldy, pool, scratch);
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
