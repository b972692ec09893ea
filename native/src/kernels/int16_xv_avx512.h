// The AVX-512 pieces that the VNNI tiles of Layout::Q4XV (q4xv_avx512.cc) and Layout::Q8XV
// (q8xv_avx512.cc) share, apart from their walk (int16_xv_walk.h, which names no instruction
// set). Include only from files built with the AVX-512 flags (binding.gyp's
// prism_kernels_avx512 target): the AVX2 baseline files must not see these instructions.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace prism::kernels {
namespace {

// GCC 12.2's AVX-512 intrinsics trip -W(maybe-)uninitialized inside its own headers (GCC bug
// 105593; see matmul_avx512.cc). The pragmas hold to the end of each file that includes this
// header, so they cover that file's tiles.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Bytes p[0..3] as one 32-bit value in every lane: the 4 activation bytes that one vpdpbusd
// multiplies with a quad of every row.
inline __m512i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

}  // namespace
}  // namespace prism::kernels
