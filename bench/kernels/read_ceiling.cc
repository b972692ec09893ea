// How fast one core (and every core) can stream a DRAM-resident buffer, with and without
// software prefetch: the ceiling a decode stream could reach, against the project's read loop
// (sustainedReadRate: plain 32-byte loads, no prefetch), which is the denominator of
// step-vs-read.ts and of the size suite's "÷ read" columns.
//   read_ceiling [threads=1] [MiB=1024] [passes=9]
// Issue 44: on one thread the prebuilt llama.cpp streamed 8B Q4_0 weights at 13.7 GB/s where
// that read loop read 13.3, so the loop is not one core's ceiling. Each variant reads the same
// huge-page buffer; variants alternate pass by pass (so a neighbour's minute hits all alike)
// and each prints the median and the best pass in GB/s.
#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "thread_pool.h"

using namespace prism;

namespace {

double wall() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Sums lines [b, e) of buf (16 floats each) with plain loads; when `ahead` > 0 bytes, asks for
// the line that far ahead with `hint` once per line.
template <int Hint>
float readLines(const float* buf, int64_t b, int64_t e, int64_t ahead) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  const char* base = reinterpret_cast<const char*>(buf);
  for (int64_t k = b; k + 2 <= e; k += 2) {
    if (ahead > 0) {
      _mm_prefetch(base + 64 * k + ahead, static_cast<_mm_hint>(Hint));
      _mm_prefetch(base + 64 * k + 64 + ahead, static_cast<_mm_hint>(Hint));
    }
    a0 = _mm256_add_ps(a0, _mm256_load_ps(buf + 16 * k));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(buf + 16 * k + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(buf + 16 * k + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(buf + 16 * k + 24));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

struct Variant {
  std::string name;
  std::function<float(const float*, int64_t, int64_t)> read;
  std::vector<double> gbs;
};

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int64_t mib = argc > 2 ? std::atoll(argv[2]) : 1024;
  const int passes = argc > 3 ? std::atoi(argv[3]) : 9;
  if (threads < 1 || mib < 64 || passes < 1) {
    std::fprintf(stderr, "usage: read_ceiling [threads>=1] [MiB>=64] [passes>=1]\n");
    return 2;
  }
  const size_t huge = size_t(2) << 20, size = static_cast<size_t>(mib) << 20;
  void* mapped = mmap(nullptr, size + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return 1;
  float* buf = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(mapped) + huge - 1) & ~(huge - 1));
  madvise(buf, size - huge, MADV_HUGEPAGE);
  const int64_t lines = static_cast<int64_t>(size - huge) / 64;
  ThreadPool pool(threads);
  auto touch = [&](int i, int n) {
    for (int64_t k = lines * i / n; k < lines * (i + 1) / n; k++)
      for (int j = 0; j < 16; j++) buf[16 * k + j] = static_cast<float>((k + j) & 7);
  };
  pool.run(TaskRef(touch));

  std::vector<Variant> variants;
  variants.push_back({"plain loads (the read loop)", [](const float* p, int64_t b, int64_t e) { return readLines<_MM_HINT_T0>(p, b, e, 0); }, {}});
  for (int64_t ahead : {512, 2048, 8192})
    for (int hint : {_MM_HINT_T0, _MM_HINT_T1}) {
      const std::string name = std::string(hint == _MM_HINT_T0 ? "T0" : "T1") + " prefetch " + std::to_string(ahead) + " B ahead";
      if (hint == _MM_HINT_T0)
        variants.push_back({name, [ahead](const float* p, int64_t b, int64_t e) { return readLines<_MM_HINT_T0>(p, b, e, ahead); }, {}});
      else
        variants.push_back({name, [ahead](const float* p, int64_t b, int64_t e) { return readLines<_MM_HINT_T1>(p, b, e, ahead); }, {}});
    }

  std::vector<float> sink(static_cast<size_t>(threads) * 16, 0.0f);
  for (int pass = 0; pass < passes; pass++)
    for (size_t v = 0; v < variants.size(); v++) {
      Variant& var = variants[(v + pass) % variants.size()];
      auto task = [&](int i, int n) { sink[i * 16] += var.read(buf, lines * i / n, lines * (i + 1) / n); };
      const double t0 = wall();
      pool.run(TaskRef(task));
      var.gbs.push_back(static_cast<double>(lines) * 64 / (wall() - t0) / 1e9);
    }
  std::printf("%d thread(s), %lld MiB, %d passes per variant; GB/s median (best)\n", threads, static_cast<long long>(mib), passes);
  for (Variant& v : variants) {
    std::sort(v.gbs.begin(), v.gbs.end());
    std::printf("  %-32s %6.1f (%5.1f)\n", v.name.c_str(), v.gbs[v.gbs.size() / 2], v.gbs.back());
  }
  float s = 0;
  for (float x : sink) s += x;
  return s == 12345.0f ? 3 : 0;  // keeps the sums alive
}
