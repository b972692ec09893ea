// Machine facts for the roofline: CPU features the compiler's builtin does not name, and
// a multi-threaded streaming-read bandwidth measurement.
#pragma once
#include <cstdint>

namespace prism {

bool cpuHasF16c();
// Reads a `bytes` buffer `passes` times with every core; returns the fastest pass's GB/s
// (1e9 bytes/s). Callers pass a buffer several times the last-level cache.
double measureBandwidth(int64_t bytes, int64_t passes);
// The sustained read rate: the median GB/s of `passes` passes over a `bytes` buffer read by
// `threads` threads (a decode's own count), for setting a decode step against the memory's
// rate in the same seconds. The buffer is kept between calls (one page-touching pass per
// size, not per call) and freed by releaseReadBuffer().
double sustainedReadRate(int64_t bytes, int64_t passes, int threads);
void releaseReadBuffer();

}  // namespace prism
