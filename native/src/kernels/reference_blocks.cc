// Plain reference (de)quantizers of the Q5_0, Q5_1, Q5_K, Q3_K, Q2_K, IQ4_NL and IQ4_XS
// blocks (reference.cc has the older types and calls these for a whole row).
//
// Dequantization follows GGML's definitions of each block (ggml-quants.c, dequantize_row_*)
// value for value and bit for bit: every product below is of an f16 scale and small
// integers, exact in f32, so the order of operations cannot change a result.
//
// The quantizers only need to produce valid blocks that use every bit of the format (the
// tests quantize random matrices with them and compare the kernels against the dequantized
// weights); Q5_0 and Q5_1 are GGML's reference quantizers (the gguf package has them too and
// the tests compare bytes), the others are simple searches, less accurate than llama.cpp's
// (whose own quantizer writes the size-suite files, scripts/make-size-models.py).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels/internal.h"

namespace prism::kernels {

namespace {

void storeF16(uint8_t* p, float v) {
  const uint16_t h = f32ToF16(v);
  std::memcpy(p, &h, 2);
}

// ---- dequantization ----------------------------------------------------------------------

// Q5_0 / Q5_1: value i takes bit i of qh as its fifth bit.
void dequantizeQ5(const uint8_t* b, bool withMin, float* out) {
  const float d = f16ToF32(loadU16(b));
  const float m = withMin ? f16ToF32(loadU16(b + 2)) : 0.0f;
  const uint8_t* p = b + (withMin ? 4 : 2);
  uint32_t qh;
  std::memcpy(&qh, p, 4);
  const uint8_t* qs = p + 4;
  for (int j = 0; j < 16; ++j) {
    const int q0 = (qs[j] & 0xF) | (((qh >> j) & 1) << 4);
    const int q1 = (qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
    if (withMin) {
      out[j] = static_cast<float>(q0) * d + m;
      out[j + 16] = static_cast<float>(q1) * d + m;
    } else {
      out[j] = static_cast<float>(q0 - 16) * d;
      out[j + 16] = static_cast<float>(q1 - 16) * d;
    }
  }
}

// Q5_K: sub-block j (32 values) has Q4_K's scale/min j; its low nibbles are those of Q4_K's
// sub-block j, its fifth bits bit j of qh[0..31].
void dequantizeQ5_K(const uint8_t* b, float* out) {
  const float d = f16ToF32(loadU16(b)), dmin = f16ToF32(loadU16(b + 2));
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    q4kScaleMin(j, b + 4, &sc, &mn);
    const float dj = d * sc, mj = dmin * mn;
    const uint8_t* ql = qs + 32 * (j / 2);
    for (int l = 0; l < 32; ++l) {
      const int q = ((ql[l] >> (4 * (j & 1))) & 0xF) | (((qh[l] >> j) & 1) << 4);
      out[j * 32 + l] = dj * static_cast<float>(q) - mj;
    }
  }
}

// Q3_K: value v (0..255): half n = v / 128, shift j = (v % 128) / 32, l = v % 32; low bits
// 2j..2j+1 of qs[32n + l], high bit 4n + j of hmask[l]; q = low | high << 2 in 0..7 stands
// for q - 4; 16-value sub-block s = v / 16 has the 6-bit scale q3kScale(s) − 32.
void dequantizeQ3_K(const uint8_t* b, float* out) {
  const uint8_t* hm = b;
  const uint8_t* qs = b + 32;
  const float d = f16ToF32(loadU16(b + 108));
  for (int v = 0; v < kQKK; ++v) {
    const int n = v / 128, j = (v % 128) / 32, l = v % 32;
    const int q = ((qs[32 * n + l] >> (2 * j)) & 3) | (((hm[l] >> (4 * n + j)) & 1) << 2);
    const float dl = d * static_cast<float>(q3kScale(v / 16, b + 96) - 32);
    out[v] = dl * static_cast<float>(q - 4);
  }
}

// Q2_K: value v as Q3_K's low bits; sub-block s = v / 16 has scale (scales[s] & 15) and
// min (scales[s] >> 4).
void dequantizeQ2_K(const uint8_t* b, float* out) {
  const uint8_t* qs = b + 16;
  const float d = f16ToF32(loadU16(b + 80)), dmin = f16ToF32(loadU16(b + 82));
  for (int v = 0; v < kQKK; ++v) {
    const int n = v / 128, j = (v % 128) / 32, l = v % 32;
    const int q = (qs[32 * n + l] >> (2 * j)) & 3;
    const uint8_t sc = b[v / 16];
    const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
    out[v] = dl * static_cast<float>(q) - ml;
  }
}

void dequantizeIQ4_NL(const uint8_t* b, float* out) {
  const float d = f16ToF32(loadU16(b));
  for (int j = 0; j < 16; ++j) {
    out[j] = d * static_cast<float>(kIQ4Values[b[2 + j] & 0xF]);
    out[j + 16] = d * static_cast<float>(kIQ4Values[b[2 + j] >> 4]);
  }
}

// IQ4_XS: 32-value block ib has the 6-bit scale iq4xsScale(ib) − 32 and IQ4_NL's nibbles.
void dequantizeIQ4_XS(const uint8_t* b, float* out) {
  const float d = f16ToF32(loadU16(b));
  for (int ib = 0; ib < 8; ++ib) {
    const float dl = d * static_cast<float>(iq4xsScale(ib, b) - 32);
    const uint8_t* qs = b + 8 + 16 * ib;
    for (int j = 0; j < 16; ++j) {
      out[32 * ib + j] = dl * static_cast<float>(kIQ4Values[qs[j] & 0xF]);
      out[32 * ib + j + 16] = dl * static_cast<float>(kIQ4Values[qs[j] >> 4]);
    }
  }
}

// ---- quantization --------------------------------------------------------------------------

// GGML's quantize_row_q5_0_ref / q5_1_ref (and the gguf package's): the signed extreme maps
// to -16 (Q5_0), or min/max to 0/31 (Q5_1).
void quantizeQ5(const float* x, bool withMin, uint8_t* b) {
  float d, id, lo = 0;
  if (withMin) {
    float mx = x[0];
    lo = x[0];
    for (int i = 1; i < kQK; ++i) {
      lo = std::min(lo, x[i]);
      mx = std::max(mx, x[i]);
    }
    d = (mx - lo) / 31;
  } else {
    float amax = 0, mx = 0;
    for (int i = 0; i < kQK; ++i) {
      if (std::fabs(x[i]) > amax) {
        amax = std::fabs(x[i]);
        mx = x[i];
      }
    }
    d = mx / -16;
  }
  id = d != 0 ? 1 / d : 0;
  storeF16(b, d);
  if (withMin) storeF16(b + 2, lo);
  uint8_t* p = b + (withMin ? 4 : 2);
  uint32_t qh = 0;
  uint8_t* qs = p + 4;
  for (int j = 0; j < 16; ++j) {
    int q0, q1;
    if (withMin) {
      q0 = std::min(31, static_cast<int>((x[j] - lo) * id + 0.5f));
      q1 = std::min(31, static_cast<int>((x[j + 16] - lo) * id + 0.5f));
    } else {
      q0 = std::min(31, static_cast<int>(x[j] * id + 16.5f));
      q1 = std::min(31, static_cast<int>(x[j + 16] * id + 16.5f));
    }
    qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
    qh |= static_cast<uint32_t>(q0 >> 4) << j;
    qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
  }
  std::memcpy(p, &qh, 4);
}

// Packs eight 6-bit scales and mins the way Q4_K / Q5_K store them (q4kScaleMin's inverse).
void packScaleMin(const uint8_t* ls, const uint8_t* lm, uint8_t* packed) {
  std::memset(packed, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      packed[j] = ls[j];
      packed[j + 4] = lm[j];
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
}

// Per sub-block of `len` values: min/max → scale (hi − lo)/levels and min −lo (lo ≤ 0);
// scales and mins quantized against the largest to `bits`; values re-quantized with the
// stored ones. Writes the integer scales, mins and values; returns d, dmin (as f16 values).
void quantizeScaleMin(const float* x, int subBlocks, int len, int levels, int scaleMax, uint8_t* ls, uint8_t* lm,
                      uint8_t* q, float* dOut, float* dminOut) {
  float scale[16], min[16], maxScale = 0, maxMin = 0;
  for (int j = 0; j < subBlocks; ++j) {
    float lo = 0, hi = x[j * len];
    for (int l = 0; l < len; ++l) {
      lo = std::min(lo, x[j * len + l]);
      hi = std::max(hi, x[j * len + l]);
    }
    scale[j] = (hi - lo) / static_cast<float>(levels);
    min[j] = -lo;
    maxScale = std::max(maxScale, scale[j]);
    maxMin = std::max(maxMin, min[j]);
  }
  const float d = f16ToF32(f32ToF16(maxScale / static_cast<float>(scaleMax)));
  const float dmin = f16ToF32(f32ToF16(maxMin / static_cast<float>(scaleMax)));
  for (int j = 0; j < subBlocks; ++j) {
    ls[j] = static_cast<uint8_t>(std::clamp(d > 0 ? static_cast<int>(std::lround(scale[j] / d)) : 0, 0, scaleMax));
    lm[j] = static_cast<uint8_t>(std::clamp(dmin > 0 ? static_cast<int>(std::lround(min[j] / dmin)) : 0, 0, scaleMax));
    const float dj = d * ls[j], mj = dmin * lm[j];
    for (int l = 0; l < len; ++l) {
      const int v = dj > 0 ? static_cast<int>(std::lround((x[j * len + l] + mj) / dj)) : 0;
      q[j * len + l] = static_cast<uint8_t>(std::clamp(v, 0, levels));
    }
  }
  *dOut = d;
  *dminOut = dmin;
}

void quantizeQ5_K(const float* x, uint8_t* b) {
  uint8_t ls[8], lm[8], q[kQKK];
  float d, dmin;
  quantizeScaleMin(x, 8, 32, 31, 63, ls, lm, q, &d, &dmin);
  storeF16(b, d);
  storeF16(b + 2, dmin);
  packScaleMin(ls, lm, b + 4);
  uint8_t* qh = b + 16;
  uint8_t* qs = b + 48;
  std::memset(qh, 0, 32 + 128);
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 32; ++l) {
      const int v = q[j * 32 + l];
      qs[32 * (j / 2) + l] |= static_cast<uint8_t>((v & 0xF) << (4 * (j & 1)));
      qh[l] |= static_cast<uint8_t>((v >> 4) << j);
    }
}

void quantizeQ2_K(const float* x, uint8_t* b) {
  uint8_t ls[16], lm[16], q[kQKK];
  float d, dmin;
  quantizeScaleMin(x, 16, 16, 3, 15, ls, lm, q, &d, &dmin);
  for (int s = 0; s < 16; ++s) b[s] = static_cast<uint8_t>(ls[s] | (lm[s] << 4));
  uint8_t* qs = b + 16;
  std::memset(qs, 0, 64);
  for (int v = 0; v < kQKK; ++v) {
    const int n = v / 128, j = (v % 128) / 32, l = v % 32;
    qs[32 * n + l] |= static_cast<uint8_t>(q[v] << (2 * j));
  }
  storeF16(b + 80, d);
  storeF16(b + 82, dmin);
}

// Signed scales: per sub-block of `len` the signed extreme maps to `lowest` (a negative
// level); the sub-block scales against the largest to [−32, 31]. Writes ls = scale + 32
// (0..63) and the signed values clamped to [lowest, −lowest − 1]; returns d.
float quantizeSignedScales(const float* x, int subBlocks, int len, int lowest, uint8_t* ls, int* q) {
  float scale[16], maxAbs = 0, maxScale = 0;
  for (int k = 0; k < subBlocks; ++k) {
    float amax = 0, vmax = 0;
    for (int l = 0; l < len; ++l) {
      const float v = x[k * len + l];
      if (std::fabs(v) > amax) {
        amax = std::fabs(v);
        vmax = v;
      }
    }
    scale[k] = vmax / static_cast<float>(lowest);
    if (std::fabs(scale[k]) > maxAbs) {
      maxAbs = std::fabs(scale[k]);
      maxScale = scale[k];
    }
  }
  const float d = f16ToF32(f32ToF16(maxScale / -32));
  for (int k = 0; k < subBlocks; ++k) {
    const int s = std::clamp(d != 0 ? static_cast<int>(std::lround(scale[k] / d)) : 0, -32, 31);
    ls[k] = static_cast<uint8_t>(s + 32);
    const float dk = d * static_cast<float>(s);
    for (int l = 0; l < len; ++l) {
      const int v = dk != 0 ? static_cast<int>(std::lround(x[k * len + l] / dk)) : 0;
      q[k * len + l] = std::clamp(v, lowest, -lowest - 1);
    }
  }
  return d;
}

void quantizeQ3_K(const float* x, uint8_t* b) {
  uint8_t ls[16];
  int q[kQKK];
  const float d = quantizeSignedScales(x, 16, 16, -4, ls, q);
  std::memset(b, 0, kQ3_KBytes);
  uint8_t* hm = b;
  uint8_t* qs = b + 32;
  for (int v = 0; v < kQKK; ++v) {
    const int n = v / 128, j = (v % 128) / 32, l = v % 32, u = q[v] + 4;
    qs[32 * n + l] |= static_cast<uint8_t>((u & 3) << (2 * j));
    hm[l] |= static_cast<uint8_t>((u >> 2) << (4 * n + j));
  }
  uint8_t* sc = b + 96;  // q3kScale's inverse
  for (int s = 0; s < 16; ++s) {
    sc[s % 8] |= static_cast<uint8_t>((ls[s] & 0xF) << (s < 8 ? 0 : 4));
    sc[8 + s % 4] |= static_cast<uint8_t>((ls[s] >> 4) << (2 * (s / 4)));
  }
  storeF16(b + 108, d);
}

// Nearest IQ4 value to x / d.
uint8_t nearestIQ4(float v) {
  int best = 0;
  float bestErr = std::fabs(v - kIQ4Values[0]);
  for (int i = 1; i < 16; ++i) {
    const float e = std::fabs(v - kIQ4Values[i]);
    if (e < bestErr) {
      best = i;
      bestErr = e;
    }
  }
  return static_cast<uint8_t>(best);
}

void packIQ4Nibbles(const float* x, float d, uint8_t* qs) {
  const float id = d != 0 ? 1 / d : 0;
  for (int j = 0; j < 16; ++j)
    qs[j] = static_cast<uint8_t>(nearestIQ4(x[j] * id) | (nearestIQ4(x[j + 16] * id) << 4));
}

void quantizeIQ4_NL(const float* x, uint8_t* b) {
  float amax = 0, vmax = 0;
  for (int i = 0; i < kQK; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      vmax = x[i];
    }
  }
  const float d = f16ToF32(f32ToF16(vmax / -127));
  storeF16(b, d);
  packIQ4Nibbles(x, d, b + 2);
}

void quantizeIQ4_XS(const float* x, uint8_t* b) {
  uint8_t ls[8];
  int unused[kQKK];
  const float d = quantizeSignedScales(x, 8, 32, -127, ls, unused);
  storeF16(b, d);
  uint16_t sh = 0;
  std::memset(b + 4, 0, 4);
  for (int ib = 0; ib < 8; ++ib) {
    b[4 + ib / 2] |= static_cast<uint8_t>((ls[ib] & 0xF) << (4 * (ib % 2)));
    sh = static_cast<uint16_t>(sh | ((ls[ib] >> 4) << (2 * ib)));
    packIQ4Nibbles(x + 32 * ib, d * static_cast<float>(ls[ib] - 32), b + 8 + 16 * ib);
  }
  std::memcpy(b + 2, &sh, 2);
}

}  // namespace

