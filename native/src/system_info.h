// Machine facts for the roofline: CPU features the compiler's builtin does not name, and
// a multi-threaded streaming-read bandwidth measurement.
#pragma once
#include <cstdint>

namespace prism {

bool cpuHasF16c();
// Reads a `bytes` buffer `passes` times with every core; returns the fastest pass's GB/s
// (1e9 bytes/s). Callers pass a buffer several times the last-level cache.
double measureBandwidth(int64_t bytes, int64_t passes);

}  // namespace prism
