#include "system_info.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "thread_pool.h"

namespace prism {

bool cpuHasF16c() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_F16C) != 0;
}

// The roofline's denominator, so it must not move with what else runs: a single timed read
// of the buffer swung 33-61 GB/s from run to run on a shared 2-core machine. Each pass is
// timed on its own and the best pass counts (other processes and preemption only ever make
// a pass slower, so the fastest is the closest to what the memory system can deliver); the
// buffer is 2 MiB aligned and advised MADV_HUGEPAGE like the repacked weights
// (allocWeightBytes), so TLB misses cost the probe what they cost decode, and it is at
// least 8x the last-level cache, so no pass is served from cache.
double measureBandwidth(int64_t bytes, int64_t passes) {
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(threads);
  const int64_t n = bytes / 64;  // 64-byte lines
  const size_t size = static_cast<size_t>(n) * 64;
  void* mapped = mmap(nullptr, size + (size_t(2) << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t huge = size_t(2) << 20;
  float* buf = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(mapped) + huge - 1) & ~(huge - 1));
  madvise(buf, size & ~(huge - 1), MADV_HUGEPAGE);
  std::vector<float> sink(threads * 16, 0.0f);
  // First touch from every thread (pages get mapped), then timed passes.
  auto touch = [&](int i, int count) {
    int64_t b = n * i / count, e = n * (i + 1) / count;
    for (int64_t k = b; k < e; k++) {
      _mm256_store_ps(buf + 16 * k, _mm256_set1_ps(static_cast<float>(k & 7)));
      _mm256_store_ps(buf + 16 * k + 8, _mm256_set1_ps(static_cast<float>(k & 3)));
    }
  };
  pool.run(TaskRef(touch));
  auto read = [&](int i, int count) {
    int64_t b = n * i / count, e = n * (i + 1) / count;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t k = b;
    for (; k + 2 <= e; k += 2) {
      a0 = _mm256_add_ps(a0, _mm256_load_ps(buf + 16 * k));
      a1 = _mm256_add_ps(a1, _mm256_load_ps(buf + 16 * k + 8));
      a2 = _mm256_add_ps(a2, _mm256_load_ps(buf + 16 * k + 16));
      a3 = _mm256_add_ps(a3, _mm256_load_ps(buf + 16 * k + 24));
    }
    for (; k < e; k++) a0 = _mm256_add_ps(a0, _mm256_add_ps(_mm256_load_ps(buf + 16 * k), _mm256_load_ps(buf + 16 * k + 8)));
    __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
    float tmp[8];
    _mm256_storeu_ps(tmp, s);
    sink[i * 16] += tmp[0] + tmp[7];  // keeps the loads alive
  };
  double best = 1e30;
  for (int64_t p = 0; p < passes; p++) {
    auto t0 = std::chrono::steady_clock::now();
    pool.run(TaskRef(read));
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  munmap(mapped, size + (size_t(2) << 20));
  return static_cast<double>(size) / best / 1e9;
}

namespace {

struct ReadBuffer {
  std::mutex mutex;
  void* mapped = nullptr;
  size_t mappedBytes = 0;
  float* data = nullptr;
  size_t bytes = 0;
};

ReadBuffer& readBuffer() {
  static ReadBuffer b;
  return b;
}

void unmapLocked(ReadBuffer& b) {
  if (b.mapped != nullptr) munmap(b.mapped, b.mappedBytes);
  b.mapped = nullptr;
  b.data = nullptr;
  b.bytes = b.mappedBytes = 0;
}

}  // namespace

double sustainedReadRate(int64_t bytes, int64_t passes, int threads) {
  ReadBuffer& b = readBuffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  const size_t size = static_cast<size_t>(bytes / 64) * 64;
  const uintptr_t huge = size_t(2) << 20;
  ThreadPool pool(threads);
  const int64_t n = static_cast<int64_t>(size / 64);
  if (b.bytes != size) {
    unmapLocked(b);
    void* mapped = mmap(nullptr, size + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    b.mapped = mapped;
    b.mappedBytes = size + huge;
    b.data = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(mapped) + huge - 1) & ~(huge - 1));
    b.bytes = size;
    madvise(b.data, size & ~(huge - 1), MADV_HUGEPAGE);  // as the weights (allocWeightBytes)
    float* buf = b.data;
    auto touch = [&](int i, int count) {
      for (int64_t k = n * i / count, e = n * (i + 1) / count; k < e; k++) {
        _mm256_store_ps(buf + 16 * k, _mm256_set1_ps(static_cast<float>(k & 7)));
        _mm256_store_ps(buf + 16 * k + 8, _mm256_set1_ps(static_cast<float>(k & 3)));
      }
    };
    pool.run(TaskRef(touch));
  }
  const float* buf = b.data;
  std::vector<float> sink(static_cast<size_t>(threads) * 16, 0.0f);
  auto read = [&](int i, int count) {
    const int64_t e = n * (i + 1) / count;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    for (int64_t k = n * i / count; k < e; k++) {
      a0 = _mm256_add_ps(a0, _mm256_load_ps(buf + 16 * k));
      a1 = _mm256_add_ps(a1, _mm256_load_ps(buf + 16 * k + 8));
    }
    float tmp[8];
    _mm256_storeu_ps(tmp, _mm256_add_ps(a0, a1));
    sink[static_cast<size_t>(i) * 16] += tmp[0] + tmp[7];  // keeps the loads alive
  };
  std::vector<double> rates;
  for (int64_t p = 0; p < passes; p++) {
    auto t0 = std::chrono::steady_clock::now();
    pool.run(TaskRef(read));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(static_cast<double>(size) / secs / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  const size_t m = rates.size();
  return m % 2 ? rates[m / 2] : 0.5 * (rates[m / 2 - 1] + rates[m / 2]);
}

void releaseReadBuffer() {
  ReadBuffer& b = readBuffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  unmapLocked(b);
}

}  // namespace prism
