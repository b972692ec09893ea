// How a single-token decode matmul shares its rows among the pool's threads: each thread
// streams its even share of the row tiles front to back, and a thread that runs out takes
// tiles from the back of the share with the most left. One decode step is ~150-250 matmuls
// of a few milliseconds each, each ending in a join; with a fixed even split a join waits for
// the slower thread, and on a shared or virtual host one vCPU is often slower for a while
// (descheduled, or its memory requests queued behind a neighbour's): a pass over the 3B Q4_0
// layers at load 12 had one thread busy 18 ms of the qkv matmuls' 141, the other 76
// (bench/kernels/step_profile.cc). ggml shares its matmuls the same way in spirit (chunks
// claimed from one counter); here the owner's stream stays one forward run through its share
// (the tile prefetch of q4g.h and the idle prefetcher, weight_prefetch.h, aim at the share's
// start), and only the stolen tail is read in pieces. Which thread computes a row changes no
// bit of it: every row is one tile's sum.
//
// In an anonymous namespace, as every kernel header: each object built with its own flags
// keeps its own copy (internal.h).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "thread_pool.h"

namespace prism::kernels {
namespace {

// Row tiles a thread claims at a time from its own front, and steals at a time from another's
// back: big enough that a claim (one compare-and-swap on an uncontended line) is noise against
// the tiles' DRAM reads (8-row tiles of 1-8 KiB rows), small enough that a join waits at most
// a few microseconds for the last claim of the slower thread.
constexpr int64_t kStealTiles = 4;
// Threads the split keeps shares for on the stack; a larger pool falls back to the even split.
constexpr int kStealMaxThreads = 64;

// One thread's share of the tiles, [front, back), packed in one word so that the owner's
// claims from the front and a thief's from the back never overlap.
struct alignas(64) TileShare {
  std::atomic<uint64_t> span{0};
  static uint64_t pack(uint32_t front, uint32_t back) { return (static_cast<uint64_t>(back) << 32) | front; }
  static uint32_t front(uint64_t s) { return static_cast<uint32_t>(s); }
  static uint32_t back(uint64_t s) { return static_cast<uint32_t>(s >> 32); }

  // Claims up to `n` tiles from the front (fromBack false) or the back; false when empty.
  bool claim(bool fromBack, uint32_t n, uint32_t* begin, uint32_t* end) {
    uint64_t s = span.load(std::memory_order_relaxed);
    for (;;) {
      const uint32_t f = front(s), b = back(s);
      if (f >= b) return false;
      const uint32_t take = std::min(n, b - f);
      const uint64_t next = fromBack ? pack(f, b - take) : pack(f + take, b);
      if (span.compare_exchange_weak(s, next, std::memory_order_relaxed)) {
        *begin = fromBack ? b - take : f;
        *end = fromBack ? b : f + take;
        return true;
      }
    }
  }
  uint32_t left() const {
    const uint64_t s = span.load(std::memory_order_relaxed);
    return front(s) < back(s) ? back(s) - front(s) : 0;
  }
};

// Runs range(rb, re) over rows [0, rows) in tiles of `rowTile` rows on every thread of the
// pool, as above. Thread i's share is the even split's tiles [tiles·i/n, tiles·(i+1)/n).
template <class Range>
void stealingRowSplit(ThreadPool& pool, int64_t rows, int64_t rowTile, const Range& range) {
  const int threads = pool.size();
  const int64_t tiles = (rows + rowTile - 1) / rowTile;
  auto rowsOf = [&](uint32_t b, uint32_t e) { range(b * rowTile, std::min(rows, static_cast<int64_t>(e) * rowTile)); };
  if (threads == 1 || threads > kStealMaxThreads || tiles > UINT32_MAX) {
    auto task = [&](int i, int n) {
      const int64_t b = tiles * i / n, e = tiles * (i + 1) / n;
      if (b < e) rowsOf(static_cast<uint32_t>(b), static_cast<uint32_t>(e));
    };
    pool.run(TaskRef(task));
    return;
  }
  TileShare shares[kStealMaxThreads];
  for (int i = 0; i < threads; ++i)
    shares[i].span.store(TileShare::pack(static_cast<uint32_t>(tiles * i / threads),
                                         static_cast<uint32_t>(tiles * (i + 1) / threads)),
                         std::memory_order_relaxed);
  // pool.run publishes the stores above to the workers (its generation counter is seq_cst).
  auto task = [&](int i, int n) {
    uint32_t b, e;
    while (shares[i].claim(false, kStealTiles, &b, &e)) rowsOf(b, e);
    for (;;) {
      int victim = -1;
      uint32_t most = 0;
      for (int j = 0; j < n; ++j)
        if (j != i && shares[j].left() > most) most = shares[j].left(), victim = j;
      if (victim < 0) return;
      if (shares[victim].claim(true, kStealTiles, &b, &e)) rowsOf(b, e);
    }
  };
  pool.run(TaskRef(task));
}

}  // namespace
}  // namespace prism::kernels
