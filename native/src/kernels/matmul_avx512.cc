// AVX-512 float-weight kernels (built with AVX-512F/BW/VL/DQ/VNNI/BF16; dispatch.cc calls them
// only when CPUID reports all of those): F32 / F16 / BF16 rows read in place against f32
// activations, the AVX2 kernels' R × T tiling (matmul_avx2.cc) at twice the width. BF16
// weights are widened exactly to f32 (a 16-bit shift) for 16-wide FMAs, as on AVX2:
// _mm512_dpbf16_ps would round the activations to bf16, ~3e-3 relative logit error.
// (Quantized weights run the group-layout kernels, q4g_avx512.cc and planes_avx512.cc, and
// the exact-integer int16 layouts', int16_avx512.cc; the file's blocks with int16
// activations run the AVX2 kernels: every AVX-512 CPU has AVX2.)
#include <algorithm>

#include "kernels/internal.h"
#include "kernels/isa_kernels.h"

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

constexpr int kRowTile = 4;
constexpr int64_t kTokenChunk = 64;

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

template <TensorType T>
constexpr auto floatConverter() {
  if constexpr (T == TensorType::F32) return ConvF32{};
  else if constexpr (T == TensorType::F16) return ConvF16{};
  else return ConvBF16{};
}

}  // namespace

template <TensorType T>
void IsaKernels<Isa::Avx512>::floats(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y,
                                     int64_t ldy, ThreadPool& pool, KernelScratch&) {
  floatMatmul<decltype(floatConverter<T>())>(W, x, n, ldx, y, ldy, pool);
}
template MatmulFn IsaKernels<Isa::Avx512>::floats<TensorType::F32>;
template MatmulFn IsaKernels<Isa::Avx512>::floats<TensorType::F16>;
template MatmulFn IsaKernels<Isa::Avx512>::floats<TensorType::BF16>;

}  // namespace prism::kernels
