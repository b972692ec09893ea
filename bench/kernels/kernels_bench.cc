// Microbenchmark of matmul() on the default model's shapes (SmolLM2-135M: hidden 576,
// kv 192, MLP 1536, vocab 49152; Q4_1 layers, Q8_0 head) with random weights.
//   kernels_bench [threads=2] [layer type=Q4_1] [only n] [int8|int16]   (PRISM_ISA=avx2|reference
//   forces an ISA; the activation precision defaults to int8, the default model runs int16)
// Prints per shape and n: µs per call, weight GB/s, GFLOP/s; then the matmul-only time of one
// model step (30 layers + head) and the machine's measured read bandwidth.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"

using namespace prism;

namespace {

struct Shape {
  const char* name;
  int64_t rows, cols;
  int perLayer;  // how many times one layer uses it (0: the head)
};

double processCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Wall seconds per call, and process CPU seconds per call divided by the thread count (on a
// machine shared with other work the latter is the steadier figure: time actually on a core).
struct Timing {
  double wall, cpu;
};

Timing timeMatmul(const LinearWeight& W, const std::vector<float>& x, int64_t n, std::vector<float>& y,
                  ThreadPool& pool, KernelScratch& scratch) {
  matmul(W, x.data(), n, W.cols, y.data(), W.rows, pool, scratch);  // warm-up
  int iters = 0;
  auto start = std::chrono::steady_clock::now();
  double cpu0 = processCpuSeconds();
  double elapsed = 0;
  do {
    matmul(W, x.data(), n, W.cols, y.data(), W.rows, pool, scratch);
    ++iters;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < 0.25);
  return {elapsed / iters, (processCpuSeconds() - cpu0) / iters / pool.size()};
}

}  // namespace

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  std::string layerType = argc > 2 ? argv[2] : "Q4_1";
  int64_t onlyN = argc > 3 ? std::atoll(argv[3]) : 0;
  const std::string precisionName = argc > 4 ? argv[4] : "int8";
  if (precisionName != "int8" && precisionName != "int16")
    return std::fprintf(stderr, "precision must be int8 or int16; got %s\n", precisionName.c_str()), 2;
  const ActivationPrecision precision = precisionName == "int16" ? ActivationPrecision::Int16 : ActivationPrecision::Int8;
  TensorType lt;
  if (!typeFromName(layerType, &lt)) return std::fprintf(stderr, "unknown type %s\n", layerType.c_str()), 2;
  const Shape shapes[] = {{"attn q/o 576x576", 576, 576, 2},  {"attn k/v 192x576", 192, 576, 2},
                          {"mlp g/u 1536x576", 1536, 576, 2}, {"mlp down 576x1536", 576, 1536, 1},
                          {"head 49152x576 Q8_0", 49152, 576, 0}};
  const int64_t ns[] = {1, 32, 512};
  const int layers = 30;
  ThreadPool pool(threads);
  KernelScratch scratch;
  scratch.reserve(512, 1536, threads);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 1);
  std::printf("isa=%s threads=%d layer type=%s activations=%s\n", selectedIsa(), threads, layerType.c_str(),
              precisionName.c_str());
  {
    // Cost of one parallel region with hot workers (a decode step runs ~250 of them).
    auto empty = [](int, int) {};
    for (int i = 0; i < 1000; ++i) pool.run(TaskRef(empty));
    int runs = 0;
    double elapsed = 0;
    auto start = std::chrono::steady_clock::now();
    do {
      for (int i = 0; i < 100; ++i) pool.run(TaskRef(empty));
      runs += 100;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (elapsed < 0.3);
    double us = elapsed / runs * 1e6;
    std::printf("empty parallel region (%d threads): %.2f us\n", threads, us);
  }
  std::printf("%-22s %5s %10s %9s %9s %10s %9s\n", "shape", "n", "us/call", "GB/s", "GFLOP/s", "cpu-us", "cpuGFLOP");
  double stepTime[3] = {0, 0, 0};
  for (const Shape& s : shapes) {
    TensorType type = s.perLayer == 0 ? TensorType::Q8_0 : lt;
    std::vector<float> w(s.rows * s.cols);
    for (auto& v : w) v = normal(rng) * 0.05f;
    std::vector<uint8_t> q(typeRowBytes(type, s.cols) * s.rows);
    quantizeReference(type, w.data(), s.rows, s.cols, q.data());
    LinearWeight W = prepareLinear(type, q.data(), s.rows, s.cols, precision);
    for (int i = 0; i < 3; ++i) {
      int64_t n = ns[i];
      if (onlyN != 0 && n != onlyN) continue;
      std::vector<float> x(n * s.cols), y(n * s.rows);
      for (auto& v : x) v = normal(rng);
      Timing tm = timeMatmul(W, x, n, y, pool, scratch);
      double t = tm.wall;
      std::printf("%-22s %5ld %10.1f %9.2f %9.1f %10.1f %9.1f\n", s.name, long(n), t * 1e6, W.bytes / t / 1e9,
                  2.0 * s.rows * s.cols * n / t / 1e9, tm.cpu * 1e6, 2.0 * s.rows * s.cols * n / tm.cpu / 1e9);
      // A step runs the head only on the sampled tokens: n for decode batches, 1 for prefill.
      if (s.perLayer) stepTime[i] += layers * s.perLayer * t;
      else if (i < 2) stepTime[i] += t;
      else stepTime[i] += t / 1;  // prefill: head once (timed at n=512 below is not used)
    }
  }
  if (onlyN != 0) return 0;
  std::printf("matmul-only model step: n=1 %.2f ms (%.0f tok/s), n=32 %.2f ms (%.0f tok/s), n=512 %.2f ms (%.0f tok/s)\n",
              stepTime[0] * 1e3, 1 / stepTime[0], stepTime[1] * 1e3, 32 / stepTime[1], stepTime[2] * 1e3,
              512 / stepTime[2]);
  std::printf("memory read bandwidth (%d threads): %.1f GB/s\n", threads,
              measureMemoryBandwidth(size_t(512) << 20, 5, pool));
  return 0;
}
