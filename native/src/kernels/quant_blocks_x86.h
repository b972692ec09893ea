// Per-type block decoders shared by the AVX2 and AVX-512 quantized kernels: each turns one
// 32-value block of a weight row into 32 bytes of integer weights plus the float scale(s)
// that go with it, so that one tiled kernel template serves every block type.
//
// Everything here lives in an anonymous namespace on purpose: this header is compiled into
// both the AVX2 and the AVX-512 objects, and each must keep its own copy (see internal.h).
//
// Dot product convention: activations are int8 (x, signed); weights are either unsigned
// (0..15 nibbles — used as the unsigned operand of maddubs / dpbusd directly) or signed
// (Q8_0, Q6_K − 32), in which case the kernels use |w| as the unsigned operand and move the
// sign onto x. Value of a weight element = scale * w (+ per-block offset `minTerm`).
#pragma once
#include <immintrin.h>

#include "kernels/internal.h"

namespace prism::kernels {
namespace {

// Q4_0: value = d * (q - 8); unsigned nibbles, offset -8d per block.
struct DecQ4_0 {
  static constexpr bool kSigned = false;
  static constexpr bool kHasMin = true;
  static constexpr bool kIntScales = false;
  static __m256i weights(const uint8_t* row, int64_t b) {
    __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + b * kQ4_0Bytes + 2));
    __m256i both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
  }
  static float scale(const uint8_t* row, int64_t b) { return f16ToF32(loadU16(row + b * kQ4_0Bytes)); }
  static float minTerm(const uint8_t* row, int64_t b) { return -8.0f * scale(row, b); }
};

// Q4_1: value = d * q + m.
struct DecQ4_1 {
  static constexpr bool kSigned = false;
  static constexpr bool kHasMin = true;
  static constexpr bool kIntScales = false;
  static __m256i weights(const uint8_t* row, int64_t b) {
    __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + b * kQ4_1Bytes + 4));
    __m256i both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
  }
  static float scale(const uint8_t* row, int64_t b) { return f16ToF32(loadU16(row + b * kQ4_1Bytes)); }
  static float minTerm(const uint8_t* row, int64_t b) { return f16ToF32(loadU16(row + b * kQ4_1Bytes + 2)); }
};

// Q8_0: value = d * q, q signed.
struct DecQ8_0 {
  static constexpr bool kSigned = true;
  static constexpr bool kHasMin = false;
  static constexpr bool kIntScales = false;
  static __m256i weights(const uint8_t* row, int64_t b) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + b * kQ8_0Bytes + 2));
  }
  static float scale(const uint8_t* row, int64_t b) { return f16ToF32(loadU16(row + b * kQ8_0Bytes)); }
  static float minTerm(const uint8_t*, int64_t) { return 0; }
};

// Q4_K: sub-block j of super-block sb: value = d*sc_j * q - dmin*m_j.
struct DecQ4_K {
  static constexpr bool kSigned = false;
  static constexpr bool kHasMin = true;
  static constexpr bool kIntScales = false;
  static __m256i weights(const uint8_t* row, int64_t b) {
    const uint8_t* sb = row + (b / 8) * kQ4_KBytes;
    int j = static_cast<int>(b % 8);
    __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 16 + 32 * (j / 2)));
    if (j & 1) q = _mm256_srli_epi16(q, 4);
    return _mm256_and_si256(q, _mm256_set1_epi8(0x0F));
  }
  static float scale(const uint8_t* row, int64_t b) {
    const uint8_t* sb = row + (b / 8) * kQ4_KBytes;
    uint8_t sc, m;
    q4kScaleMin(static_cast<int>(b % 8), sb + 4, &sc, &m);
    return f16ToF32(loadU16(sb)) * sc;
  }
  static float minTerm(const uint8_t* row, int64_t b) {
    const uint8_t* sb = row + (b / 8) * kQ4_KBytes;
    uint8_t sc, m;
    q4kScaleMin(static_cast<int>(b % 8), sb + 4, &sc, &m);
    return -f16ToF32(loadU16(sb + 2)) * m;
  }
};

// Q6_K: 32-value block j of super-block sb covers two 16-value groups with int8 scales
// sc_a, sc_b: value = d * sc * (q - 32). The kernels weight the two halves of the integer dot
// by (sc_a, sc_b) with madd (kIntScales) and use d as the float scale.
struct DecQ6_K {
  static constexpr bool kSigned = true;
  static constexpr bool kHasMin = false;
  static constexpr bool kIntScales = true;
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
  // Int16 multipliers for the 16 pair-sums of a maddubs: low 128 bits → values 0..15 of the
  // block (scale 2j of the super-block), high → values 16..31 (scale 2j + 1).
  static __m256i intScales(const uint8_t* row, int64_t b) {
    const int8_t* sc = reinterpret_cast<const int8_t*>(row + (b / 8) * kQ6_KBytes + 192);
    int j = static_cast<int>(b % 8);
    return _mm256_set_m128i(_mm_set1_epi16(sc[2 * j + 1]), _mm_set1_epi16(sc[2 * j]));
  }
  static float scale(const uint8_t* row, int64_t b) {
    return f16ToF32(loadU16(row + (b / 8) * kQ6_KBytes + 208));
  }
  static float minTerm(const uint8_t*, int64_t) { return 0; }
};

}  // namespace
}  // namespace prism::kernels
