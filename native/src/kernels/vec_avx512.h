// The AVX-512 family's f32 vector for the kernel templates that both families share
// (float_tiles.h; vec_avx2.h is the AVX2 one). Include only from files built with the
// AVX-512 flags (binding.gyp's prism_kernels_avx512 target).
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "kernels/vec_avx2.h"

namespace prism::kernels {
namespace {

// GCC 12.2's AVX-512 intrinsics (_mm512_max_ps, shuffles, extracts…) start from a self-
// initialised _mm512_undefined_*() and trip -W(maybe-)uninitialized inside the compiler's own
// headers (GCC bug 105593, fixed in later releases); the warnings are not about this code.
// The pragmas hold to the end of each file that includes this header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

inline __m256 high256(__m512 v) { return _mm512_castps512_ps256(_mm512_shuffle_f32x4(v, v, 0xEE)); }

// The two 256-bit halves added, then hsum256's order.
inline float hsum512(__m512 v) { return hsum256(_mm256_add_ps(_mm512_castps512_ps256(v), high256(v))); }

struct Avx512Vec {
  using F = __m512;
  static constexpr int kLanes = 16;
  static F zero() { return _mm512_setzero_ps(); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F fmadd(F a, F b, F acc) { return _mm512_fmadd_ps(a, b, acc); }
  static float sum(F v) { return hsum512(v); }
};

}  // namespace
}  // namespace prism::kernels
