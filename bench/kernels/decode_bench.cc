// Microbenchmark of single-token decode on 1B-shaped layers (hidden 2048, FFN 8192, 8 KV
// heads of 64: qkv 3072×2048, o 2048×2048, gate+up 16384×2048, down 2048×8192), several
// layers so the weights are DRAM-resident as in a real decode, random weights.
//   decode_bench [threads=1] [type=Q4_0] [layers=6] [hidden=2048]
// Prints weight GB/s per pass of all layers (best and median of 25), timed in the calling
// thread's CPU time when threads=1 (steady on a shared machine: time preempted is not
// counted, time stalled on memory is), in wall time otherwise; and the process's
// transparent-huge-page memory.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"

using namespace prism;

namespace {
double threadCpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
double wall() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const std::string typeName = argc > 2 ? argv[2] : "Q4_0";
  const int layers = argc > 3 ? std::atoi(argv[3]) : 6;
  const int64_t D = argc > 4 ? std::atoll(argv[4]) : 2048, I = 8192;
  TensorType type;
  if (!typeFromName(typeName, &type)) return std::fprintf(stderr, "unknown type %s\n", typeName.c_str()), 2;
  const struct { int64_t rows, cols; } shapes[] = {{D + 1024, D}, {D, D}, {2 * I, D}, {D, I}};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 1);
  std::vector<LinearWeight> ws;  // ws[k * layers + l]
  for (auto s : shapes) {
    std::vector<float> w(s.rows * s.cols);
    for (auto& v : w) v = normal(rng) * 0.05f;
    std::vector<uint8_t> q(typeRowBytes(type, s.cols) * s.rows);
    quantizeReference(type, w.data(), s.rows, s.cols, q.data());
    for (int l = 0; l < layers; ++l) ws.push_back(prepareLinear(type, q.data(), s.rows, s.cols));
  }
  size_t total = 0;
  for (auto& W : ws) total += W.bytes;
  ThreadPool pool(threads);
  KernelScratch scratch;
  scratch.reserve(1, I, threads);
  std::vector<float> x(I), y(2 * I);
  for (auto& v : x) v = normal(rng);
  auto now = threads == 1 ? threadCpu : wall;
  std::vector<double> times;
  for (int rep = 0; rep < 25; ++rep) {
    const double t0 = now();
    for (int l = 0; l < layers; ++l)
      for (int k = 0; k < 4; ++k) {
        const LinearWeight& W = ws[k * layers + l];
        matmul(W, x.data(), 1, W.cols, y.data(), W.rows, pool, scratch);
      }
    times.push_back(now() - t0);
  }
  std::sort(times.begin(), times.end());
  std::string huge = "?";
  std::ifstream smaps("/proc/self/smaps_rollup");
  for (std::string line; std::getline(smaps, line);)
    if (line.rfind("AnonHugePages:", 0) == 0) huge = line.substr(14);
  std::printf("%s isa=%s threads=%d %.0f MB: best %.1f GB/s, median %.1f GB/s (%s); huge pages:%s\n", typeName.c_str(),
              selectedIsa(), threads, total / 1e6, total / times.front() / 1e9, total / times[times.size() / 2] / 1e9,
              threads == 1 ? "thread CPU time" : "wall time", huge.c_str());
  return 0;
}
