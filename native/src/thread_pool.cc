// Fork-join pool: one generation counter publishes each task; workers spin on it for a
// short while (a decode step runs ~250 regions back to back, so a hot worker answers in
// well under a microsecond), then sleep on it with std::atomic::wait (a futex on Linux).
// Completion is signalled the same way in the other direction through `pending`.
//
// Sleep/wake handshake (both directions): the sleeper increments a "sleepers" counter and
// re-checks the watched word inside atomic::wait; the waker changes the word, then reads
// the counter. With seq_cst on both sides one of them must see the other, so no wake-up is
// lost and a hot pool never pays for a notify system call.
#include "thread_pool.h"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PRISM_CPU_RELAX() _mm_pause()
#else
#define PRISM_CPU_RELAX() ((void)0)
#endif

namespace prism {

namespace {

// How long a worker (or the owner waiting for workers) spins before sleeping. Long enough
// to bridge the serial gaps between the parallel regions of one decode step, short enough
// not to burn a core for long when the engine is idle.
constexpr auto kSpinTime = std::chrono::microseconds(300);

// Spins until pred() holds or kSpinTime has passed; returns pred()'s last value.
template <typename Pred>
bool spinUntil(Pred pred) {
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      PRISM_CPU_RELAX();
    }
    if (std::chrono::steady_clock::now() - start > kSpinTime) return pred();
  }
}

}  // namespace

struct ThreadPool::State {
  alignas(64) std::atomic<uint32_t> generation{0};
  alignas(64) std::atomic<int> workerSleepers{0};
  alignas(64) std::atomic<int> pending{0};
  alignas(64) std::atomic<int> ownerSleeping{0};
  TaskRef* task = nullptr;
  bool stop = false;
  std::vector<std::thread> workers;
};

ThreadPool::ThreadPool(int threads) : threads_(threads), state_(new State) {
  if (threads < 1) {
    delete state_;
    throw std::invalid_argument("ThreadPool: threads must be >= 1");
  }
  State* s = state_;
  for (int index = 1; index < threads; ++index) {
    s->workers.emplace_back([s, index, threads] {
      uint32_t seen = 0;
      for (;;) {
        auto changed = [&] { return s->generation.load(std::memory_order_acquire) != seen; };
        if (!spinUntil(changed)) {
          s->workerSleepers.fetch_add(1, std::memory_order_seq_cst);
          s->generation.wait(seen, std::memory_order_seq_cst);
          s->workerSleepers.fetch_sub(1, std::memory_order_relaxed);
        }
        seen = s->generation.load(std::memory_order_acquire);
        if (s->stop) return;
        (*s->task)(index, threads);
        if (s->pending.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
            s->ownerSleeping.load(std::memory_order_seq_cst) != 0) {
          s->pending.notify_one();
        }
      }
    });
  }
}

ThreadPool::~ThreadPool() {
  State* s = state_;
  s->stop = true;
  s->generation.fetch_add(1, std::memory_order_seq_cst);
  s->generation.notify_all();
  for (auto& t : s->workers) t.join();
  delete s;
}

void ThreadPool::run(TaskRef task) {
  State* s = state_;
  if (threads_ == 1) {
    task(0, 1);
    return;
  }
  s->task = &task;
  s->pending.store(threads_ - 1, std::memory_order_relaxed);
  s->generation.fetch_add(1, std::memory_order_seq_cst);  // publishes task and pending
  if (s->workerSleepers.load(std::memory_order_seq_cst) != 0) s->generation.notify_all();

  task(0, threads_);

  auto done = [&] { return s->pending.load(std::memory_order_acquire) == 0; };
  while (!spinUntil(done)) {
    s->ownerSleeping.store(1, std::memory_order_seq_cst);
    int left = s->pending.load(std::memory_order_seq_cst);
    if (left != 0) s->pending.wait(left, std::memory_order_seq_cst);
    s->ownerSleeping.store(0, std::memory_order_relaxed);
  }
}

}  // namespace prism
