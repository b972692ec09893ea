// AVX-512 kernels of the batched LoRA passes (native/src/lora.cc), register-blocked over
// several rows of one adapter group and, for the shrink, several rank indices: each weight
// vector is loaded and converted once per block of rows instead of once per row, at twice
// the AVX2 width. Every output is computed with the same per-lane operations in the same
// order as the AVX2 code in lora.cc (a 16-lane accumulator holds the AVX2 code's two 8-lane
// ones side by side), so the results are bit-identical; lora.cc calls these only for the
// shapes where that holds (in a multiple of 8, w a multiple of 16) and only after the CPU
// check (cpuHasAvx512(), PRISM_ISA).
#pragma once
#include <cstdint>

namespace prism::kernels {

// h[p·ldh + j] = scale · dot(x[rows[p]·ldx ...], a[j·in ...]) for p in [0, n), j in [j0, j1).
// a: [rank × in], F16 or F32. in % 8 == 0.
void loraShrinkAvx512(const float* x, int64_t ldx, const int32_t* rows, int n, const uint16_t* a16, const float* a32,
                      int64_t in, int32_t j0, int32_t j1, float scale, float* h, int64_t ldh);

// y[rows[p]·ldy + c] += Σ_j h[p·ldh + j] · bt[j·w + c], j in [0, rank) in order, c in [0, w)
// for p in [0, n). bt: one [rank × w] tile, F16 or F32. w % 16 == 0, w <= 64.
void loraExpandAvx512(float* y, int64_t ldy, const int32_t* rows, int n, const float* h, int64_t ldh,
                      const uint16_t* bt16, const float* bt32, int64_t rank, int64_t w);

}  // namespace prism::kernels
