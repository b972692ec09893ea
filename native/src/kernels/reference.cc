// Plain reference code: (de)quantizers for every storage type, bit-exact with GGML's block
// layouts (the f32 matmul the fast kernels are tested against is matmul_reference.cc).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/internal.h"

namespace prism {

using namespace kernels;

namespace {

void dequantizeQ8_0(const uint8_t* b, float* out) {
  float d = f16ToF32(loadU16(b));
  const int8_t* q = reinterpret_cast<const int8_t*>(b + 2);
  for (int i = 0; i < kQK; ++i) out[i] = q[i] * d;
}

void dequantizeQ4_0(const uint8_t* b, float* out) {
  float d = f16ToF32(loadU16(b));
  const uint8_t* q = b + 2;
  for (int i = 0; i < kQK / 2; ++i) {
    out[i] = ((q[i] & 0xF) - 8) * d;
    out[i + kQK / 2] = ((q[i] >> 4) - 8) * d;
  }
}

void dequantizeQ4_1(const uint8_t* b, float* out) {
  float d = f16ToF32(loadU16(b));
  float m = f16ToF32(loadU16(b + 2));
  const uint8_t* q = b + 4;
  for (int i = 0; i < kQK / 2; ++i) {
    out[i] = (q[i] & 0xF) * d + m;
    out[i + kQK / 2] = (q[i] >> 4) * d + m;
  }
}

// Q4_K super-block: d, dmin, 12 bytes of scales/mins, 128 bytes of nibbles; sub-block j's
// 32 values are the low (j even) or high (j odd) nibbles of bytes 32*(j/2) .. +32.
void dequantizeQ4_K(const uint8_t* b, float* out) {
  float d = f16ToF32(loadU16(b));
  float dmin = f16ToF32(loadU16(b + 2));
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    q4kScaleMin(j, scales, &sc, &m);
    float dj = d * sc, mj = dmin * m;
    const uint8_t* qj = q + 32 * (j / 2);
    int shift = (j & 1) * 4;
    for (int l = 0; l < 32; ++l) out[j * 32 + l] = dj * ((qj[l] >> shift) & 0xF) - mj;
  }
}

// Q6_K super-block: ql[128] low 4 bits, qh[64] high 2 bits, 16 int8 scales (one per 16
// values), f16 d. Two halves of 128 values; within a half, value s*32 + l (s = 0..3) takes
// its low bits from ql[64h + 32(s&1) + l] (high nibble when s >= 2) and its high bits from
// bits 2s..2s+1 of qh[32h + l].
void dequantizeQ6_K(const uint8_t* b, float* out) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  float d = f16ToF32(loadU16(b + 208));
  for (int h = 0; h < 2; ++h) {
    for (int s = 0; s < 4; ++s) {
      for (int l = 0; l < 32; ++l) {
        int lo = (ql[64 * h + 32 * (s & 1) + l] >> (4 * (s >> 1))) & 0xF;
        int hi = (qh[32 * h + l] >> (2 * s)) & 3;
        int v = 128 * h + 32 * s + l;
        out[v] = d * sc[v / 16] * ((lo | (hi << 4)) - 32);
      }
    }
  }
}

void quantizeQ8_0(const float* x, uint8_t* b) {
  float amax = 0;
  for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(x[i]));
  float d = amax / 127;
  float id = d != 0 ? 1 / d : 0;
  uint16_t dh = f32ToF16(d);
  std::memcpy(b, &dh, 2);
  for (int i = 0; i < kQK; ++i) b[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[i] * id)));
}

