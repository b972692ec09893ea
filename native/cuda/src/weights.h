// Weight matrices on the device, and how a kernel reads 32 values of one.
//
// Every matrix [rows × cols] is stored in "groups" of 32 consecutive values of a row (cols is
// a multiple of the type's block: 32, or 256 for the K-quants and IQ4_XS), row-major: group g
// of row r has index r·(cols/32) + g. A group's quantized bytes are contiguous and aligned to
// their size (16 B: one 128-bit load); its scales live in separate arrays, either per group
// (s, qh) or per 8 groups, i.e. per 256-value super-block (the s header of Q4_K / Q5_K /
// IQ4_XS, sd). The file's GGML blocks are rearranged into this form once, at upload
// (repackKernel in k_linear.cu); the bytes per value stay close to the file's (Q4_K: 144 per
// 256 as the file, Q3_K: 114 per 256 against the file's 110):
//
//   type    q (per group)                     s                              more
//   F32     32 floats (128 B)                 -                              -
//   F16     32 halves (64 B)                  -                              -
//   BF16    32 bf16 (64 B)                    -                              -
//   Q8_0    32 int8 (32 B)                    f16 d per group                -
//   Q4_0    16 B: byte i = value i (low       f16 d per group                value = (q - 8)·d
//           nibble), value i+16 (high nibble)
//   Q4_1    16 B as Q4_0                      f16 (d, m) per group           value = q·d + m
//   Q5_0    16 B as Q4_0 (the low 4 bits)     f16 d per group                qh: 4 B per group, bit i = the
//                                                                            fifth bit of value i;
//                                                                            value = (q - 16)·d
//   Q5_1    16 B as Q5_0                      f16 (d, m) per group           qh as Q5_0; value = q·d + m
//   IQ4_NL  16 B as Q4_0 (indices)            f16 d per group                value = d·kvalues_iq4nl[q]
//   Q4_K    16 B as Q4_0                      16 B per 8 groups: the file's  value = d·sc_j·q - dmin·m_j
//                                             d, dmin, scales[12]
//   Q5_K    16 B as Q4_K (the low 4 bits)     16 B per 8 groups, as Q4_K     qh as Q5_0; value as Q4_K
//   IQ4_XS  16 B as IQ4_NL                    8 B per 8 groups: the file's   value = d·(sc_j - 32)·
//                                             d, scales_h, scales_l[4]       kvalues_iq4nl[q]
//   Q6_K    16 B: low 4 bits as Q4_0          int8 scale per 16 values       qh: 8 B per group, byte i
//                                             sd: f16 d per 8 groups         holds the high 2 bits of
//                                                                            values i, i+8, i+16, i+24
//   Q3_K    8 B: byte i holds the low 2 bits  int8 scale (the file's 6-bit   qh as Q5_0 (the third bit);
//           of values i, i+8, i+16, i+24      scale − 32) per 16 values      value = d·sc·(q - 4)
//           (bits 2r for value i+8r)          sd: f16 d per 8 groups
//   Q2_K    8 B as Q3_K                       per 16 values the file's byte  value = d·sc·q − dmin·m
//                                             (scale | min << 4)
//                                             sd: f16 (d, dmin) per 8 groups
#pragma once
#include <cstdint>

#include "compat.h"

