// Prefill matmuls on Intel AMX int8 tiles (Sapphire Rapids and later), for quantized weights
// with int8 activations. One driver (matmul_amx.cc) serves every layout that can unpack a
// panel of 16 weight rows into unsigned 8-bit values per 32-value block plus that block's
// per-row scale (and offset): per thread, each panel is unpacked once into a tile-ready
// buffer and reused across every 16-token tile of the batch; each block is one TDPBUSD
// (16 rows × 16 tokens × 32 values) whose int32 sums AVX-512 scales into f32 accumulators.
// Decode (one token) and short batches keep the AVX-512 VNNI kernels: a tile pads the
// tokens to 16.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace prism::kernels {

// The CPU has AMX-TILE and AMX-INT8 (CPUID leaf 7), AVX-512 (the driver's scale code) and
// the kernel granted this process the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM,
// asked once). Never throws; false on any refusal, and the VNNI kernels run instead.
bool cpuHasAmxInt8();

// cpuHasAmxInt8() and not switched off with PRISM_AMX=0 (switches.h; the A/B switch of the
// benchmarks and tests). matmul() uses AMX only for batches of kAmxMinTokens tokens or more, and only
// when the AVX-512 family is selected (PRISM_ISA=avx2 / reference never reach it).
bool amxEnabled();

// Smallest batch that takes the tiles: below it the padding of a 16-token tile costs more
// than the tiles win.
constexpr int64_t kAmxMinTokens = 16;

// The driver itself is AmxKernels::int8<L> (isa_kernels.h), for the layouts whose row of the
// traits table (layout_traits.cc) names it: y[t * ldy + r] = Σ_k W[r][k] · x[t * ldx + k] on
// the tiles, for weights with int8 activations whose repacked bytes W owns. Call only when
// cpuHasAmxInt8(). Runs on all threads of `pool`; its scratch (amxScratchBytes) comes from
// `scratch`.

// Scratch bytes the driver needs for n tokens of `cols` values on `threads` threads.
size_t amxScratchBytes(int64_t n, int64_t cols, int threads);

}  // namespace prism::kernels
