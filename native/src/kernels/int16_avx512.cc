// AVX-512 int16 activations (ActivationPrecision::Int16: models below hidden 1024, e.g. the
// default SmolLM2-135M, keep 100% top-1 against the float reference with them where int8
// loses ~2%): the activation quantizer of every int16 kernel of this family. prepareLinear
// gives this family's int16 4-bit rows (Q4_0 / Q4_1 / Q4_K) as Layout::Q4XV (q4xv_avx512.cc)
// and its int16 Q8_0 (e.g. the default model's tied output head) as Layout::Q8XV
// (q8xv_avx512.cc), every Q8_0 weight whatever its rows (the last group is padded); other
// weight types with int16 activations run the AVX2 kernels (matmul_avx2.cc: the traits table,
// layout_traits.cc, has no AVX-512 kernel for them).
//
// Same activation quantization as AVX2 (per 32: d = max|x| / 32767, q = round(x / d), the
// block sums s, sa, sb), bit for bit.
#include "kernels/internal.h"

namespace prism::kernels {
namespace {

// GCC 12.2's AVX-512 intrinsics trip -W(maybe-)uninitialized inside its own headers (GCC bug
// 105593; see matmul_avx512.cc).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

inline int hsumI32(__m512i v) { return _mm512_reduce_add_epi32(v); }

// The AVX2 int16 quantizer's arithmetic (matmul_avx2.cc), 16 lanes at a time: the same
// amax, the same d and 1/d, round-to-nearest-even of the same products, exact integer sums;
// so q, d, s, sa and sb are bit-identical. Values in natural order.
void quantizeBlocks16(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations16& qa) {
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * ldx;
    int16_t* q = qa.qs + t * qa.cols;
    for (int64_t b = 0; b < qa.blocks; ++b) {
      const float* p = xt + b * kQK;
      __m512 v0 = _mm512_loadu_ps(p), v1 = _mm512_loadu_ps(p + 16);
      const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
      const float d = amax / 32767.0f;
      const __m512 id = _mm512_set1_ps(amax != 0 ? 32767.0f / amax : 0.0f);
      const __m512i i0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v0, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m512i i1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v1, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kQK), _mm512_cvtsepi32_epi16(i0));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kQK + 16), _mm512_cvtsepi32_epi16(i1));
      const int sumA = hsumI32(i0), sum = sumA + hsumI32(i1);
      const int64_t i = t * qa.blocks + b;
      qa.d[i] = d;
      qa.s[i] = d * static_cast<float>(sum);
      qa.sa[i] = d * static_cast<float>(sumA);
      qa.sb[i] = d * static_cast<float>(sum - sumA);
    }
  }
}

}  // namespace

void quantizeInt16Avx512(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations16& qa) {
  quantizeBlocks16(x, ldx, t0, t1, qa);
}

}  // namespace prism::kernels
