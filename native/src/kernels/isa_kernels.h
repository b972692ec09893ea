// The matmul kernels each instruction-set family's objects define, one declaration per kernel
// family, so the traits table (layout_traits.cc, baseline flags) can name them without seeing
// any of their instructions. Each member is defined in the file named beside it, built with
// its family's flags (binding.gyp: *_avx512.cc apart), and explicitly instantiated there for
// the layouts or types it serves; dispatch.cc calls one only after the CPU check.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"
#include "kernels/layout.h"

namespace prism::kernels {

// The instruction-set families, lowest first (dispatch.cc picks one per process).
enum class Isa : uint8_t { Reference = 0, Avx2 = 1, Avx512 = 2 };

// One matmul kernel: kernels.h's matmul() contract (y[t·ldy + r] = Σ_k W[r][k]·x[t·ldx + k]
// for t < n, r < W.rows, on all threads of `pool`, scratch from `scratch`) for the weights its
// table row says it serves. Declared through this function type: `static MatmulFn name;`.
using MatmulFn = void(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                      ThreadPool& pool, KernelScratch& scratch);
using MatmulKernel = MatmulFn*;

template <Isa I>
struct IsaKernels;

// AVX2 + FMA + F16C (the baseline build).
template <>
struct IsaKernels<Isa::Avx2> {
  // Int8 activations: the group layouts (internal.h; q4g_avx2.cc) and the bit planes
  // (planes.h; planes_avx2.cc).
  template <Layout L>
  static MatmulFn groups;
  template <Layout L>
  static MatmulFn planes;
  // F32 / F16 / BF16 rows read in place, f32 activations (matmul_avx2.cc).
  template <TensorType T>
  static MatmulFn floats;
  // The same weights in the GEMM of many-token passes (float_gemm.h; matmulManyTokens), and
  // the scratch it takes for n tokens of `cols`.
  template <TensorType T>
  static MatmulFn floatGemm;
  static size_t floatGemmScratchBytes(int64_t n, int64_t cols, int threads);
  // Int16 activations: the file's blocks of type T read in place, and Layout::Q4X
  // (matmul_avx2.cc).
  template <TensorType T>
  static MatmulFn blocks16;
  static MatmulFn q4x16;
};

// AVX-512 F/BW/VL/DQ/VNNI (+ BF16), the *_avx512.cc objects.
template <>
struct IsaKernels<Isa::Avx512> {
  template <Layout L>
  static MatmulFn groups;  // q4g_avx512.cc
  template <Layout L>
  static MatmulFn planes;  // planes_avx512.cc
  template <TensorType T>
  static MatmulFn floats;  // matmul_avx512.cc
  template <TensorType T>
  static MatmulFn floatGemm;  // matmul_avx512.cc, as the AVX2 family's
  static size_t floatGemmScratchBytes(int64_t n, int64_t cols, int threads);
  // Int16 activations: the exact-integer layouts (q4xv_avx512.cc, q8xv_avx512.cc), which
  // hand steps of 13+ tokens to their AMX-INT8 kernels themselves (q4xv.h, q8xv.h).
  static MatmulFn q4xv;
  static MatmulFn q8xv;
};

// The AMX-INT8 prefill driver (amx/amx.h), per layout it has a panel unpacker for
// (amx/matmul_amx.cc).
struct AmxKernels {
  template <Layout L>
  static MatmulFn int8;
};

}  // namespace prism::kernels
