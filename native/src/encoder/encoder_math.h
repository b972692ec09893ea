// The encoder's per-token vector work in AVX2 (the addon's baseline): LayerNorm with bias,
// exact (erf) GELU, bias adds and tanh. Plain functions over one row; shapes stated at each.
#pragma once
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "simd.h"

namespace prism::enc {

// out[i] = (x[i] - mean) / sqrt(var + eps) * w[i] + b[i] over n values (population variance,
// as torch.nn.LayerNorm), the statistics in double: BERT's eps is 1e-12, so nothing hides
// a cancellation.
inline void layerNorm(const float* x, const float* w, const float* b, float* out, int64_t n, float eps) {
  __m256 s = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) s = _mm256_add_ps(s, _mm256_loadu_ps(x + i));
  double sum = simd::hsum(s);
  for (; i < n; i++) sum += x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const __m256 vm = _mm256_set1_ps(mean);
  __m256 q = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
    q = _mm256_fmadd_ps(d, d, q);
  }
  double var = simd::hsum(q);
  for (; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
  const float inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(n) + eps));
  const __m256 vi = _mm256_set1_ps(inv);
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 d = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vi);
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(d, _mm256_loadu_ps(w + i), _mm256_loadu_ps(b + i)));
  }
  for (; i < n; i++) out[i] = (x[i] - mean) * inv * w[i] + b[i];
}

// erf(x) for 8 floats: Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, what PyTorch's own
// vectorized CPU erf computes), erf(x) = sign(x) (1 - t P(t) e^(-x^2)), t = 1/(1 + p|x|).
inline __m256 erf8(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), a, one));
  __m256 p = _mm256_set1_ps(1.061405429f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
  p = _mm256_mul_ps(p, t);
  const __m256 e = simd::exp(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(a, a)));
  const __m256 r = _mm256_fnmadd_ps(p, e, one);
  return _mm256_or_ps(r, sign);
}

// x[i] = gelu(x[i] + bias[i]) in place, gelu(v) = v/2 (1 + erf(v/sqrt 2)) (torch's default,
// BERT's "gelu"); bias may be null.
inline void biasGeluErf(float* x, const float* bias, int64_t n) {
  const __m256 half = _mm256_set1_ps(0.5f), r2 = _mm256_set1_ps(0.70710678118654752f), one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + i));
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, erf8(_mm256_mul_ps(v, r2)))));
  }
  for (; i < n; i++) {
    const float v = x[i] + (bias ? bias[i] : 0.0f);
    x[i] = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
  }
}

// x[i] = gelu_tanh(x[i] + bias[i]) in place (gelu_new / gelu_pytorch_tanh): v / (1 + e^(-2u)),
// u = sqrt(2/pi) (v + 0.044715 v^3); bias may be null.
inline void biasGeluTanh(float* x, const float* bias, int64_t n) {
  constexpr float k = 0.7978845608028654f;
  const __m256 one = _mm256_set1_ps(1.0f), m2k = _mm256_set1_ps(-2.0f * k), c = _mm256_set1_ps(0.044715f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + i));
    const __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(c, v), _mm256_mul_ps(v, v), v);
    _mm256_storeu_ps(x + i, _mm256_div_ps(v, _mm256_add_ps(one, simd::exp(_mm256_mul_ps(m2k, inner)))));
  }
  for (; i < n; i++) {
    const float v = x[i] + (bias ? bias[i] : 0.0f);
    x[i] = v / (1.0f + std::exp(-2.0f * k * (v + 0.044715f * v * v * v)));
  }
}

// y[i] += x[i] + bias[i] (a sublayer's output and its bias onto the residual); bias may be null.
inline void addBiasResidual(float* y, const float* x, const float* bias, int64_t n) {
  simd::addInPlace(y, x, n);
  if (bias) simd::addInPlace(y, bias, n);
}

}  // namespace prism::enc
