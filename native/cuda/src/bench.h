// Measurements of the card itself (k_bench.cu).
#pragma once
#include <cstddef>

namespace pc {

// GB/s of the best of `passes` reads of `bytes` of device memory.
double measureReadBandwidth(int device, size_t bytes, int passes);

}  // namespace pc
