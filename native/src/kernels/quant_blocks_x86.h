// Per-type block decoders of the file's own blocks for the AVX2 int16-activation kernels
// (matmul_avx2.cc): each turns one 32-value block of a weight row into 32 bytes of integer
// weights plus the float scale(s) that go with it, so that one tiled kernel template serves
// every block type. (With int8 activations every quantized type is repacked into a group
// layout, and the 4-bit types into Layout::Q4X for int16: those have their own kernels.)
//
// Everything here lives in an anonymous namespace on purpose: kernel headers are compiled
// into both the AVX2 and the AVX-512 objects, and each must keep its own copy (see
// internal.h).
//
// Value of a weight element = scale * w (+ an offset per 16-value half where kOffsets:
// Q5_1's m, Q5_K's and Q2_K's −dmin·min; × an integer sub-scale per half where kIntScales:
// Q6_K's, Q3_K's and Q2_K's, halfScales). The weights fit int8 (Q8_0 ±127; Q6_K −32..31;
// Q5: 0..31 or −16..15; Q3_K −4..3; Q2_K 0..3; IQ4 −127..113) and are widened to int16 by
// the kernel.
#pragma once
#include <immintrin.h>

#include <cstring>

#include "kernels/internal.h"

namespace prism::kernels {
namespace {

// Q8_0: value = d * q, q signed.
struct DecQ8_0 {
  static constexpr bool kIntScales = false;
  static constexpr bool kOffsets = false;
  static __m256i weights(const uint8_t* row, int64_t b) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + b * kQ8_0Bytes + 2));
  }
  static float scale(const uint8_t* row, int64_t b) { return f16ToF32(loadU16(row + b * kQ8_0Bytes)); }
};

// Q6_K: 32-value block j of super-block sb covers two 16-value groups with int8 scales
// sc_a, sc_b: value = d * sc * (q - 32). The kernel scales the two halves' widened weights by
// (sc_a, sc_b) (kIntScales) and uses d as the float scale.
struct DecQ6_K {
  static constexpr bool kIntScales = true;
  static constexpr bool kOffsets = false;
  static __m256i weights(const uint8_t* row, int64_t b) {
    const uint8_t* sb = row + (b / 8) * kQ6_KBytes;
    int j = static_cast<int>(b % 8), h = j / 4, s = j % 4;
    __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 64 * h + 32 * (s & 1)));
    if (s >> 1) lo = _mm256_srli_epi16(lo, 4);
    lo = _mm256_and_si256(lo, _mm256_set1_epi8(0x0F));
    __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 128 + 32 * h));
    // Bits 2s..2s+1 of each byte moved to bits 4..5 (16-bit shifts, then masked per byte).
    int shift = 2 * s;
    hi = shift >= 4 ? _mm256_srli_epi16(hi, shift - 4) : _mm256_slli_epi16(hi, 4 - shift);
    hi = _mm256_and_si256(hi, _mm256_set1_epi8(0x30));
    return _mm256_sub_epi8(_mm256_or_si256(lo, hi), _mm256_set1_epi8(32));
  }
  // The two 16-value halves' integer scales.
  static void halfScales(const uint8_t* row, int64_t b, int* first, int* second) {
    const int8_t* sc = reinterpret_cast<const int8_t*>(row + (b / 8) * kQ6_KBytes + 192);
    int j = static_cast<int>(b % 8);
    *first = sc[2 * j];
    *second = sc[2 * j + 1];
  }
  static float scale(const uint8_t* row, int64_t b) {
    return f16ToF32(loadU16(row + (b / 8) * kQ6_KBytes + 208));
  }
};


// Byte i = 0xFF where bit i of `bits` is set, else 0.
static inline __m256i expandBits(uint32_t bits) {
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                             _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  const __m256i masks = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ULL));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, masks), masks);
}

// 16 bytes of nibbles → 32 values: low nibbles (values 0..15), then high (16..31).
static inline __m256i nibbles32(const uint8_t* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i low = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), low), _mm_and_si128(v, low));
}

// Q5_0 (kMin = false): value = d·(q − 16); Q5_1: d·q + m.
template <bool kMin>
struct DecQ5 {
  static constexpr bool kIntScales = false;
  static constexpr bool kOffsets = kMin;
  static constexpr size_t kBytes = kMin ? kQ5_1Bytes : kQ5_0Bytes;
  static __m256i weights(const uint8_t* row, int64_t b) {
    const uint8_t* p = row + b * kBytes + (kMin ? 4 : 2);
    uint32_t qh;
    std::memcpy(&qh, p, 4);
    const __m256i q = _mm256_or_si256(nibbles32(p + 4), _mm256_and_si256(expandBits(qh), _mm256_set1_epi8(0x10)));
    return kMin ? q : _mm256_sub_epi8(q, _mm256_set1_epi8(16));
  }
  static float scale(const uint8_t* row, int64_t b) { return f16ToF32(loadU16(row + b * kBytes)); }
  static void offsets(const uint8_t* row, int64_t b, float* first, float* second) {
    *first = *second = f16ToF32(loadU16(row + b * kBytes + 2));
  }
};

