// Test visibility of the kLayoutQ4XV AMX-INT8 kernel (q4xv_amx.cc; its entry points are
// declared with the layout in kernels/q4xv.h).
#pragma once
#include <atomic>
#include <cstdint>

#include "kernels/kernels.h"

namespace prism::kernels {

// Calls of q4xvMatmulAmx in this process (each adds 1), so a test can tell that a step ran on
// the tiles: the tiles and the VNNI kernels give the same bits by design, so outputs cannot.
// Defined in q4xv_amx_support.cc (baseline flags: readable on any CPU).
extern std::atomic<uint64_t> q4xvAmxCallCount;

inline uint64_t q4xvAmxCalls() { return q4xvAmxCallCount.load(std::memory_order_relaxed); }

// y[n × rows] = x[n × cols] · Wᵀ for a GGUF Q4_0 / Q4_1 / Q4_K weight [rows × cols]: repacked
// into kLayoutQ4XV, x quantized by the scalar int16 quantizer (q4xvQuantizeScalar, the AVX-512
// one's bits), then q4xvMatmulAmx whatever n (the layout's driver hands the tiles only steps
// of kQ4XVAmxMinTokens or more). Throws without AMX-INT8 or for another type.
void q4xvAmxMatmulForTest(TensorType type, const uint8_t* weights, int64_t rows, int64_t cols, const float* x,
                          int64_t n, float* y);

}  // namespace prism::kernels
