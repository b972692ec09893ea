// Layout::Q8XV (q8xv.h) in scalar C++, built with the baseline flags: the repack from the
// file's Q8_0 rows, the reference dequantizer, and the arithmetic every vector kernel of the
// layout reproduces bit for bit (the tests' truth).
#include <cmath>
#include <cstring>

#include "kernels/q8xv.h"

namespace prism::kernels {

void repackQ8XV(const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst) {
  const size_t srcRowBytes = typeRowBytes(TensorType::Q8_0, cols);
  const int64_t blocks = cols / kQK;
  dst->assign(q8xvBytes(rows, cols), 0);  // padding rows: q = 0, d = 0
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = src + srcRowBytes * static_cast<size_t>(r);
    const int64_t g = r / kQ8XVRows;
    const int rr = static_cast<int>(r % kQ8XVRows);
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* blk = row + static_cast<size_t>(b) * kQ8_0Bytes;
      uint8_t* rec = dst->data() + static_cast<size_t>(g * blocks + b) * kQ8XVRecordBytes;
      for (int j = 0; j < 8; ++j) std::memcpy(rec + kQ8XVQuadBytes * j + 4 * rr, blk + 2 + 4 * j, 4);
      std::memcpy(rec + kQ8XVScaleOffset + 2 * rr, blk, 2);
    }
  }
}

void dequantizeQ8XVRow(const uint8_t* base, int64_t cols, int64_t row, float* out) {
  const int64_t blocks = cols / kQK, g = row / kQ8XVRows;
  const int r = static_cast<int>(row % kQ8XVRows);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* rec = q8xvRecord(base, blocks, g, b);
    const float d = q8xvScale(rec, r);
    for (int k = 0; k < kQK; ++k) out[b * kQK + k] = d * static_cast<float>(q8xvValue(rec, r, k));
  }
}

void q8xvMatmulScalar(const uint8_t* weights, int64_t rows, int64_t cols, const Q4XVActivations& xa, int64_t n,
                      float* y, int64_t ldy) {
  const int64_t blocks = cols / kQK;
  for (int64_t t = 0; t < n; ++t) {
    const uint8_t* lo = xa.lo + t * xa.stride;
    const int8_t* hi = xa.hi + t * xa.stride;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t g = r / kQ8XVRows;
      const int rr = static_cast<int>(r % kQ8XVRows);
      float acc = 0.0f;
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* rec = q8xvRecord(weights, blocks, g, b);
        int32_t I = 0;  // the block's exact integer dot, q_x = 256·H + L
        for (int k = 0; k < kQK; ++k)
          I += q8xvValue(rec, rr, k) * (256 * hi[b * kQK + k] + lo[b * kQK + k]);
        const float scale = q8xvScale(rec, rr) * xa.d[t * xa.blocks + b];  // rounded to f32 before the FMA
        acc = std::fmaf(static_cast<float>(I), scale, acc);
      }
      y[t * ldy + r] = acc;
    }
  }
}

}  // namespace prism::kernels
