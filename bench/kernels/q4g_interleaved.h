// An experiment for issue 27, not an engine layout: Q4_0 decode with the rows of each 8-row
// decode tile stored interleaved, so that a thread streams its share of a matrix as one
// forward sequence instead of 8 streams a row apart.
//
// The engine's Layout::Q4G0 (native/src/kernels/internal.h) stores rows one after another,
// each row's nibble groups then its f16 scales at the row's end; an 8-row decode tile
// (q4g_avx512.cc) reads group g of 8 rows that lie a row (1,152 bytes per 2,048 columns)
// apart. llama.cpp's repacked Q4_0 stores a tile's rows side by side and read 95-102% of
// the same seconds' read-loop rate where Prism read 70-82% (docs/benchmarks.md, issue 27).
// This layout keeps every byte of Layout::Q4G0 and reorders them per tile of 8 rows: for
// each group g, the 256 nibble bytes of rows 0..7, then their 16 f16 scales each (2,304
// bytes, 36 cache lines). The tile kernel is the engine's AVX-512 Q4G0 tile with only the
// addressing changed, driven by the engine's own q4gMatmul (activation quantizer, row split,
// decode tuning, prefetch), so its results are bit-identical to the engine's and any
// difference in speed is the layout's. bench/kernels/decode_bench.cc compares the two.
// Measured (docs/benchmarks.md, issue 27): 11-15% faster at 1B only while the decode tiles
// issue no software prefetch; with a T0/T1 prefetch a tile ahead both layouts read as fast
// as the read loop.
#pragma once
#include <cstdint>

#include "kernels/kernels.h"
#include "thread_pool.h"

namespace prism {

// Whether `W` is a Layout::Q4G0 weight whose rows fill whole 8-row tiles (the only case the
// experiment handles; the engine would pad or keep a row-major tail).
bool tileInterleavable(const LinearWeight& W);

// The same weight with its bytes reordered into the tile-interleaved layout above.
LinearWeight tileInterleaved(const LinearWeight& W);

// matmul() for a weight from tileInterleaved() (AVX-512 VNNI hosts only).
void tileInterleavedMatmul(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                           ThreadPool& pool, KernelScratch& scratch);

}  // namespace prism
