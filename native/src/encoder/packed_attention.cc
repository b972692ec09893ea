#include "encoder/packed_attention.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "simd.h"

namespace prism {
namespace {

inline float dot(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  return simd::hsum(acc);
}

}  // namespace

void packedAttention(ThreadPool& pool, const float* qkv, float* out, const int32_t* seqOffsets, int32_t S,
                     int64_t heads, int64_t headDim, std::vector<std::vector<float>>& scores) {
  const int64_t hd = headDim, H = heads, D = H * hd, ld = 3 * D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  int64_t longest = 0;
  for (int32_t s = 0; s < S; s++) longest = std::max<int64_t>(longest, seqOffsets[s + 1] - seqOffsets[s]);
  forRange(pool, S * H, longest * longest * hd, [&](int64_t i0, int64_t i1, int thread) {
    float* sc = scores[thread].data();
    for (int64_t it = i0; it < i1; it++) {
      const int64_t s = it / H, h = it % H;
      const int64_t t0 = seqOffsets[s], n = seqOffsets[s + 1] - t0;
      const float* K = &qkv[t0 * ld + D + h * hd];
      const float* V = &qkv[t0 * ld + 2 * D + h * hd];
      for (int64_t qi = 0; qi < n; qi++) {
        const float* q = &qkv[(t0 + qi) * ld + h * hd];
        float mx = -INFINITY;
        for (int64_t j = 0; j < n; j++) {
          sc[j] = dot(q, K + j * ld, hd) * scale;
          mx = std::max(mx, sc[j]);
        }
        const __m256 vm = _mm256_set1_ps(mx);
        __m256 vs = _mm256_setzero_ps();
        int64_t j = 0;
        for (; j + 8 <= n; j += 8) {
          const __m256 w = simd::exp(_mm256_sub_ps(_mm256_loadu_ps(sc + j), vm));
          _mm256_storeu_ps(sc + j, w);
          vs = _mm256_add_ps(vs, w);
        }
        float sum = simd::hsum(vs);
        for (; j < n; j++) {
          sc[j] = std::exp(sc[j] - mx);
          sum += sc[j];
        }
        float* o = &out[(t0 + qi) * D + h * hd];
        const float inv = 1.0f / sum;
        for (int64_t i = 0; i < hd; i += 8) {
          __m256 acc = _mm256_setzero_ps();
          for (j = 0; j < n; j++) acc = _mm256_fmadd_ps(_mm256_set1_ps(sc[j]), _mm256_loadu_ps(V + j * ld + i), acc);
          _mm256_storeu_ps(o + i, _mm256_mul_ps(acc, _mm256_set1_ps(inv)));
        }
      }
    }
  });
}

}  // namespace prism
