// Streams the weights a pool thread reads next into its L2 while the thread waits.
//
// Single-stream decode reads every weight byte once and is bound by memory bandwidth, but a
// step is not one stream: between the matmuls come joins (one thread waits for the other to
// finish its rows), serial vector work on the owner thread (norms, RoPE, SwiGLU, activation
// quantization) and the hand-off to JS between steps, and in all of those a core's share of
// the bandwidth goes unused. Context names the matrix that comes next; when a thread
// finishes its share of a matmul it aims at its own slice of that next matrix (matmuls
// split rows evenly across threads, kernels/q4g.h), and whenever it waits, it prefetches
// the start of that slice a few KiB at a time, up to kMaxBytes (a part of its 1 MiB L2).
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "kernels/kernels.h"
#include "thread_pool.h"

namespace prism {

class WeightPrefetcher final : public IdleWork {
 public:
  // How much of its next slice a thread may pull in ahead: at ~25 GB/s per core this is
  // ~15 µs of streaming, more than a join or the owner's serial work lasts, and it leaves
  // most of the L2 to the KV cache and activations.
  static constexpr size_t kMaxBytes = 384 * 1024;
  // Prefetched per step(): 64 cache lines, a fraction of a microsecond at one core's rate.
  static constexpr size_t kPieceBytes = 4096;

  explicit WeightPrefetcher(int threads) : slots_(static_cast<size_t>(threads)) {}

  // The matrix the next matmul after the running one reads (nullptr: none, e.g. prefill,
  // whose tiles keep their own working set in L2). Set by the owner thread between regions.
  void setNext(const LinearWeight* next) { next_.store(next, std::memory_order_relaxed); }
  // Off: waiting threads prefetch nothing (the context's DecodeTuning::idlePrefetch, chosen
  // per host: where the hardware prefetchers already keep the memory busy, the extra L2
  // fills can cost more than the joins they fill). Set by the owner thread between steps.
  void setEnabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }

  void regionDone(int thread) override {
    const LinearWeight* w = enabled_.load(std::memory_order_relaxed) ? next_.load(std::memory_order_relaxed) : nullptr;
    if (w == nullptr || w->rows == 0) return;
    Slot& s = slots_[static_cast<size_t>(thread)];
    const int n = static_cast<int>(slots_.size());
    // The thread's rows of w (the even row split of the matmuls; a row or two off at the
    // edges where a kernel rounds to its tile height only costs a few wasted lines).
    const size_t rowBytes = w->bytes / static_cast<size_t>(w->rows);
    const int64_t r0 = w->rows * thread / n, r1 = w->rows * (thread + 1) / n;
    s.cursor = reinterpret_cast<uintptr_t>(weightData(*w)) + rowBytes * static_cast<size_t>(r0);
    s.end = s.cursor + std::min(kMaxBytes, rowBytes * static_cast<size_t>(r1 - r0));
  }

  bool step(int thread) override {
    Slot& s = slots_[static_cast<size_t>(thread)];
    if (s.cursor >= s.end) return false;
    const uintptr_t stop = std::min(s.end, s.cursor + kPieceBytes);
    for (; s.cursor < stop; s.cursor += 64) _mm_prefetch(reinterpret_cast<const char*>(s.cursor), _MM_HINT_T1);
    return true;
  }

 private:
  // Each slot is written and read only by its own thread (regionDone and step both run on
  // it), so plain fields; a cache line each, so the threads do not share one. Addresses as
  // integers: prefetches never fault, and the region is only ever prefetched, not read.
  struct alignas(64) Slot {
    uintptr_t cursor = 0, end = 0;
  };
  std::vector<Slot> slots_;
  std::atomic<const LinearWeight*> next_{nullptr};
  std::atomic<bool> enabled_{true};
};

}  // namespace prism
