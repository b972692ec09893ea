// Weight matrices on the device, and how a kernel reads 32 values of one.
//
// Every matrix [rows × cols] is stored in "groups" of 32 consecutive values of a row (cols is
// a multiple of the type's block: 32, or 256 for the K-quants), row-major: group g of row r
// has index r·(cols/32) + g. A group's quantized bytes are contiguous and 16-byte aligned, so
// a lane reads them with 128-bit loads; its scales live in a separate array. The file's GGML
// blocks are rearranged into this form once, at upload (repackKernel in k_linear.cu); the
// bytes per value stay the file's (Q4_K: 144 per 256, Q6_K: 210 per 256):
//
//   type   q (per group)                         s                          more
//   F32    32 floats (128 B)                     -                          -
//   F16    32 halves (64 B)                      -                          -
//   BF16   32 bf16 (64 B)                        -                          -
//   Q8_0   32 int8 (32 B)                        f16 d per group            -
//   Q4_0   16 B: byte i = value i (low nibble),  f16 d per group            value = (q - 8)·d
//          value i+16 (high nibble)
//   Q4_1   16 B as Q4_0                          f16 (d, m) per group       value = q·d + m
//   Q4_K   16 B as Q4_0                          16 B per 256 values: the   value = d·sc_j·q - dmin·m_j
//                                                file's d, dmin, scales[12]
//   Q6_K   16 B: low 4 bits as Q4_0              int8 scale per 16 values   qh: 8 B per group, byte i
//                                                sd: f16 d per 256 values   holds the high 2 bits of
//                                                                           values i, i+8, i+16, i+24
#pragma once
#include <cstdint>

#include "compat.h"

namespace pc {

// GGML numbering, as native/src/kernels/kernels.h.
enum WeightType : int { kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14, kBF16 = 30 };

struct DeviceWeight {
  int type = kF32;
  int64_t rows = 0, cols = 0;
  const uint8_t* q = nullptr;
  const uint8_t* s = nullptr;
  const uint8_t* qh = nullptr;  // Q6_K
  const uint8_t* sd = nullptr;  // Q6_K
};

// Bytes per group of each array (0 where the type has none).
PC_HD int groupQBytes(int type) {
  switch (type) {
    case kF32: return 128;
    case kF16:
    case kBF16: return 64;
    case kQ8_0: return 32;
    default: return 16;
  }
}
PC_HD int groupSBytes(int type) {
  switch (type) {
    case kQ8_0:
    case kQ4_0: return 2;
    case kQ4_1: return 4;
    case kQ4_K: return 2;  // 16 B per 8 groups
    case kQ6_K: return 2;  // two int8 scales
    default: return 0;
  }
}
PC_HD int groupQhBytes(int type) { return type == kQ6_K ? 8 : 0; }
// Q6_K's d: 2 bytes per 8 groups.
PC_HD int blockValues(int type) { return type == kQ4_K || type == kQ6_K ? 256 : type >= kQ4_0 && type != kBF16 ? 32 : 1; }

inline bool weightTypeSupported(int type) {
  switch (type) {
    case kF32:
    case kF16:
    case kBF16:
    case kQ8_0:
    case kQ4_0:
    case kQ4_1:
    case kQ4_K:
    case kQ6_K: return true;
    default: return false;
  }
}

PC_DEVICE uint4 load16(const uint8_t* p) { return *reinterpret_cast<const uint4*>(p); }

PC_DEVICE void bytesOf(const uint4& v, uint8_t out[16]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 16; i++) out[i] = static_cast<uint8_t>(w[i >> 2] >> (8 * (i & 3)));
}

PC_DEVICE uint16_t halfAt(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (static_cast<uint16_t>(p[1]) << 8));
}

