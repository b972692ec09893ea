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

}  // namespace prism
