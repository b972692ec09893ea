// A small fork-join pool sized to the cores. The owner thread (the one that calls run())
// takes part as thread 0; workers spin briefly then sleep, so a decode step with a few
// hundred parallel regions pays microseconds, not milliseconds, per region.
#pragma once
#include <cstdint>
#include <type_traits>
#include <utility>

namespace prism {

// Non-owning callable reference: avoids std::function's allocation on the hot path.
class TaskRef {
 public:
  template <typename F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, TaskRef>)
  TaskRef(F& f)  // NOLINT(google-explicit-constructor)
      : obj_(static_cast<void*>(&f)), call_([](void* o, int i, int n) { (*static_cast<F*>(o))(i, n); }) {}
  void operator()(int i, int n) const { call_(obj_, i, n); }

 private:
  void* obj_;
  void (*call_)(void*, int, int);
};

// Work a pool thread may do while it waits for others (at a join, or for the next region).
// Context uses it to stream the weights a thread reads next into its L2 (weight_prefetch.h):
// decode is bound by memory bandwidth, and a core that waits leaves its share of it unused.
class IdleWork {
 public:
  virtual ~IdleWork() = default;
  // Thread `thread` has finished its share of the current region (called before the region
  // counts it as done, so the owner has not moved on yet).
  virtual void regionDone(int thread) = 0;
  // One small piece of work (a few hundred nanoseconds at most, so a waiting thread still
  // answers promptly); returns false when there is nothing left to do.
  virtual bool step(int thread) = 0;
};

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads >= 1, including the owner
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }
  // Runs task(i, size()) for i in [0, size()) — i = 0 on the calling thread — and returns
  // when all have finished. Not re-entrant.
  void run(TaskRef task);

  // Installs (or, with nullptr, removes) the idle work; it must outlive the pool's use of it.
  void setIdleWork(IdleWork* idle);

  // Convenience: splits [0, count) into contiguous chunks, one per thread.
  template <typename F>
  void parallelFor(int64_t count, F&& body) {
    auto task = [&](int i, int n) {
      int64_t begin = count * i / n, end = count * (i + 1) / n;
      if (begin < end) body(begin, end);
    };
    run(TaskRef(task));
  }

 private:
  struct State;
  static void workerLoop(State* s, int index, int threads);
  void stopWorkers();
  void waitForWorkers();
  int threads_;
  State* state_;
};

// Runs f(begin, end, thread) over [0, count): inline on the calling thread when the work is
// small (per-token vector ops of a decode step), else split in contiguous chunks across the pool.
template <typename F>
void forRange(ThreadPool& pool, int64_t count, int64_t workPerItem, F&& f) {
  if (count <= 0) return;
  if (pool.size() == 1 || count == 1 || count * workPerItem < 16384) {
    f(int64_t{0}, count, 0);
    return;
  }
  auto task = [&](int i, int n) {
    const int64_t begin = count * i / n, end = count * (i + 1) / n;
    if (begin < end) f(begin, end, i);
  };
  pool.run(TaskRef(task));
}

}  // namespace prism
