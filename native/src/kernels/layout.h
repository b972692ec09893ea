// The byte arrangements a weight can have for the CPU kernels (LinearWeight::layout): the
// file's own blocks, or one of the layouts prepareLinear repacks a tensor into. Each has one
// row in the traits table (layout_traits.h: name, block and row-group shape, row stride rule,
// reference dequantizer and the kernels per ISA family, as ggml's type_traits has per type);
// the formats themselves are described beside their helpers (the header named per line).
// The numbers stay as they are: the decode-tuning cache's keys print them
// (decode_tuning/choose.cc).
#pragma once
#include <cstdint>

namespace prism::kernels {

enum class Layout : uint8_t {
  Gguf = 0,   // the file's blocks read in place; the kernels are the tensor type's
  Q4X = 1,    // Q4_0 / Q4_1 / Q4_K, int16 activations below AVX-512: two blocks per 32 bytes (internal.h)
  Q4G16 = 2,  // Q4_1 / Q4_K, int8 activations: 16-block groups, f16 scales and offsets (internal.h)
  Q4G32 = 3,  // the same with f32 scales, where f16 would not hold them exactly (internal.h)
  Q6G = 4,    // Q6_K, int8 activations, in the group order (internal.h)
  Q8G = 5,    // Q8_0, int8 activations, in the group order (internal.h)
  Q4GK = 6,   // Q4_K, int8 activations, in the group order with Q4_K's scale encoding (internal.h)
  Q4G0 = 7,   // Q4_0, int8 activations: Q4G16 without the offsets (internal.h)
  Q5G0 = 8,   // the bit-plane layouts of int8 activations (planes.h): Q5_0,
  Q5G1 = 9,   //   Q5_1,
  Q5GK = 10,  //   Q5_K,
  IQ4G = 11,  //   IQ4_NL,
  IQ4GX = 12, //   IQ4_XS,
  Q3G = 13,   //   Q3_K,
  Q2G = 14,   //   Q2_K
  Q4XV = 15,  // Q4_0 / Q4_1 / Q4_K, int16 activations on AVX-512: exact-integer 16-row records (q4xv.h)
  Q8XV = 16,  // Q8_0, int16 activations on AVX-512: exact-integer 16-row records (q8xv.h)
};
constexpr int kLayoutCount = 17;

}  // namespace prism::kernels
