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
// not to burn a core for long when the engine is idle. Past kYieldAfter the spinner also
// yields its core each round: on an oversubscribed machine the thread it waits for may be
// runnable but not running, and pure spinning would only delay it.
constexpr auto kSpinTime = std::chrono::microseconds(300);
constexpr auto kYieldAfter = std::chrono::microseconds(30);

// Spins until pred() holds or kSpinTime has passed; returns pred()'s last value. While it
// spins, it does the idle work (if any) piece by piece, checking pred() between pieces.
template <typename Pred>
bool spinUntil(Pred pred, IdleWork* idle, int thread) {
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      if (idle != nullptr && idle->step(thread)) continue;
      idle = nullptr;
      PRISM_CPU_RELAX();
    }
    auto spent = std::chrono::steady_clock::now() - start;
    if (spent > kSpinTime) return pred();
    if (spent > kYieldAfter) std::this_thread::yield();
  }
}

}  // namespace

struct ThreadPool::State {
  alignas(64) std::atomic<uint32_t> generation{0};
  alignas(64) std::atomic<int> workerSleepers{0};
  alignas(64) std::atomic<int> pending{0};
  alignas(64) std::atomic<int> ownerSleeping{0};
  TaskRef* task = nullptr;
  std::atomic<IdleWork*> idle{nullptr};
  bool stop = false;
  std::vector<std::thread> workers;
};

ThreadPool::ThreadPool(int threads) : threads_(threads), state_(nullptr) {
  if (threads < 1) throw std::invalid_argument("ThreadPool: threads must be >= 1");
  state_ = new State;
  try {
    for (int index = 1; index < threads; ++index) state_->workers.emplace_back(workerLoop, state_, index, threads);
  } catch (...) {
    // A thread could not be started: stop the ones that were, then report.
    stopWorkers();
    delete state_;
    throw;
  }
}

void ThreadPool::stopWorkers() {
  State* s = state_;
  s->stop = true;
  s->generation.fetch_add(1, std::memory_order_seq_cst);
  s->generation.notify_all();
  for (auto& t : s->workers) t.join();
  s->workers.clear();
}

ThreadPool::~ThreadPool() {
  stopWorkers();
  delete state_;
}

void ThreadPool::workerLoop(State* s, int index, int threads) {
  uint32_t seen = 0;
  for (;;) {
    auto changed = [&] { return s->generation.load(std::memory_order_acquire) != seen; };
    if (!spinUntil(changed, s->idle.load(std::memory_order_acquire), index)) {
      s->workerSleepers.fetch_add(1, std::memory_order_seq_cst);
      s->generation.wait(seen, std::memory_order_seq_cst);
      s->workerSleepers.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = s->generation.load(std::memory_order_acquire);
    if (s->stop) return;
    // Tasks must not throw on workers (the kernels do not): an exception here terminates.
    (*s->task)(index, threads);
    if (IdleWork* idle = s->idle.load(std::memory_order_acquire)) idle->regionDone(index);
    if (s->pending.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        s->ownerSleeping.load(std::memory_order_seq_cst) != 0) {
      s->pending.notify_one();
    }
  }
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

  // The workers hold a reference to `task`: even if the owner's share throws, wait for them
  // before the exception leaves this frame.
  try {
    task(0, threads_);
  } catch (...) {
    waitForWorkers();
    throw;
  }
  if (IdleWork* idle = s->idle.load(std::memory_order_acquire)) idle->regionDone(0);
  waitForWorkers();
}

void ThreadPool::setIdleWork(IdleWork* idle) { state_->idle.store(idle, std::memory_order_release); }

void ThreadPool::waitForWorkers() {
  State* s = state_;
  auto done = [&] { return s->pending.load(std::memory_order_acquire) == 0; };
  IdleWork* idle = s->idle.load(std::memory_order_acquire);
  while (!spinUntil(done, idle, 0)) {
    s->ownerSleeping.store(1, std::memory_order_seq_cst);
    int left = s->pending.load(std::memory_order_seq_cst);
    if (left != 0) s->pending.wait(left, std::memory_order_seq_cst);
    s->ownerSleeping.store(0, std::memory_order_relaxed);
  }
}

}  // namespace prism
