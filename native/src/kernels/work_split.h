// How the tiled kernels share one matmul among the pool's threads (q4g.h's group and plane
// kernels, the AVX2 int16 kernels of matmul_avx2.cc and the float kernels of float_tiles.h,
// on both families). In an anonymous namespace, as every kernel header: each object built
// with its own flags keeps its own copy (internal.h).
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/kernels.h"
#include "thread_pool.h"

namespace prism::kernels {
namespace {

// range(rb, re, tb, te) computes rows [rb, re) × tokens [tb, te) on the calling thread. The
// rows are split evenly, in whole tiles of `rowTile` rows, when there are at least 4 tiles per
// thread or too few tokens to go round (fewer than 2 per thread: decode); else the tokens.
// With `prefetch` (the memory of a pass right after the matmul, KernelScratch::hasPrefetch)
// each thread takes its rows one tile at a time, each after its even slice of the prefetch,
// so the loads spread over the whole matmul instead of stalling it in one burst (the same
// per-row arithmetic: pieces start on tile boundaries).
template <class Range>
void splitRowsOrTokens(ThreadPool& pool, int64_t rows, int64_t rowTile, int64_t n, const KernelScratch* prefetch,
                       const Range& range) {
  const int threads = pool.size();
  const int64_t tiles = (rows + rowTile - 1) / rowTile;
  if (tiles >= 4 * threads || n < 2 * threads) {
    auto task = [&](int i, int nt) {
      const int64_t rb = tiles * i / nt * rowTile, re = std::min(rows, tiles * (i + 1) / nt * rowTile);
      if (prefetch == nullptr) {
        if (rb < re) range(rb, re, 0, n);
        return;
      }
      const int64_t pieces = tiles / nt + 1;
      for (int64_t k = 0; k < pieces; k++) {
        prefetch->prefetchSlice(i * pieces + k, nt * pieces);
        const int64_t a = rb + k * rowTile, b = std::min(re, a + rowTile);
        if (a < b) range(a, b, 0, n);
      }
    };
    pool.run(TaskRef(task));
  } else {
    pool.parallelFor(n, [&](int64_t t0, int64_t t1) { range(0, rows, t0, t1); });
  }
}

}  // namespace
}  // namespace prism::kernels