// The file's Q4_K (sc, m) of sub-block j from its 12 packed scale bytes (GGML's get_scale_min_k4).
PC_DEVICE void q4kScaleMin(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// The 32 values of group `g` (index over the whole matrix), in f32, computed in the same
// order of float operations as the CPU's dequantizers (native/src/kernels/reference.cc).
template <int TYPE>
PC_DEVICE void decodeGroup(const DeviceWeight& W, int64_t g, float v[32]) {
  if constexpr (TYPE == kF32) {
    const float4* p = reinterpret_cast<const float4*>(W.q + g * 128);
#pragma unroll
    for (int k = 0; k < 8; k++) {
      const float4 a = p[k];
      v[4 * k] = a.x;
      v[4 * k + 1] = a.y;
      v[4 * k + 2] = a.z;
      v[4 * k + 3] = a.w;
    }
  } else if constexpr (TYPE == kF16 || TYPE == kBF16) {
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const uint4 a = load16(W.q + g * 64 + 16 * k);
      const uint32_t w[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const uint16_t lo = static_cast<uint16_t>(w[i] & 0xffff), hi = static_cast<uint16_t>(w[i] >> 16);
        v[8 * k + 2 * i] = TYPE == kF16 ? f16ToFloat(lo) : bf16ToFloat(lo);
        v[8 * k + 2 * i + 1] = TYPE == kF16 ? f16ToFloat(hi) : bf16ToFloat(hi);
      }
    }
  } else if constexpr (TYPE == kQ8_0) {
    const float d = f16ToFloat(halfAt(W.s + g * 2));
#pragma unroll
    for (int k = 0; k < 2; k++) {
      uint8_t b[16];
      bytesOf(load16(W.q + g * 32 + 16 * k), b);
#pragma unroll
      for (int i = 0; i < 16; i++) v[16 * k + i] = static_cast<float>(static_cast<int8_t>(b[i])) * d;
    }
  } else if constexpr (TYPE == kQ4_0 || TYPE == kQ4_1) {
    uint8_t b[16];
    bytesOf(load16(W.q + g * 16), b);
    if constexpr (TYPE == kQ4_0) {
      const float d = f16ToFloat(halfAt(W.s + g * 2));
#pragma unroll
      for (int i = 0; i < 16; i++) {
        v[i] = static_cast<float>((b[i] & 0xF) - 8) * d;
        v[i + 16] = static_cast<float>((b[i] >> 4) - 8) * d;
      }
    } else {
      const float d = f16ToFloat(halfAt(W.s + g * 4)), m = f16ToFloat(halfAt(W.s + g * 4 + 2));
#pragma unroll
      for (int i = 0; i < 16; i++) {
        v[i] = static_cast<float>(b[i] & 0xF) * d + m;
        v[i + 16] = static_cast<float>(b[i] >> 4) * d + m;
      }
    }
  } else if constexpr (TYPE == kQ4_K) {
    uint8_t hdr[16];
    bytesOf(load16(W.s + (g >> 3) * 16), hdr);
    const float d = f16ToFloat(halfAt(hdr)), dmin = f16ToFloat(halfAt(hdr + 2));
    int sc, m;
    q4kScaleMin(static_cast<int>(g & 7), hdr + 4, &sc, &m);
    const float dj = d * static_cast<float>(sc), mj = dmin * static_cast<float>(m);
    uint8_t b[16];
    bytesOf(load16(W.q + g * 16), b);
#pragma unroll
    for (int i = 0; i < 16; i++) {
      v[i] = dj * static_cast<float>(b[i] & 0xF) - mj;
      v[i + 16] = dj * static_cast<float>(b[i] >> 4) - mj;
    }
  } else if constexpr (TYPE == kQ6_K) {
    uint8_t b[16];
    bytesOf(load16(W.q + g * 16), b);
    const uint2 h2 = *reinterpret_cast<const uint2*>(W.qh + g * 8);
    const uint32_t hw[2] = {h2.x, h2.y};
    const float d = f16ToFloat(halfAt(W.sd + (g >> 3) * 2));
    const float d0 = d * static_cast<float>(static_cast<int8_t>(W.s[g * 2]));
    const float d1 = d * static_cast<float>(static_cast<int8_t>(W.s[g * 2 + 1]));
#pragma unroll
    for (int i = 0; i < 32; i++) {
      const int lo = i < 16 ? (b[i] & 0xF) : (b[i - 16] >> 4);
      const int hb = static_cast<int>(hw[(i & 7) >> 2] >> (8 * (i & 3))) & 0xff;
      const int hi = (hb >> (2 * (i >> 3))) & 3;
      v[i] = (i < 16 ? d0 : d1) * static_cast<float>((lo | (hi << 4)) - 32);
    }
  }
}

}  // namespace pc
