// AVX-512 LoRA shrink/expand kernels (lora_kernels.h). Blocks of up to 4 rows × 4 rank
// indices (shrink) and 4 rows × 64 columns (expand) keep their accumulators in registers.
#include <immintrin.h>

#include <algorithm>

#include "kernels/lora_kernels.h"

namespace prism::kernels {
namespace {

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// simd::hsum's order, compiled here (an inline from simd.h would be ODR-merged with the
// AVX2 copy).
inline float hsum8(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

struct F16 {
  static __m512 load16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  // The low 8 lanes; the high ones are masked off by the caller.
  static __m512 load8(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
};
struct F32 {
  static __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 load8(const float* p) { return _mm512_castps256_ps512(_mm256_loadu_ps(p)); }
};

// Lanes 0-7 of an accumulator are the AVX2 dot's s0 (x[i, i+8) of every 16), lanes 8-15 its
// s1 (x[i+8, i+16)); a last half chunk of 8 goes to s0 only, as there.
template <class L, class W, int R, int J>
void shrinkBlock(const float* x, int64_t ldx, const int32_t* rows, const W* a, int64_t in, int32_t j0, float scale,
                 float* h, int64_t ldh) {
  const float* xr[R];
  for (int r = 0; r < R; r++) xr[r] = x + static_cast<int64_t>(rows[r]) * ldx;
  const W* ar[J];
  for (int j = 0; j < J; j++) ar[j] = a + static_cast<int64_t>(j0 + j) * in;
  __m512 acc[R][J];
  for (int r = 0; r < R; r++)
    for (int j = 0; j < J; j++) acc[r][j] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= in; i += 16) {
    __m512 av[J];
    for (int j = 0; j < J; j++) av[j] = L::load16(ar[j] + i);
    for (int r = 0; r < R; r++) {
      const __m512 xv = _mm512_loadu_ps(xr[r] + i);
      for (int j = 0; j < J; j++) acc[r][j] = _mm512_fmadd_ps(xv, av[j], acc[r][j]);
    }
  }
  if (i + 8 <= in) {
    __m512 av[J];
    for (int j = 0; j < J; j++) av[j] = L::load8(ar[j] + i);
    for (int r = 0; r < R; r++) {
      const __m512 xv = _mm512_maskz_loadu_ps(0xFF, xr[r] + i);
      for (int j = 0; j < J; j++) acc[r][j] = _mm512_mask3_fmadd_ps(xv, av[j], acc[r][j], 0xFF);
    }
  }
  for (int r = 0; r < R; r++)
    for (int j = 0; j < J; j++) {
      const __m256 s = _mm256_add_ps(_mm512_castps512_ps256(acc[r][j]), _mm512_extractf32x8_ps(acc[r][j], 1));
      h[r * ldh + j0 + j] = scale * hsum8(s);
    }
}

template <class L, class W, int R>
void shrinkRows(const float* x, int64_t ldx, const int32_t* rows, const W* a, int64_t in, int32_t j0, int32_t j1,
                float scale, float* h, int64_t ldh) {
  int32_t j = j0;
  for (; j + 4 <= j1; j += 4) shrinkBlock<L, W, R, 4>(x, ldx, rows, a, in, j, scale, h, ldh);
  for (; j < j1; j++) shrinkBlock<L, W, R, 1>(x, ldx, rows, a, in, j, scale, h, ldh);
}

template <class L, class W>
void shrink(const float* x, int64_t ldx, const int32_t* rows, int n, const W* a, int64_t in, int32_t j0, int32_t j1,
            float scale, float* h, int64_t ldh) {
  int p = 0;
  for (; p + 4 <= n; p += 4) shrinkRows<L, W, 4>(x, ldx, rows + p, a, in, j0, j1, scale, h + p * ldh, ldh);
  switch (n - p) {
    case 3: shrinkRows<L, W, 3>(x, ldx, rows + p, a, in, j0, j1, scale, h + p * ldh, ldh); break;
    case 2: shrinkRows<L, W, 2>(x, ldx, rows + p, a, in, j0, j1, scale, h + p * ldh, ldh); break;
    case 1: shrinkRows<L, W, 1>(x, ldx, rows + p, a, in, j0, j1, scale, h + p * ldh, ldh); break;
    default: break;
  }
}

// acc = y; acc = fma(h[j], bt[j], acc) for j = 0, 1, ...: the AVX2 expand's order per column.
template <class L, class W, int R, int V>
void expandBlock(float* y, int64_t ldy, const int32_t* rows, const float* h, int64_t ldh, const W* bt, int64_t rank) {
  float* yr[R];
  for (int r = 0; r < R; r++) yr[r] = y + static_cast<int64_t>(rows[r]) * ldy;
  __m512 acc[R][V];
  for (int r = 0; r < R; r++)
    for (int v = 0; v < V; v++) acc[r][v] = _mm512_loadu_ps(yr[r] + 16 * v);
  for (int64_t j = 0; j < rank; j++) {
    __m512 b[V];
    for (int v = 0; v < V; v++) b[v] = L::load16(bt + j * (16 * V) + 16 * v);
    for (int r = 0; r < R; r++) {
      const __m512 hj = _mm512_set1_ps(h[r * ldh + j]);
      for (int v = 0; v < V; v++) acc[r][v] = _mm512_fmadd_ps(hj, b[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int v = 0; v < V; v++) _mm512_storeu_ps(yr[r] + 16 * v, acc[r][v]);
}

template <class L, class W, int V>
void expandRows(float* y, int64_t ldy, const int32_t* rows, int n, const float* h, int64_t ldh, const W* bt,
                int64_t rank) {
  int p = 0;
  for (; p + 4 <= n; p += 4) expandBlock<L, W, 4, V>(y, ldy, rows + p, h + p * ldh, ldh, bt, rank);
  switch (n - p) {
    case 3: expandBlock<L, W, 3, V>(y, ldy, rows + p, h + p * ldh, ldh, bt, rank); break;
    case 2: expandBlock<L, W, 2, V>(y, ldy, rows + p, h + p * ldh, ldh, bt, rank); break;
    case 1: expandBlock<L, W, 1, V>(y, ldy, rows + p, h + p * ldh, ldh, bt, rank); break;
    default: break;
  }
}

template <class L, class W>
void expand(float* y, int64_t ldy, const int32_t* rows, int n, const float* h, int64_t ldh, const W* bt, int64_t rank,
            int64_t w) {
  switch (w / 16) {
    case 4: expandRows<L, W, 4>(y, ldy, rows, n, h, ldh, bt, rank); break;
    case 3: expandRows<L, W, 3>(y, ldy, rows, n, h, ldh, bt, rank); break;
    case 2: expandRows<L, W, 2>(y, ldy, rows, n, h, ldh, bt, rank); break;
    case 1: expandRows<L, W, 1>(y, ldy, rows, n, h, ldh, bt, rank); break;
    default: break;
  }
}

}  // namespace

void loraShrinkAvx512(const float* x, int64_t ldx, const int32_t* rows, int n, const uint16_t* a16, const float* a32,
                      int64_t in, int32_t j0, int32_t j1, float scale, float* h, int64_t ldh) {
  if (a16) shrink<F16>(x, ldx, rows, n, a16, in, j0, j1, scale, h, ldh);
  else shrink<F32>(x, ldx, rows, n, a32, in, j0, j1, scale, h, ldh);
}

void loraExpandAvx512(float* y, int64_t ldy, const int32_t* rows, int n, const float* h, int64_t ldh,
                      const uint16_t* bt16, const float* bt32, int64_t rank, int64_t w) {
  if (bt16) expand<F16>(y, ldy, rows, n, h, ldh, bt16, rank, w);
  else expand<F32>(y, ldy, rows, n, h, ldh, bt32, rank, w);
}

}  // namespace prism::kernels
