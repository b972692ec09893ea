// The walk over 16-row groups × tokens shared by the AVX-512 VNNI kernels of Layout::Q4XV
// (q4xv_avx512.cc) and Layout::Q8XV (q8xv_avx512.cc): which tile runs which groups and tokens,
// and how threads split the work. Only the order of whole tiles is decided here; each tile
// computes its outputs with the same per-lane sequence whatever tile it is, so moving the
// walk changes no bit.
//
// One token (decode): tiles of kDecodeGroups groups, the rest in one-group tiles, with the
// decode prefetch. Several tokens: per group, near-equal chunks of at most kChunkTokens
// tokens (13 = 7 + 6), the prefetch in the first chunk only (the later chunks find the
// group's records in L1), and only up to kPrefetchTokens tokens. Threads split the groups
// (whole decode tiles for one token; a LoRA prefetch in KernelScratch in slices, one tile's
// share at a time), or the tokens when there are too few groups.
//
// `Tiles` is a kernel's tile family: a type with `using Input = …;` (its activations) and
// `template <int G, int T> static void tile(weights, rows, blocks, const Input&, g0, t0,
// y, ldy, const DecodeAhead&)` computing G consecutive groups from g0 × T consecutive tokens
// from t0 over every block. Each kernel's family lives in its file's anonymous namespace, so
// every instantiation here is local to that file.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "kernels/kernels.h"
#include "kernels/prefetch_lines.h"
#include "thread_pool.h"

namespace prism::kernels::int16_xv {

constexpr int kDecodeGroups = 2;
constexpr int kChunkTokens = 8;
constexpr int64_t kPrefetchTokens = 16;

template <class Tiles>
using TileFn = void (*)(const uint8_t*, int64_t, int64_t, const typename Tiles::Input&, int64_t, int64_t,
                        float*, int64_t, const DecodeAhead&);

// The one-group tiles of 1 .. sizeof...(I) tokens, indexed by tokens − 1.
template <class Tiles, int... I>
constexpr std::array<TileFn<Tiles>, sizeof...(I)> tokenTiles(std::integer_sequence<int, I...>) {
  return {&Tiles::template tile<1, I + 1>...};
}

// Groups [gb, ge) × tokens [tb, te).
template <class Tiles>
void walk(const uint8_t* weights, int64_t rows, int64_t blocks, const typename Tiles::Input& xa, int64_t gb,
          int64_t ge, int64_t tb, int64_t te, float* y, int64_t ldy, const DecodeAhead& pf) {
  if (te - tb == 1) {
    int64_t g = gb;
    for (; g + kDecodeGroups <= ge; g += kDecodeGroups)
      Tiles::template tile<kDecodeGroups, 1>(weights, rows, blocks, xa, g, tb, y, ldy, pf);
    for (; g < ge; ++g) Tiles::template tile<1, 1>(weights, rows, blocks, xa, g, tb, y, ldy, pf);
    return;
  }
  static constexpr auto tiles = tokenTiles<Tiles>(std::make_integer_sequence<int, kChunkTokens>());
  const int64_t chunks = (te - tb + kChunkTokens - 1) / kChunkTokens;
  for (int64_t g = gb; g < ge; ++g) {
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t c0 = tb + (te - tb) * c / chunks, c1 = tb + (te - tb) * (c + 1) / chunks;
      tiles[c1 - c0 - 1](weights, rows, blocks, xa, g, c0, y, ldy, c == 0 ? pf : DecodeAhead{});
    }
  }
}

// All `groups` groups × n tokens of prepared activations, split over the pool.
template <class Tiles>
void run(const uint8_t* weights, int64_t rows, int64_t blocks, int64_t groups, const typename Tiles::Input& xa,
         int64_t n, float* y, int64_t ldy, ThreadPool& pool, KernelScratch& scratch) {
  const int threads = pool.size();
  DecodeAhead ahead;
  if (n <= kPrefetchTokens) ahead = DecodeAhead{scratch.decodeTuning().hint, scratch.decodeTuning().aheadHalves, 0};
  if (n == 1 || groups >= 2 * threads || n < 2 * threads) {
    const int64_t unit = n == 1 ? kDecodeGroups : 1, tiles = (groups + unit - 1) / unit;
    auto task = [&](int i, int nt) {
      const int64_t gb = tiles * i / nt * unit, ge = std::min(groups, tiles * (i + 1) / nt * unit);
      if (!scratch.hasPrefetch()) {
        if (gb < ge) walk<Tiles>(weights, rows, blocks, xa, gb, ge, 0, n, y, ldy, ahead);
        return;
      }
      const int64_t pieces = tiles / nt + 1;
      for (int64_t k = 0; k < pieces; k++) {
        scratch.prefetchSlice(i * pieces + k, nt * pieces);
        const int64_t a = gb + k * unit, e = std::min(ge, a + unit);
        if (a < e) walk<Tiles>(weights, rows, blocks, xa, a, e, 0, n, y, ldy, ahead);
      }
    };
    pool.run(TaskRef(task));
  } else {
    pool.parallelFor(n, [&](int64_t t0, int64_t t1) {
      walk<Tiles>(weights, rows, blocks, xa, 0, groups, t0, t1, y, ldy, ahead);
    });
  }
}

}  // namespace prism::kernels::int16_xv
