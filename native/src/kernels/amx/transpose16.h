// The 16 × 16 transpose of 32-bit lanes with which matmul_amx.cc turns its f32 sums (a vector
// per weight row) into a vector per token. Lanes are only moved, never computed on.
// AVX-512F only: include only from files built with the AVX-512 flags.
#pragma once
#include <immintrin.h>

namespace prism::kernels {
namespace {

// m[r] lane t → m[t] lane r: pairs of 32-bit lanes, then of 64-bit lanes inside each 128-bit
// lane, then two rounds of 128-bit lane shuffles.
inline void transpose16(__m512* m) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(m[2 * i], m[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(m[2 * i], m[2 * i + 1]);
  }
  // v[4i + j]: 128-bit lane k holds rows 4i..4i + 3 of column 4k + j.
  __m512 v[16];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const __m512d t0 = _mm512_castps_pd(t[4 * i]), t1 = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d t2 = _mm512_castps_pd(t[4 * i + 2]), t3 = _mm512_castps_pd(t[4 * i + 3]);
    v[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    v[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    v[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    v[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m512 lo01 = _mm512_shuffle_f32x4(v[j], v[4 + j], 0x44), hi01 = _mm512_shuffle_f32x4(v[j], v[4 + j], 0xEE);
    const __m512 lo23 = _mm512_shuffle_f32x4(v[8 + j], v[12 + j], 0x44), hi23 = _mm512_shuffle_f32x4(v[8 + j], v[12 + j], 0xEE);
    m[j] = _mm512_shuffle_f32x4(lo01, lo23, 0x88);
    m[4 + j] = _mm512_shuffle_f32x4(lo01, lo23, 0xDD);
    m[8 + j] = _mm512_shuffle_f32x4(hi01, hi23, 0x88);
    m[12 + j] = _mm512_shuffle_f32x4(hi01, hi23, 0xDD);
  }
}

}  // namespace
}  // namespace prism::kernels
