// Per-type block decoders shared by the AVX2 and AVX-512 quantized kernels: each turns one
// 32-value block of a weight row into 32 bytes of integer weights plus the float scale(s)
// that go with it, so that one tiled kernel template serves every block type.
//
// Everything here lives in an anonymous namespace on purpose: this header is compiled into
// both the AVX2 and the AVX-512 objects, and each must keep its own copy (see internal.h).
//
// (The 4-bit types are repacked by prepareLinear and have their own kernels: kLayoutQ4X.)
//
// Dot product convention: activations are int8 (x, signed); weights are signed (Q8_0,
// Q6_K − 32), so the kernels use |w| as the unsigned operand of maddubs / dpbusd and move
// the sign onto x. Value of a weight element = scale * w.
#pragma once
#include <immintrin.h>

#include "kernels/internal.h"

namespace prism::kernels {
namespace {

// Q8_0: value = d * q, q signed.
struct DecQ8_0 {
  static constexpr bool kIntScales = false;
  static __m256i weights(const uint8_t* row, int64_t b) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + b * kQ8_0Bytes + 2));
  }
  static float scale(const uint8_t* row, int64_t b) { return f16ToF32(loadU16(row + b * kQ8_0Bytes)); }
};

// Q6_K: 32-value block j of super-block sb covers two 16-value groups with int8 scales
// sc_a, sc_b: value = d * sc * (q - 32). The kernels weight the two halves of the integer dot
// by (sc_a, sc_b) with madd (kIntScales) and use d as the float scale.
struct DecQ6_K {
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
  // The same two scales as plain integers (the int16-activation kernels).
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

}  // namespace
}  // namespace prism::kernels