bool dequantizeBlocksRow(TensorType type, const uint8_t* row, int64_t cols, float* out) {
  switch (type) {
    case TensorType::Q5_0:
    case TensorType::Q5_1:
      for (int64_t b = 0; b < cols / kQK; ++b)
        dequantizeQ5(row + b * (type == TensorType::Q5_0 ? kQ5_0Bytes : kQ5_1Bytes), type == TensorType::Q5_1,
                     out + b * kQK);
      return true;
    case TensorType::IQ4_NL:
      for (int64_t b = 0; b < cols / kQK; ++b) dequantizeIQ4_NL(row + b * kIQ4_NLBytes, out + b * kQK);
      return true;
    case TensorType::Q5_K:
      for (int64_t b = 0; b < cols / kQKK; ++b) dequantizeQ5_K(row + b * kQ5_KBytes, out + b * kQKK);
      return true;
    case TensorType::Q3_K:
      for (int64_t b = 0; b < cols / kQKK; ++b) dequantizeQ3_K(row + b * kQ3_KBytes, out + b * kQKK);
      return true;
    case TensorType::Q2_K:
      for (int64_t b = 0; b < cols / kQKK; ++b) dequantizeQ2_K(row + b * kQ2_KBytes, out + b * kQKK);
      return true;
    case TensorType::IQ4_XS:
      for (int64_t b = 0; b < cols / kQKK; ++b) dequantizeIQ4_XS(row + b * kIQ4_XSBytes, out + b * kQKK);
      return true;
    default:
      return false;
  }
}

