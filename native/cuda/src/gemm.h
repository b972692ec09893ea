// The GEMM of prefill and large decode batches: y[n × ldy] (+)= x[n × k] · W[m × k]ᵀ with bf16
// operands and f32 accumulation and output. On the GPU it is cuBLASLt (gemm_cublaslt.cu);
// in the PRISM_CUDA_EMU build a plain kernel with the same rounding of the operands
// (gemm_emu.cc).
#pragma once
#include <cstdint>
#include <memory>

#include "runtime.h"

namespace pc {

class Gemm {
 public:
  explicit Gemm(const Stream& s);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
  // w: [m × k] bf16 row-major; x: [n × k] bf16 row-major; y: n rows of ldy floats (first m
  // used). `accumulate`: y += …, else y = ….
  void bf16(const uint16_t* w, int64_t m, int64_t k, const uint16_t* x, int64_t n, float* y, int64_t ldy,
            bool accumulate, const Stream& s);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pc
