// The Layout::Q4XV arithmetic (q4xv.h) in scalar C++: the int16 activation quantization split
// into byte planes, and the per-block exact integer dot followed by the two f32 FMA chains.
// Built with the baseline flags; the tests hold the AVX-512 and AMX kernels to it bit for bit.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kernels/q4xv.h"

namespace prism::kernels {

Q4XVActivations q4xvQuantizeScalar(const float* x, int64_t n, int64_t ldx, int64_t cols, uint8_t* buf) {
  const int64_t stride = q4xvActivationStride(cols), blocks = cols / kQK;
  uint8_t* lo = buf;
  int8_t* hi = reinterpret_cast<int8_t*>(buf + static_cast<size_t>(n * stride));
  QuantizedActivations16 qa;
  placeActivations(buf + 2 * static_cast<size_t>(n * stride), n, cols, &qa);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float* p = x + t * ldx + b * kQK;
      // The AVX-512 quantizer's operations one value at a time (int16_avx512.cc's
      // quantizeBlocks16): the same amax, d and 1/d, round-to-nearest-even of the same
      // products, int16 saturation, and block sums of the values before it.
      float amax = 0;
      for (int k = 0; k < kQK; ++k) amax = std::fmax(amax, std::fabs(p[k]));
      const float d = amax / 32767.0f;
      const float id = amax != 0 ? 32767.0f / amax : 0.0f;
      int sumA = 0, sum = 0;
      for (int k = 0; k < kQK; ++k) {
        const int v = static_cast<int>(std::nearbyint(p[k] * id));
        const int16_t q = static_cast<int16_t>(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
        qa.qs[t * cols + b * kQK + k] = q;
        lo[t * stride + b * kQK + k] = static_cast<uint8_t>(q & 0xFF);
        hi[t * stride + b * kQK + k] = static_cast<int8_t>(q >> 8);
        if (k < 16) sumA += v;
        sum += v;
      }
      const int64_t i = t * blocks + b;
      qa.d[i] = d;
      qa.s[i] = d * static_cast<float>(sum);
      qa.sa[i] = d * static_cast<float>(sumA);
      qa.sb[i] = d * static_cast<float>(sum - sumA);
    }
  }
  return Q4XVActivations{lo, hi, stride, qa.d, qa.s, blocks};
}

void q4xvMatmulScalar(const uint8_t* weights, int64_t rows, int64_t cols, const Q4XVActivations& xa, int64_t n,
                      float* y, int64_t ldy) {
  const int64_t blocks = q4xvBlocks(cols);
  for (int64_t t = 0; t < n; ++t) {
    const uint8_t* lo = xa.lo + t * xa.stride;
    const int8_t* hi = xa.hi + t * xa.stride;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t g = r / kQ4XVRows;
      const int rr = static_cast<int>(r % kQ4XVRows);
      float accI = 0.0f, accM = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* rec = q4xvRecord(weights, blocks, g, b);
        int32_t dotH = 0, dotL = 0;
        for (int k = 0; k < kQK; ++k) {
          const int w = q4xvNibble(rec, rr, k);
          dotH += w * hi[b * kQK + k];
          dotL += w * lo[b * kQK + k];
        }
        const int32_t I = dotH * 256 + dotL;
        float dw, mw;
        std::memcpy(&dw, rec + kQ4XVScaleOffset + 4 * rr, 4);
        std::memcpy(&mw, rec + kQ4XVOffsetOffset + 4 * rr, 4);
        const float scale = dw * xa.d[t * xa.blocks + b];  // rounded to f32 before the FMA
        accI = std::fmaf(static_cast<float>(I), scale, accI);
        accM = std::fmaf(mw, xa.s[t * xa.blocks + b], accM);
      }
      y[t * ldy + r] = accI + accM;
    }
  }
}

}  // namespace prism::kernels