bool quantizeBlocksRow(TensorType type, const float* x, int64_t cols, uint8_t* out) {
  switch (type) {
    case TensorType::Q5_0:
      for (int64_t b = 0; b < cols / kQK; ++b) quantizeQ5(x + b * kQK, false, out + b * kQ5_0Bytes);
      return true;
    case TensorType::Q5_1:
      for (int64_t b = 0; b < cols / kQK; ++b) quantizeQ5(x + b * kQK, true, out + b * kQ5_1Bytes);
      return true;
    case TensorType::IQ4_NL:
      for (int64_t b = 0; b < cols / kQK; ++b) quantizeIQ4_NL(x + b * kQK, out + b * kIQ4_NLBytes);
      return true;
    case TensorType::Q5_K:
      for (int64_t b = 0; b < cols / kQKK; ++b) quantizeQ5_K(x + b * kQKK, out + b * kQ5_KBytes);
      return true;
    case TensorType::Q3_K:
      for (int64_t b = 0; b < cols / kQKK; ++b) quantizeQ3_K(x + b * kQKK, out + b * kQ3_KBytes);
      return true;
    case TensorType::Q2_K:
      for (int64_t b = 0; b < cols / kQKK; ++b) quantizeQ2_K(x + b * kQKK, out + b * kQ2_KBytes);
      return true;
    case TensorType::IQ4_XS:
      for (int64_t b = 0; b < cols / kQKK; ++b) quantizeIQ4_XS(x + b * kQKK, out + b * kIQ4_XSBytes);
      return true;
    default:
      return false;
  }
}

}  // namespace prism::kernels
