// Weight repacking done once by prepareLinear: GGUF 4-bit blocks → kLayoutQ4X (see
// internal.h for the layout and why).
#include <stdexcept>

#include "kernels/internal.h"

namespace prism::kernels {

namespace {

// Block b of a GGUF row as (32 nibble values, d, m) with value = d*q + m.
void unpackBlock(TensorType type, const uint8_t* row, int64_t b, uint8_t* q, float* d, float* m) {
  switch (type) {
    case TensorType::Q4_0: {
      const uint8_t* p = row + b * kQ4_0Bytes;
      *d = f16ToF32(loadU16(p));
      *m = -8.0f * *d;
      for (int i = 0; i < 16; ++i) {
        q[i] = p[2 + i] & 0xF;
        q[i + 16] = p[2 + i] >> 4;
      }
      return;
    }
    case TensorType::Q4_1: {
      const uint8_t* p = row + b * kQ4_1Bytes;
      *d = f16ToF32(loadU16(p));
      *m = f16ToF32(loadU16(p + 2));
      for (int i = 0; i < 16; ++i) {
        q[i] = p[4 + i] & 0xF;
        q[i + 16] = p[4 + i] >> 4;
      }
      return;
    }
    case TensorType::Q4_K: {
      const uint8_t* sb = row + (b / 8) * kQ4_KBytes;
      int j = static_cast<int>(b % 8);
      uint8_t sc, mn;
      q4kScaleMin(j, sb + 4, &sc, &mn);
      *d = f16ToF32(loadU16(sb)) * sc;
      *m = -f16ToF32(loadU16(sb + 2)) * mn;
      const uint8_t* qs = sb + 16 + 32 * (j / 2);
      for (int i = 0; i < 32; ++i) q[i] = (qs[i] >> ((j & 1) * 4)) & 0xF;
      return;
    }
    default:
      throw std::invalid_argument("repackQ4X: not a 4-bit type");
  }
}

}  // namespace

void repackQ4X(TensorType type, const uint8_t* src, int64_t rows, int64_t cols, uint8_t* dst) {
  const size_t srcRowBytes = typeRowBytes(type, cols);
  const int64_t blocks = cols / kQK;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = src + srcRowBytes * static_cast<size_t>(r);
    Q4XRow out = q4xRow(dst, cols, r);
    uint8_t* nibbles = const_cast<uint8_t*>(out.nibbles);
    float* d = const_cast<float*>(out.d);
    float* m = const_cast<float*>(out.m);
    uint8_t q[kQK];
    for (int64_t b = 0; b < blocks; ++b) {
      unpackBlock(type, row, b, q, &d[b], &m[b]);
      uint8_t* group = nibbles + (b / 2) * 32;
      int shift = (b & 1) * 4;
      for (int i = 0; i < kQK; ++i) {
        if (shift == 0) group[i] = q[i];
        else group[i] = static_cast<uint8_t>(group[i] | (q[i] << 4));
      }
    }
  }
}

void dequantizeQ4XRow(const uint8_t* base, int64_t cols, int64_t row, float* out) {
  Q4XRow r = q4xRow(base, cols, row);
  for (int64_t b = 0; b < cols / kQK; ++b) {
    const uint8_t* group = r.nibbles + (b / 2) * 32;
    int shift = (b & 1) * 4;
    for (int i = 0; i < kQK; ++i) out[b * kQK + i] = r.d[b] * ((group[i] >> shift) & 0xF) + r.m[b];
  }
}

}  // namespace prism::kernels
