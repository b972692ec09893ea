// Prefill matmuls of int16-precision weights on Intel AMX-BF16 tiles (TDPBF16PS): the models
// below hidden 1024 that run int16 activations for accuracy (chooseActivations, model.cc)
// get a tile path for batches of kAmxMinTokens tokens or more, next to the int8 one (amx.h).
//
// Each weight and each activation is split into two bf16 parts, v ≈ hi + lo with hi =
// bf16(v) and lo = bf16(v − hi) (16 significant bits together, |v − hi − lo| ≤ 2⁻¹⁶|v|), and
// a block of 32 values takes three tile products, W_hi·x_hi + W_lo·x_hi + W_hi·x_lo, that
// accumulate in f32 for the whole row (the dropped W_lo·x_lo is ≤ 2⁻¹⁶|w·x|). The weights
// are the dequantized values d·q + m (scales and Q4_1 / Q4_K offsets folded in), so the
// tiles need no per-block scaling at all. Why not the integer weights with per-block scales
// (two products a block, then AVX-512 scaling every 16 × 16 block result, as the int8 driver
// does): that costs a tile store and 32 FMAs per block and token tile, more than the third
// product; and not int8 activations (amx.h): they cost the default model its 100% top-1.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace prism::kernels {

// cpuHasAmxInt8() (the tile permission), CPUID's AMX-BF16 bit and AVX-512 BF16 (the splits).
bool cpuHasAmxBf16();
// PRISM_AMX_BF16=1 on a CPU that has it: only then do batches take this path (bf16_support.cc says why).
bool amxBf16Enabled();

// True for the int16-activation weights this driver reads: Layout::Q4XV (Q4_0 / Q4_1 / Q4_K,
// as the AVX-512 family prepares them), with whole blocks of 32 columns. Not Layout::Q8XV
// (kernels/q8xv.h, the AVX-512 family's int16 Q8_0, e.g. the default model's head): it stays
// on its own kernels.
bool amxBf16Handles(const LinearWeight& W);

// y[t * ldy + r] = Σ_k W[r][k] · x[t * ldx + k] on the tiles; call only when cpuHasAmxBf16()
// and amxBf16Handles(W). Runs on all threads of `pool`; scratch (amxBf16ScratchBytes) from
// `scratch`.
void matmulAmxBf16(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                   ThreadPool& pool, KernelScratch& scratch);

// Scratch bytes matmulAmxBf16 needs for n tokens of `cols` values on `threads` threads.
size_t amxBf16ScratchBytes(int64_t n, int64_t cols, int threads);

}  // namespace prism::kernels
