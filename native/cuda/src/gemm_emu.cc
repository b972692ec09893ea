// Gemm in the PRISM_CUDA_EMU build: a plain kernel, one thread per output, bf16 operands
// widened to f32 and summed in f32 (what cuBLASLt computes, in another order).
#include "gemm.h"

namespace pc {
namespace {

__global__ void gemmKernel(const uint16_t* w, int64_t m, int64_t k, const uint16_t* x, int64_t n, float* y, int64_t ldy,
                           int accumulate) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m * n) return;
  const int64_t t = i / m, r = i % m;
  float acc = 0;
  for (int64_t c = 0; c < k; c++) acc += bf16ToFloat(w[r * k + c]) * bf16ToFloat(x[t * k + c]);
  float* out = y + t * ldy + r;
  *out = accumulate ? *out + acc : acc;
}

}  // namespace

struct Gemm::Impl {};

Gemm::Gemm(const Stream&) : impl_(std::make_unique<Impl>()) {}
Gemm::~Gemm() = default;

void Gemm::bf16(const uint16_t* w, int64_t m, int64_t k, const uint16_t* x, int64_t n, float* y, int64_t ldy,
                bool accumulate, const Stream& s) {
  launch("gemm (emulated)", gemmKernel, dim3(static_cast<unsigned>(ceilDiv64(m * n, 128))), dim3(128), 0, s, w, m, k, x,
         n, y, ldy, accumulate ? 1 : 0);
}

}  // namespace pc
