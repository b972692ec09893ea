// AVX-512 float-weight kernels (built with AVX-512F/BW/VL/DQ/VNNI/BF16; dispatch.cc calls them
// only when CPUID reports all of those): F32 / F16 / BF16 rows read in place against f32
// activations, the AVX2 kernels' R × T tiling (matmul_avx2.cc) at twice the width. BF16
// weights are widened exactly to f32 (a 16-bit shift) for 16-wide FMAs, as on AVX2:
// _mm512_dpbf16_ps would round the activations to bf16, ~3e-3 relative logit error.
// (Quantized weights run the group-layout kernels, q4g_avx512.cc and planes_avx512.cc, and
// the exact-integer int16 layouts', int16_avx512.cc; the file's blocks with int16
// activations run the AVX2 kernels: every AVX-512 CPU has AVX2.)
#include "kernels/float_gemm.h"
#include "kernels/float_tiles.h"
#include "kernels/internal.h"
#include "kernels/isa_kernels.h"
#include "kernels/vec_avx512.h"

namespace prism::kernels {
namespace {

// ---- float weights ---------------------------------------------------------------------

// F32 / F16: 16 columns per step.
struct ConvF32 {
  static constexpr bool kInPlace = true;  // float_gemm.h reads the rows as they are
  static __m512 load(const uint8_t* row, int64_t k) { return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + k); }
  static float one(const uint8_t* row, int64_t k) { return reinterpret_cast<const float*>(row)[k]; }
};
struct ConvF16 {
  static constexpr bool kInPlace = false;
  static __m512 load(const uint8_t* row, int64_t k) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k)));
  }
  static float one(const uint8_t* row, int64_t k) { return f16ToF32(loadU16(row + 2 * k)); }
};

// BF16 weights widened exactly to f32 (a 16-bit shift) against f32 activations, as the AVX2
// kernel does: the same numbers on every x86 machine.
struct ConvBF16 {
  static constexpr bool kInPlace = false;
  static __m512 load(const uint8_t* row, int64_t k) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static float one(const uint8_t* row, int64_t k) { return bf16ToF32(loadU16(row + 2 * k)); }
};

// Float tiles: 4 rows × 4 tokens = 16 accumulators + 4 activation vectors + 1 weight, of
// the 32 registers.
constexpr int kFloatTokenTile = 4;

template <TensorType T>
constexpr auto floatConverter() {
  if constexpr (T == TensorType::F32) return ConvF32{};
  else if constexpr (T == TensorType::F16) return ConvF16{};
  else return ConvBF16{};
}

}  // namespace

template <TensorType T>
void IsaKernels<Isa::Avx512>::floats(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y,
                                     int64_t ldy, ThreadPool& pool, KernelScratch&) {
  floatMatmul<Avx512Vec, decltype(floatConverter<T>()), kFloatTokenTile>(W, x, n, ldx, y, ldy, pool);
}
template MatmulFn IsaKernels<Isa::Avx512>::floats<TensorType::F32>;
template MatmulFn IsaKernels<Isa::Avx512>::floats<TensorType::F16>;
template MatmulFn IsaKernels<Isa::Avx512>::floats<TensorType::BF16>;

// The GEMM of many-token passes (float_gemm.h): 6 rows × 64 tokens = 24 accumulators, 4
// activation vectors and the broadcast weight, of the 32 registers.
constexpr int kGemmRows = 6, kGemmVectors = 4;

template <TensorType T>
void IsaKernels<Isa::Avx512>::floatGemm(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y,
                                        int64_t ldy, ThreadPool& pool, KernelScratch& scratch) {
  FloatGemm<Avx512Vec, decltype(floatConverter<T>()), kGemmRows, kGemmVectors>::run(W, x, n, ldx, y, ldy, pool, scratch);
}
template MatmulFn IsaKernels<Isa::Avx512>::floatGemm<TensorType::F32>;
template MatmulFn IsaKernels<Isa::Avx512>::floatGemm<TensorType::F16>;
template MatmulFn IsaKernels<Isa::Avx512>::floatGemm<TensorType::BF16>;

size_t IsaKernels<Isa::Avx512>::floatGemmScratchBytes(int64_t n, int64_t cols, int threads) {
  return FloatGemm<Avx512Vec, ConvF32, kGemmRows, kGemmVectors>::scratchBytes(n, cols, threads);
}

}  // namespace prism::kernels
