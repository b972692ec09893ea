// Microbenchmark of matmul() on a batch of n tokens with Llama-3.2-3B layer shapes (o
// 3072×3072, gate+up 16384×3072, down 3072×8192), random weights: the kernel rate of
// prefill (n = 512) and of batched decode (n = 2-32, where each weight byte still comes from
// DRAM once per step).
//   batch_bench [threads=1] [type=Q4_0] [n=512] [shapes=3b|minilm] [matmul|many]
//   (PRISM_ISA=avx2 forces the AVX2 kernels; minilm: all-MiniLM-L6-v2's encoder layer, qkv
//   1152×384, o 384×384, up 1536×384, down 384×1536; many: matmulManyTokens, the encoders'
//   entry, whose float weights run float_gemm.h)
// Prints GFLOP/s per shape (median of 5 calls after one warm-up) and over all three.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"

using namespace prism;

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const std::string typeName = argc > 2 ? argv[2] : "Q4_0";
  const int64_t n = argc > 3 ? std::atoll(argv[3]) : 512;
  const std::string shapeSet = argc > 4 ? argv[4] : "3b";
  const std::string entry = argc > 5 ? argv[5] : "matmul";
  const auto run = entry == "many" ? &matmulManyTokens : &matmul;
  TensorType type;
  if (threads < 1 || n < 1 || !typeFromName(typeName, &type) || (shapeSet != "3b" && shapeSet != "minilm") ||
      (entry != "matmul" && entry != "many"))
    return std::fprintf(stderr, "usage: batch_bench [threads>=1] [type] [n>=1] [3b|minilm] [matmul|many]\n"), 2;
  struct Shape {
    int64_t rows, cols;
  };
  const std::vector<Shape> shapes = shapeSet == "minilm" ? std::vector<Shape>{{1152, 384}, {384, 384}, {1536, 384}, {384, 1536}}
                                                         : std::vector<Shape>{{3072, 3072}, {16384, 3072}, {3072, 8192}};
  ThreadPool pool(threads);
  KernelScratch scratch;
  scratch.reserve(n, 8192, threads);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 1);
  double flops = 0, seconds = 0;
  for (auto s : shapes) {
    std::vector<float> w(s.rows * s.cols);
    for (auto& v : w) v = normal(rng) * 0.05f;
    std::vector<uint8_t> q(typeRowBytes(type, s.cols) * s.rows);
    quantizeReference(type, w.data(), s.rows, s.cols, q.data());
    const LinearWeight W = prepareLinear(type, q.data(), s.rows, s.cols);
    std::vector<float> x(n * s.cols), y(n * s.rows);
    for (auto& v : x) v = normal(rng);
    run(W, x.data(), n, s.cols, y.data(), s.rows, pool, scratch);  // warm-up
    std::vector<double> times;
    for (int i = 0; i < 5; ++i) {
      const auto start = std::chrono::steady_clock::now();
      run(W, x.data(), n, s.cols, y.data(), s.rows, pool, scratch);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    const double t = times[2], f = 2.0 * s.rows * s.cols * n;
    flops += f;
    seconds += t;
    std::printf("%s %s isa=%s threads=%d %ldx%ld n=%ld: %.2f ms, %.1f GFLOP/s\n", typeName.c_str(), entry.c_str(), selectedIsa(), threads,
                long(s.rows), long(s.cols), long(n), t * 1e3, f / t / 1e9);
  }
  std::printf("%s %s isa=%s threads=%d n=%ld: all shapes %.1f GFLOP/s\n", typeName.c_str(), entry.c_str(), selectedIsa(), threads, long(n),
              flops / seconds / 1e9);
  return 0;
}