void quantizeQ4_0(const float* x, uint8_t* b) {
  float amax = 0, max = 0;
  for (int i = 0; i < kQK; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  float d = max / -8;
  float id = d != 0 ? 1 / d : 0;
  uint16_t dh = f32ToF16(d);
  std::memcpy(b, &dh, 2);
  for (int i = 0; i < kQK / 2; ++i) {
    int q0 = std::min(15, static_cast<int>(x[i] * id + 8.5f));
    int q1 = std::min(15, static_cast<int>(x[i + kQK / 2] * id + 8.5f));
    b[2 + i] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

void quantizeQ4_1(const float* x, uint8_t* b) {
  float min = x[0], max = x[0];
  for (int i = 1; i < kQK; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
  }
  float d = (max - min) / 15;
  float id = d != 0 ? 1 / d : 0;
  uint16_t dh = f32ToF16(d), mh = f32ToF16(min);
  std::memcpy(b, &dh, 2);
  std::memcpy(b + 2, &mh, 2);
  for (int i = 0; i < kQK / 2; ++i) {
    int q0 = std::min(15, static_cast<int>((x[i] - min) * id + 0.5f));
    int q1 = std::min(15, static_cast<int>((x[i + kQK / 2] - min) * id + 0.5f));
    b[4 + i] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

// A simple Q4_K quantizer: per-sub-block min/max, scales and mins quantized to 6 bits
// against the super-block's largest, then the values re-quantized with the stored scales.
// (GGML searches scales iteratively; this is less accurate but produces valid blocks.)
void quantizeQ4_K(const float* x, uint8_t* b) {
  float scale[8], min[8], maxScale = 0, maxMin = 0;
  for (int j = 0; j < 8; ++j) {
    float lo = 0, hi = x[j * 32];
    for (int l = 0; l < 32; ++l) {
      lo = std::min(lo, x[j * 32 + l]);
      hi = std::max(hi, x[j * 32 + l]);
    }
    scale[j] = (hi - lo) / 15;
    min[j] = -lo;
    maxScale = std::max(maxScale, scale[j]);
    maxMin = std::max(maxMin, min[j]);
  }
  uint16_t dh = f32ToF16(maxScale / 63), dminh = f32ToF16(maxMin / 63);
  std::memcpy(b, &dh, 2);
  std::memcpy(b + 2, &dminh, 2);
  float d = f16ToF32(dh), dmin = f16ToF32(dminh);
  uint8_t* packed = b + 4;
  std::memset(packed, 0, 12);
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = static_cast<uint8_t>(std::clamp(d > 0 ? static_cast<int>(std::lround(scale[j] / d)) : 0, 0, 63));
    lm[j] = static_cast<uint8_t>(std::clamp(dmin > 0 ? static_cast<int>(std::lround(min[j] / dmin)) : 0, 0, 63));
    if (j < 4) {
      packed[j] = ls[j];
      packed[j + 4] = lm[j];
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
  uint8_t* q = b + 16;
  std::memset(q, 0, 128);
  for (int j = 0; j < 8; ++j) {
    float dj = d * ls[j], mj = dmin * lm[j];
    for (int l = 0; l < 32; ++l) {
      int v = dj > 0 ? static_cast<int>(std::lround((x[j * 32 + l] + mj) / dj)) : 0;
      v = std::clamp(v, 0, 15);
      q[32 * (j / 2) + l] |= static_cast<uint8_t>(v << ((j & 1) * 4));
    }
  }
}

// A simple Q6_K quantizer: per 16 values the signed extreme maps to -32, the 16 scales are
// quantized to int8 against the largest, then values re-quantized with the stored scales.
void quantizeQ6_K(const float* x, uint8_t* b) {
  float scale[16], maxAbs = 0, maxScale = 0;
  for (int k = 0; k < 16; ++k) {
    float amax = 0, vmax = 0;
    for (int l = 0; l < 16; ++l) {
      float v = x[k * 16 + l];
      if (std::fabs(v) > amax) {
        amax = std::fabs(v);
        vmax = v;
      }
    }
    scale[k] = vmax / -32;
    if (std::fabs(scale[k]) > maxAbs) {
      maxAbs = std::fabs(scale[k]);
      maxScale = scale[k];
    }
  }
  float iscale = maxScale != 0 ? -128 / maxScale : 0;
  uint16_t dh = f32ToF16(iscale != 0 ? 1 / iscale : 0);
  float d = f16ToF32(dh);
  int8_t* sc = reinterpret_cast<int8_t*>(b + 192);
  int L[256];
  for (int k = 0; k < 16; ++k) {
    sc[k] = static_cast<int8_t>(std::clamp(static_cast<int>(std::lround(iscale * scale[k])), -128, 127));
    float dk = d * sc[k];
    for (int l = 0; l < 16; ++l) {
      int v = dk != 0 ? static_cast<int>(std::lround(x[k * 16 + l] / dk)) : 0;
      L[k * 16 + l] = std::clamp(v, -32, 31) + 32;
    }
  }
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int* Lh = L + 128 * h;
      int q1 = Lh[l], q2 = Lh[l + 32], q3 = Lh[l + 64], q4 = Lh[l + 96];
      ql[64 * h + l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      ql[64 * h + l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
      qh[32 * h + l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
  }
  std::memcpy(b + 208, &dh, 2);
}

uint16_t f32ToBf16(float f) {
  uint32_t n;
  std::memcpy(&n, &f, 4);
  if ((n & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((n >> 16) | 64);  // quiet NaN
  return static_cast<uint16_t>((static_cast<uint64_t>(n) + (0x7fff + ((n >> 16) & 1))) >> 16);
}

void checkShape(TensorType type, int64_t rows, int64_t cols) {
  if (rows < 0) throw std::invalid_argument("rows must be >= 0");
  typeRowBytes(type, cols);  // throws when cols is not a multiple of the block size
}

}  // namespace

void dequantizeRow(TensorType type, const uint8_t* data, int64_t cols, int64_t row, float* out) {
  size_t rowBytes = typeRowBytes(type, cols);
  const uint8_t* p = data + rowBytes * static_cast<size_t>(row);
  switch (type) {
    case TensorType::F32:
      std::memcpy(out, p, static_cast<size_t>(cols) * 4);
      return;
    case TensorType::F16:
      for (int64_t i = 0; i < cols; ++i) out[i] = f16ToF32(loadU16(p + 2 * i));
      return;
    case TensorType::BF16:
      for (int64_t i = 0; i < cols; ++i) out[i] = bf16ToF32(loadU16(p + 2 * i));
      return;
    case TensorType::Q8_0:
      for (int64_t b = 0; b < cols / kQK; ++b) dequantizeQ8_0(p + b * kQ8_0Bytes, out + b * kQK);
      return;
    case TensorType::Q4_0:
      for (int64_t b = 0; b < cols / kQK; ++b) dequantizeQ4_0(p + b * kQ4_0Bytes, out + b * kQK);
      return;
    case TensorType::Q4_1:
      for (int64_t b = 0; b < cols / kQK; ++b) dequantizeQ4_1(p + b * kQ4_1Bytes, out + b * kQK);
      return;
    case TensorType::Q4_K:
      for (int64_t b = 0; b < cols / kQKK; ++b) dequantizeQ4_K(p + b * kQ4_KBytes, out + b * kQKK);
      return;
    case TensorType::Q6_K:
      for (int64_t b = 0; b < cols / kQKK; ++b) dequantizeQ6_K(p + b * kQ6_KBytes, out + b * kQKK);
      return;
    default:
      if (dequantizeBlocksRow(type, p, cols, out)) return;
  }
  throw std::invalid_argument("dequantizeRow: unsupported type");
}

void dequantizeReference(TensorType type, const uint8_t* data, int64_t rows, int64_t cols, float* out) {
  checkShape(type, rows, cols);
  for (int64_t r = 0; r < rows; ++r) dequantizeRow(type, data, cols, r, out + r * cols);
}

void quantizeReference(TensorType type, const float* values, int64_t rows, int64_t cols, uint8_t* out) {
  checkShape(type, rows, cols);
  size_t rowBytes = typeRowBytes(type, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = values + r * cols;
    uint8_t* o = out + rowBytes * static_cast<size_t>(r);
    switch (type) {
      case TensorType::F32:
        std::memcpy(o, x, static_cast<size_t>(cols) * 4);
        break;
      case TensorType::F16:
        for (int64_t i = 0; i < cols; ++i) {
          uint16_t h = f32ToF16(x[i]);
          std::memcpy(o + 2 * i, &h, 2);
        }
        break;
      case TensorType::BF16:
        for (int64_t i = 0; i < cols; ++i) {
          uint16_t h = f32ToBf16(x[i]);
          std::memcpy(o + 2 * i, &h, 2);
        }
        break;
      case TensorType::Q8_0:
        for (int64_t b = 0; b < cols / kQK; ++b) quantizeQ8_0(x + b * kQK, o + b * kQ8_0Bytes);
        break;
      case TensorType::Q4_0:
        for (int64_t b = 0; b < cols / kQK; ++b) quantizeQ4_0(x + b * kQK, o + b * kQ4_0Bytes);
        break;
      case TensorType::Q4_1:
        for (int64_t b = 0; b < cols / kQK; ++b) quantizeQ4_1(x + b * kQK, o + b * kQ4_1Bytes);
        break;
      case TensorType::Q4_K:
        for (int64_t b = 0; b < cols / kQKK; ++b) quantizeQ4_K(x + b * kQKK, o + b * kQ4_KBytes);
        break;
      case TensorType::Q6_K:
        for (int64_t b = 0; b < cols / kQKK; ++b) quantizeQ6_K(x + b * kQKK, o + b * kQ6_KBytes);
        break;
      default:
        if (!quantizeBlocksRow(type, x, cols, o)) throw std::invalid_argument("quantizeReference: unsupported type");
    }
  }
}

}  // namespace prism
