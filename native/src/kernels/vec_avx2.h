// The AVX2 family's f32 vector for the kernel templates that both families share (their ISA
// is this traits struct: float_tiles.h), its horizontal sums, which the AVX2 tiles end with,
// and the block scaling every activation quantizer starts from. In an anonymous namespace, as every kernel header: each object built with its own
// flags keeps its own copy (internal.h).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace prism::kernels {
namespace {

// Lane sum in a fixed order: the halves, then pairs, then the last two.
inline float hsum256(__m256 v) {
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
// The activation quantizers (q4g.h's int8, matmul_avx2.cc's int16) differ only in qmax and in
// how they pack q.
struct ScaledBlock {
  __m256i q[4];
  float d;
  int sum;
};

inline ScaledBlock scaleBlock(const float* p, float qmax) {
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

struct Avx2Vec {
  using F = __m256;
  static constexpr int kLanes = 8;
  static F zero() { return _mm256_setzero_ps(); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F fmadd(F a, F b, F acc) { return _mm256_fmadd_ps(a, b, acc); }
  static float sum(F v) { return hsum256(v); }
};

}  // namespace
}  // namespace prism::kernels
