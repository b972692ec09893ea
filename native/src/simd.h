// AVX2/FMA/F16C helpers for the per-token vector work of the forward pass (norms, RoPE,
// SwiGLU, attention). The whole addon is compiled with -mavx2 -mfma -mf16c.
#pragma once
#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace prism::simd {

inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

inline float hmax(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_max_ps(lo, hi);
  lo = _mm_max_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_max_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

// exp(x) for 8 floats: range reduction to 2^n * exp(r), |r| <= ln2/2, degree-6 polynomial
// (relative error ~2e-7). Inputs below -87 flush to 0 (what softmax wants for -inf).
inline __m256 exp(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.3762626647949f), lo = _mm256_set1_ps(-87.0f);
  __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500E-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
  __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 out = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(underflow, out);
}

// row[j] = exp(row[j] - max) for j < n, in place; returns their sum (a softmax's numerators
// and denominator, `max` the row's or a running maximum).
inline float expShiftedInPlace(float* row, int64_t n, float max) {
  const __m256 vm = _mm256_set1_ps(max);
  __m256 vs = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 w = exp(_mm256_sub_ps(_mm256_loadu_ps(row + j), vm));
    _mm256_storeu_ps(row + j, w);
    vs = _mm256_add_ps(vs, w);
  }
  float sum = hsum(vs);
  for (; j < n; j++) {
    row[j] = std::exp(row[j] - max);
    sum += row[j];
  }
  return sum;
}

inline __m256 loadHalf8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline void storeHalf8(uint16_t* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

// out[i] = x[i] * w[i] / rms(x), n a multiple of 8 or not (tail handled).
inline void rmsNorm(const float* x, const float* w, float* out, int64_t n, float eps) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    acc = _mm256_fmadd_ps(v, v, acc);
  }
  float ss = hsum(acc);
  for (; i < n; i++) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  const __m256 vs = _mm256_set1_ps(scale);
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), _mm256_loadu_ps(w + i)));
  for (; i < n; i++) out[i] = x[i] * scale * w[i];
}

inline void addInPlace(float* y, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_loadu_ps(x + i)));
  for (; i < n; i++) y[i] += x[i];
}

// out[i] = silu(gate[i]) * up[i]
inline void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    __m256 g = _mm256_loadu_ps(gate + i);
    __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, exp(_mm256_sub_ps(zero, g))));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
  }
  for (; i < n; i++) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// out[i] = gelu_tanh(gate[i]) * up[i] (GeGLU with the tanh approximation, as Gemma and
// PyTorch's gelu(approximate='tanh')): gelu_tanh(x) = 0.5x(1 + tanh(u)) = x / (1 + e^(-2u)),
// u = sqrt(2/pi) (x + 0.044715 x^3).
inline void geglu(const float* gate, const float* up, float* out, int64_t n) {
  constexpr float k = 0.7978845608028654f;  // sqrt(2/pi)
  int64_t i = 0;
  const __m256 one = _mm256_set1_ps(1.0f), m2k = _mm256_set1_ps(-2.0f * k), c = _mm256_set1_ps(0.044715f);
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_loadu_ps(gate + i);
    __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(c, x), _mm256_mul_ps(x, x), x);  // x + 0.044715 x^3
    __m256 g = _mm256_div_ps(x, _mm256_add_ps(one, exp(_mm256_mul_ps(m2k, inner))));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(g, _mm256_loadu_ps(up + i)));
  }
  for (; i < n; i++) {
    const float x = gate[i];
    out[i] = x / (1.0f + std::exp(-2.0f * k * (x + 0.044715f * x * x * x))) * up[i];
  }
}

}  // namespace prism::simd
