// Test visibility of the Layout::Q4XV AMX-INT8 kernel (q4xv_amx.cc; its entry points are
// declared with the layout in kernels/q4xv.h).
#pragma once
#include <atomic>
#include <cstdint>

namespace prism::kernels {

// Calls of q4xvMatmulAmx in this process (each adds 1), so a test can tell that a step ran on
// the tiles: the tiles and the VNNI kernels give the same bits by design, so outputs cannot.
// Defined in q4xv_amx_support.cc (baseline flags: readable on any CPU).
extern std::atomic<uint64_t> q4xvAmxCallCount;

inline uint64_t q4xvAmxCalls() { return q4xvAmxCallCount.load(std::memory_order_relaxed); }

}  // namespace prism::kernels
