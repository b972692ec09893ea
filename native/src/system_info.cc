#include "system_info.h"

#include <cpuid.h>
#include <immintrin.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "thread_pool.h"

namespace prism {

bool cpuHasF16c() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_F16C) != 0;
}

double measureBandwidth(int64_t bytes, int64_t passes) {
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(threads);
  const int64_t n = bytes / 32;  // 32-byte vectors
  std::vector<float> storage(static_cast<size_t>(n) * 8 + 8);
  // 32-byte aligned view of the buffer (aligned loads, no split cache lines).
  float* buf = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(storage.data()) + 31) & ~uintptr_t{31});
  std::vector<float> sink(threads * 16, 0.0f);
  // First touch from every thread (pages get mapped), then timed passes.
  auto touch = [&](int i, int count) {
    int64_t b = n * i / count, e = n * (i + 1) / count;
    for (int64_t k = b; k < e; k++) _mm256_store_ps(buf + 8 * k, _mm256_set1_ps(static_cast<float>(k & 7)));
  };
  pool.run(TaskRef(touch));
  auto read = [&](int i, int count) {
    int64_t b = n * i / count, e = n * (i + 1) / count;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t k = b;
    for (; k + 4 <= e; k += 4) {
      a0 = _mm256_add_ps(a0, _mm256_load_ps(buf + 8 * k));
      a1 = _mm256_add_ps(a1, _mm256_load_ps(buf + 8 * k + 8));
      a2 = _mm256_add_ps(a2, _mm256_load_ps(buf + 8 * k + 16));
      a3 = _mm256_add_ps(a3, _mm256_load_ps(buf + 8 * k + 24));
    }
    for (; k < e; k++) a0 = _mm256_add_ps(a0, _mm256_load_ps(buf + 8 * k));
    __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
    float tmp[8];
    _mm256_storeu_ps(tmp, s);
    sink[i * 16] += tmp[0] + tmp[7];  // keeps the loads alive
  };
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t p = 0; p < passes; p++) pool.run(TaskRef(read));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(n) * 32.0 * static_cast<double>(passes) / secs / 1e9;
}

}  // namespace prism