namespace pc {

// GGML numbering, as native/src/kernels/kernels.h.
enum WeightType : int {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kBF16 = 30
};

// GGML's name of a type (error messages).
inline const char* weightTypeName(int type) {
  switch (type) {
    case kF32: return "F32";
    case kF16: return "F16";
    case kQ4_0: return "Q4_0";
    case kQ4_1: return "Q4_1";
    case kQ5_0: return "Q5_0";
    case kQ5_1: return "Q5_1";
    case kQ8_0: return "Q8_0";
    case kQ2_K: return "Q2_K";
    case kQ3_K: return "Q3_K";
    case kQ4_K: return "Q4_K";
    case kQ5_K: return "Q5_K";
    case kQ6_K: return "Q6_K";
    case kIQ4_NL: return "IQ4_NL";
    case kIQ4_XS: return "IQ4_XS";
    case kBF16: return "BF16";
    default: return "an unknown type";
  }
}

struct DeviceWeight {
  int type = kF32;
  int64_t rows = 0, cols = 0;
  const uint8_t* q = nullptr;
  const uint8_t* s = nullptr;
  const uint8_t* qh = nullptr;  // Q5_0, Q5_1, Q5_K, Q3_K, Q6_K
  const uint8_t* sd = nullptr;  // Q6_K, Q3_K, Q2_K
};

// Bytes of each array per group, or per 8 groups (one 256-value super-block); 0 where the
// type has none.
PC_HD int groupQBytes(int type) {
  switch (type) {
    case kF32: return 128;
    case kF16:
    case kBF16: return 64;
    case kQ8_0: return 32;
    case kQ3_K:
    case kQ2_K: return 8;
    default: return 16;
  }
}
PC_HD int groupSBytes(int type) {
  switch (type) {
    case kQ8_0:
    case kQ4_0:
    case kQ5_0:
    case kIQ4_NL: return 2;
    case kQ4_1:
    case kQ5_1: return 4;
    case kQ6_K:
    case kQ3_K:
    case kQ2_K: return 2;  // two 16-value sub-blocks
    default: return 0;
  }
}
PC_HD int superSBytes(int type) { return type == kQ4_K || type == kQ5_K ? 16 : type == kIQ4_XS ? 8 : 0; }
PC_HD int groupQhBytes(int type) {
  switch (type) {
    case kQ6_K: return 8;
    case kQ5_0:
    case kQ5_1:
    case kQ5_K:
    case kQ3_K: return 4;
    default: return 0;
  }
}
PC_HD int superSdBytes(int type) { return type == kQ6_K || type == kQ3_K ? 2 : type == kQ2_K ? 4 : 0; }
PC_HD bool isSuperBlockType(int type) {
  return type == kQ2_K || type == kQ3_K || type == kQ4_K || type == kQ5_K || type == kQ6_K || type == kIQ4_XS;
}
PC_HD int blockValues(int type) {
  return isSuperBlockType(type) ? 256 : type == kF32 || type == kF16 || type == kBF16 ? 1 : 32;
}

// Rows [r0, r0 + rows) of W as a matrix of their own (r0·cols/32 is a whole number of 8
// groups for the super-block types: their cols are multiples of 256).
PC_HD DeviceWeight weightRows(const DeviceWeight& W, int64_t r0, int64_t rows) {
  DeviceWeight out = W;
  const int64_t g0 = r0 * (W.cols / 32);
  out.rows = rows;
  out.q = W.q + g0 * groupQBytes(W.type);
  if (W.s) out.s = W.s + g0 * groupSBytes(W.type) + g0 / 8 * superSBytes(W.type);
  if (W.qh) out.qh = W.qh + g0 * groupQhBytes(W.type);
  if (W.sd) out.sd = W.sd + g0 / 8 * superSdBytes(W.type);
  return out;
}

inline bool weightTypeSupported(int type) {
  switch (type) {
    case kF32:
    case kF16:
    case kBF16:
    case kQ8_0:
    case kQ4_0:
    case kQ4_1:
    case kQ5_0:
    case kQ5_1:
    case kIQ4_NL:
    case kQ2_K:
    case kQ3_K:
    case kQ4_K:
    case kQ5_K:
    case kQ6_K:
    case kIQ4_XS: return true;
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

// The file's Q4_K (sc, m) of sub-block j (GGML's get_scale_min_k4) from a super-block header
// held in registers (d, dmin, then the 12 scale bytes in h.y, h.z, h.w): the bytes are picked
// by shifts, so a run-time j never puts the header in local memory (an indexed array would).
PC_DEVICE void q4kScaleMinOf(int j, const uint4& h, int* sc, int* m) {
  auto byte = [&](int k) {  // scale byte k (0..11)
    const uint32_t w = k < 4 ? h.y : k < 8 ? h.z : h.w;
    return static_cast<int>((w >> (8 * (k & 3))) & 0xffu);
  };
  if (j < 4) {
    *sc = byte(j) & 63;
    *m = byte(j + 4) & 63;
  } else {
    *sc = (byte(j + 4) & 0xF) | ((byte(j - 4) >> 6) << 4);
    *m = (byte(j + 4) >> 4) | ((byte(j) >> 6) << 4);
  }
}

// The 32 fifth (Q5_*) or third (Q3_K) bits of a group: bit i belongs to value i.
PC_DEVICE uint32_t load4(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

// A group of 2-bit values (Q3_K / Q2_K): byte i holds values i, i+8, i+16, i+24 at bits 2r.
PC_DEVICE int twoBits(const uint2& w, int i) {
  const uint32_t word = (i & 7) < 4 ? w.x : w.y;
  return static_cast<int>(word >> (8 * (i & 3) + 2 * (i >> 3))) & 3;
}

// GGML's kvalues_iq4nl (the 16 values an IQ4 index stands for), four to a word so that the
// table is a few immediates rather than memory.
PC_HD int iq4Value(int i) {
  constexpr uint32_t w0 = 0xBFAD9881u;  // -127, -104, -83, -65
  constexpr uint32_t w1 = 0xF6EADDCFu;  // -49, -35, -22, -10
  constexpr uint32_t w2 = 0x26190D01u;  // 1, 13, 25, 38
  constexpr uint32_t w3 = 0x71594535u;  // 53, 69, 89, 113
  const uint32_t w = i < 8 ? (i < 4 ? w0 : w1) : (i < 12 ? w2 : w3);
  return static_cast<int8_t>(static_cast<uint8_t>(w >> (8 * (i & 3))));
}

// Q3_K: the 6-bit scale (0..63, standing for −32..31) of 16-value sub-block s (0..15) from
// the block's 12 scale bytes (GGML's kmask unpacking, one value at a time).
PC_HD int q3kScale(int s, const uint8_t* sc) {
  return ((sc[s % 8] >> (s < 8 ? 0 : 4)) & 0xF) | (((sc[8 + s % 4] >> (2 * (s / 4))) & 3) << 4);
}

// IQ4_XS: the 6-bit scale (standing for −32..31) of group j (0..7) of a super-block from its
// 8-byte header (d, scales_h, scales_l[4]).
PC_HD int iq4xsScale(int j, const uint8_t* hdr) {
  const int high = (static_cast<int>(hdr[2] | (hdr[3] << 8)) >> (2 * j)) & 3;
  return ((hdr[4 + j / 2] >> (4 * (j % 2))) & 0xF) | (high << 4);
}

// Σ v[i]·x[i] over a decoded group and 32 f32 activations (16-byte aligned), four at a time
// (both GEMVs: the same order of additions).
PC_DEVICE float dot32(const float v[32], const float* x) {
  const float4* xp = reinterpret_cast<const float4*>(x);
  float a = 0.0f;
#pragma unroll
  for (int k = 0; k < 8; k++) {
    const float4 xv = xp[k];
    a += v[4 * k] * xv.x + v[4 * k + 1] * xv.y + v[4 * k + 2] * xv.z + v[4 * k + 3] * xv.w;
  }
  return a;
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
  } else if constexpr (TYPE == kQ5_0 || TYPE == kQ5_1) {
    uint8_t b[16];
    bytesOf(load16(W.q + g * 16), b);
    const uint32_t h = load4(W.qh + g * 4);
    if constexpr (TYPE == kQ5_0) {
      const float d = f16ToFloat(halfAt(W.s + g * 2));
#pragma unroll
      for (int i = 0; i < 16; i++) {
        v[i] = static_cast<float>(((b[i] & 0xF) | (static_cast<int>(h >> i & 1u) << 4)) - 16) * d;
        v[i + 16] = static_cast<float>(((b[i] >> 4) | (static_cast<int>(h >> (i + 16) & 1u) << 4)) - 16) * d;
      }
    } else {
      const float d = f16ToFloat(halfAt(W.s + g * 4)), m = f16ToFloat(halfAt(W.s + g * 4 + 2));
#pragma unroll
      for (int i = 0; i < 16; i++) {
        v[i] = static_cast<float>((b[i] & 0xF) | (static_cast<int>(h >> i & 1u) << 4)) * d + m;
        v[i + 16] = static_cast<float>((b[i] >> 4) | (static_cast<int>(h >> (i + 16) & 1u) << 4)) * d + m;
      }
    }
  } else if constexpr (TYPE == kIQ4_NL || TYPE == kIQ4_XS) {
    float d;
    if constexpr (TYPE == kIQ4_NL) {
      d = f16ToFloat(halfAt(W.s + g * 2));
    } else {
      const uint8_t* hdr = W.s + (g >> 3) * 8;
      d = f16ToFloat(halfAt(hdr)) * static_cast<float>(iq4xsScale(static_cast<int>(g & 7), hdr) - 32);
    }
    uint8_t b[16];
    bytesOf(load16(W.q + g * 16), b);
#pragma unroll
    for (int i = 0; i < 16; i++) {
      v[i] = d * static_cast<float>(iq4Value(b[i] & 0xF));
      v[i + 16] = d * static_cast<float>(iq4Value(b[i] >> 4));
    }
  } else if constexpr (TYPE == kQ4_K || TYPE == kQ5_K) {
    const uint4 hdr = load16(W.s + (g >> 3) * 16);
    const float d = f16ToFloat(static_cast<uint16_t>(hdr.x & 0xffff)), dmin = f16ToFloat(static_cast<uint16_t>(hdr.x >> 16));
    int sc, m;
    q4kScaleMinOf(static_cast<int>(g & 7), hdr, &sc, &m);
    const float dj = d * static_cast<float>(sc), mj = dmin * static_cast<float>(m);
    uint8_t b[16];
    bytesOf(load16(W.q + g * 16), b);
    const uint32_t h = TYPE == kQ5_K ? load4(W.qh + g * 4) : 0u;
#pragma unroll
    for (int i = 0; i < 16; i++) {
      v[i] = dj * static_cast<float>((b[i] & 0xF) | (static_cast<int>(h >> i & 1u) << 4)) - mj;
      v[i + 16] = dj * static_cast<float>((b[i] >> 4) | (static_cast<int>(h >> (i + 16) & 1u) << 4)) - mj;
    }
  } else if constexpr (TYPE == kQ3_K || TYPE == kQ2_K) {
    const uint2 lo = *reinterpret_cast<const uint2*>(W.q + g * 8);
    float dl[2], ml[2] = {0.0f, 0.0f};
    if constexpr (TYPE == kQ3_K) {
      const float d = f16ToFloat(halfAt(W.sd + (g >> 3) * 2));
      dl[0] = d * static_cast<float>(static_cast<int8_t>(W.s[g * 2]));
      dl[1] = d * static_cast<float>(static_cast<int8_t>(W.s[g * 2 + 1]));
    } else {
      const float d = f16ToFloat(halfAt(W.sd + (g >> 3) * 4)), dmin = f16ToFloat(halfAt(W.sd + (g >> 3) * 4 + 2));
#pragma unroll
      for (int k = 0; k < 2; k++) {
        const int sm = W.s[g * 2 + k];
        dl[k] = d * static_cast<float>(sm & 0xF);
        ml[k] = dmin * static_cast<float>(sm >> 4);
      }
    }
    const uint32_t h = TYPE == kQ3_K ? load4(W.qh + g * 4) : 0u;
#pragma unroll
    for (int i = 0; i < 32; i++) {
      const int q = twoBits(lo, i);
      if constexpr (TYPE == kQ3_K) v[i] = dl[i >> 4] * static_cast<float>((q | (static_cast<int>(h >> i & 1u) << 2)) - 4);
      else v[i] = dl[i >> 4] * static_cast<float>(q) - ml[i >> 4];
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