// Q5_K: value = d·sc·q − dmin·mn per 32-value block.
struct DecQ5_K {
  static constexpr bool kIntScales = false;
  static constexpr bool kOffsets = true;
  static __m256i weights(const uint8_t* row, int64_t b) {
    const uint8_t* sb = row + (b / 8) * kQ5_KBytes;
    const int j = static_cast<int>(b % 8);
    const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 48 + 32 * (j / 2)));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 16));
    const __m256i lo = _mm256_and_si256(_mm256_srl_epi16(ql, _mm_cvtsi32_si128(4 * (j & 1))), _mm256_set1_epi8(0x0F));
    const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(j)), _mm256_set1_epi8(1));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
  }
  static float scale(const uint8_t* row, int64_t b) {
    const uint8_t* sb = row + (b / 8) * kQ5_KBytes;
    uint8_t sc, mn;
    q4kScaleMin(static_cast<int>(b % 8), sb + 4, &sc, &mn);
    return f16ToF32(loadU16(sb)) * sc;
  }
  static void offsets(const uint8_t* row, int64_t b, float* first, float* second) {
    const uint8_t* sb = row + (b / 8) * kQ5_KBytes;
    uint8_t sc, mn;
    q4kScaleMin(static_cast<int>(b % 8), sb + 4, &sc, &mn);
    *first = *second = -(f16ToF32(loadU16(sb + 2)) * mn);
  }
};

// Bits 2j..2j+1 of 32 bytes: Q3_K's and Q2_K's low bits of the 32 values of block b
// (half n = b8 / 4 of the super-block, shift j = b8 % 4).
static inline __m256i lowPairs(const uint8_t* qs, int b8) {
  const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (b8 / 4)));
  return _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * (b8 % 4))), _mm256_set1_epi8(3));
}

// Q3_K: value = d·(sc − 32)·(q − 4), integer scales per 16 values.
struct DecQ3_K {
  static constexpr bool kIntScales = true;
  static constexpr bool kOffsets = false;
  static __m256i weights(const uint8_t* row, int64_t b) {
    const uint8_t* sb = row + (b / 8) * kQ3_KBytes;
    const int b8 = static_cast<int>(b % 8);
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb));
    const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(hm, _mm_cvtsi32_si128(4 * (b8 / 4) + b8 % 4)), _mm256_set1_epi8(1));
    return _mm256_sub_epi8(_mm256_or_si256(lowPairs(sb + 32, b8), _mm256_slli_epi16(hi, 2)), _mm256_set1_epi8(4));
  }
  static void halfScales(const uint8_t* row, int64_t b, int* first, int* second) {
    const uint8_t* sb = row + (b / 8) * kQ3_KBytes;
    const int b8 = static_cast<int>(b % 8);
    *first = q3kScale(2 * b8, sb + 96) - 32;
    *second = q3kScale(2 * b8 + 1, sb + 96) - 32;
  }
  static float scale(const uint8_t* row, int64_t b) { return f16ToF32(loadU16(row + (b / 8) * kQ3_KBytes + 108)); }
};

// Q2_K: value = d·sc·q − dmin·mn per 16 values.
struct DecQ2_K {
  static constexpr bool kIntScales = true;
  static constexpr bool kOffsets = true;
  static __m256i weights(const uint8_t* row, int64_t b) {
    return lowPairs(row + (b / 8) * kQ2_KBytes + 16, static_cast<int>(b % 8));
  }
  static void halfScales(const uint8_t* row, int64_t b, int* first, int* second) {
    const uint8_t* sb = row + (b / 8) * kQ2_KBytes;
    const int b8 = static_cast<int>(b % 8);
    *first = sb[2 * b8] & 0xF;
    *second = sb[2 * b8 + 1] & 0xF;
  }
  static float scale(const uint8_t* row, int64_t b) { return f16ToF32(loadU16(row + (b / 8) * kQ2_KBytes + 80)); }
  static void offsets(const uint8_t* row, int64_t b, float* first, float* second) {
    const uint8_t* sb = row + (b / 8) * kQ2_KBytes;
    const int b8 = static_cast<int>(b % 8);
    const float dmin = f16ToF32(loadU16(sb + 82));
    *first = -(dmin * static_cast<float>(sb[2 * b8] >> 4));
    *second = -(dmin * static_cast<float>(sb[2 * b8 + 1] >> 4));
  }
};

// IQ4_NL (kXs = false): value = d·kIQ4Values[q]; IQ4_XS: d·(ls − 32)·kIQ4Values[q].
template <bool kXs>
struct DecIQ4 {
  static constexpr bool kIntScales = false;
  static constexpr bool kOffsets = false;
  static __m256i weights(const uint8_t* row, int64_t b) {
    const uint8_t* qs = kXs ? row + (b / 8) * kIQ4_XSBytes + 8 + 16 * (b % 8) : row + b * kIQ4_NLBytes + 2;
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values)));
    return _mm256_shuffle_epi8(table, nibbles32(qs));
  }
  static float scale(const uint8_t* row, int64_t b) {
    if constexpr (kXs) {
      const uint8_t* sb = row + (b / 8) * kIQ4_XSBytes;
      return f16ToF32(loadU16(sb)) * static_cast<float>(iq4xsScale(static_cast<int>(b % 8), sb) - 32);
    } else {
      return f16ToF32(loadU16(row + b * kIQ4_NLBytes));
    }
  }
};

}  // namespace
}  // namespace prism::kernels
