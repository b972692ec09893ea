// Microbenchmark of single-token decode on 1B-shaped layers (hidden 2048, FFN 8192, 8 KV
// heads of 64: qkv 3072×2048, o 2048×2048, gate+up 16384×2048, down 2048×8192), several
// layers so the weights are DRAM-resident as in a real decode, random weights.
//   decode_bench [threads=1] [type=Q4_0] [layers=6] [hidden=2048] [SETTING ...]
// Prints weight GB/s per pass of all layers (best and median of 25), timed in the calling
// thread's CPU time when threads=1 (steady on a shared machine: time preempted is not
// counted, time stalled on memory is), in wall time otherwise; and the process's
// transparent-huge-page memory.
//
// With decode tunings (kernels/decode_tuning.h, e.g. `prefetch=t1:2,rows=8`; `default` for
// the constants) the settings take passes in turn, rotating which goes first, and each is
// reported with the median of its pass-time ratios to the first setting's pass of the same
// round (the machine's bandwidth swings hit them alike). `race` runs the load-time
// measurement (decode_tuning/measure.h) on these layers and prints its stages.
// DECODE_BENCH_NO_THP=1 turns transparent huge pages off for the process before the weights
// are allocated (prctl PR_SET_THP_DISABLE): a host whose THP mode gives no huge pages.
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "decode_tuning/measure.h"
#include "kernels/kernels.h"

using namespace prism;

namespace {
double threadCpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
double wall() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const std::string typeName = argc > 2 ? argv[2] : "Q4_0";
  const int layers = argc > 3 ? std::atoi(argv[3]) : 6;
  const int64_t D = argc > 4 ? std::atoll(argv[4]) : 2048, I = 8192;
  std::vector<std::string> settings;
  for (int i = 5; i < argc; ++i) settings.push_back(argv[i]);
  const char* noThp = std::getenv("DECODE_BENCH_NO_THP");
  if (noThp != nullptr && std::string(noThp) == "1") prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
  TensorType type;
  if (!typeFromName(typeName, &type)) return std::fprintf(stderr, "unknown type %s\n", typeName.c_str()), 2;
  const struct { int64_t rows, cols; } shapes[] = {{D + 1024, D}, {D, D}, {2 * I, D}, {D, I}};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 1);
  std::vector<LinearWeight> ws;  // ws[k * layers + l]
  ws.reserve(4 * layers);
  for (auto s : shapes) {
    std::vector<float> w(s.rows * s.cols);
    for (auto& v : w) v = normal(rng) * 0.05f;
    std::vector<uint8_t> q(typeRowBytes(type, s.cols) * s.rows);
    quantizeReference(type, w.data(), s.rows, s.cols, q.data());
    for (int l = 0; l < layers; ++l) ws.push_back(prepareLinear(type, q.data(), s.rows, s.cols));
  }
  size_t total = 0;
  for (auto& W : ws) total += W.bytes;
  WeightPrefetcher prefetcher(threads);
  ThreadPool pool(threads);
  pool.setIdleWork(&prefetcher);
  KernelScratch scratch;
  scratch.reserve(1, I, threads);
  std::vector<float> x(I), y(2 * I);
  for (auto& v : x) v = normal(rng);
  std::string huge = "?";
  std::ifstream smaps("/proc/self/smaps_rollup");
  for (std::string line; std::getline(smaps, line);)
    if (line.rfind("AnonHugePages:", 0) == 0) huge = line.substr(14);
  auto now = threads == 1 ? threadCpu : wall;
  // One pass over every layer in decode order, the idle prefetcher aimed as the forward
  // pass aims it.
  auto pass = [&] {
    const double t0 = now();
    for (int l = 0; l < layers; ++l)
      for (int k = 0; k < 4; ++k) {
        const LinearWeight& W = ws[k * layers + l];
        const LinearWeight& next = k < 3 ? ws[(k + 1) * layers + l] : ws[(l + 1) % layers];
        prefetcher.setNext(&next);
        matmul(W, x.data(), 1, W.cols, y.data(), W.rows, pool, scratch);
      }
    prefetcher.setNext(nullptr);
    return now() - t0;
  };

  if (settings.size() == 1 && settings[0] == "race") {
    std::vector<TuneLayer> tl(layers);
    for (int l = 0; l < layers; ++l)
      for (int k = 0; k < 4; ++k) {
        tl[l].mats.push_back(&ws[k * layers + l]);
        tl[l].bytes += ws[k * layers + l].bytes;
      }
    const TuneResult r = measureDecodeTuning(tl, pool, scratch, prefetcher, TuneBudget{});
    std::printf("%s isa=%s threads=%d %.0f MB: race %.0f ms, %s -> %s (ratio to the defaults %.3f, %.1f GB/s); huge pages:%s\n%s",
                typeName.c_str(), selectedIsa(), threads, total / 1e6, r.ms, r.conclusive ? "conclusive" : "inconclusive",
                r.tuning.describe().c_str(), r.ratioToDefault, r.gbps, huge.c_str(), r.summary().c_str());
    return 0;
  }
  if (!settings.empty()) {
    std::vector<DecodeTuning> tunings;
    for (const std::string& s : settings) {
      DecodeTuning t;
      std::string why;
      if (s != "default" && !parseDecodeTuning(s, &t, &why)) return std::fprintf(stderr, "%s\n", why.c_str()), 2;
      tunings.push_back(t);
    }
    const size_t n = tunings.size();
    std::vector<std::vector<double>> times(n);
    for (int rep = -1; rep < 25; ++rep) {
      for (size_t j = 0; j < n; ++j) {
        const size_t i = (j + static_cast<size_t>(rep + 1)) % n;  // rotate who goes first
        scratch.setDecodeTuning(tunings[i]);
        prefetcher.setEnabled(tunings[i].idlePrefetch);
        const double t = pass();
        if (rep >= 0) times[i].push_back(t);
      }
    }
    std::printf("%s isa=%s threads=%d %.0f MB (%s); huge pages:%s\n", typeName.c_str(), selectedIsa(), threads,
                total / 1e6, threads == 1 ? "thread CPU time" : "wall time", huge.c_str());
    for (size_t i = 0; i < n; ++i) {
      std::vector<double> ratio;
      for (size_t r = 0; r < times[i].size(); ++r) ratio.push_back(times[i][r] / times[0][r]);
      std::printf("  %-36s median %.1f GB/s, best %.1f GB/s, paired ratio to the first %.3f\n",
                  tunings[i].describe().c_str(), total / median(times[i]) / 1e9,
                  total / *std::min_element(times[i].begin(), times[i].end()) / 1e9, median(ratio));
    }
    return 0;
  }
  std::vector<double> times;
  for (int rep = 0; rep < 25; ++rep) times.push_back(pass());
  std::sort(times.begin(), times.end());
  std::printf("%s isa=%s threads=%d %.0f MB: best %.1f GB/s, median %.1f GB/s (%s); huge pages:%s\n", typeName.c_str(),
              selectedIsa(), threads, total / 1e6, total / times.front() / 1e9, total / times[times.size() / 2] / 1e9,
              threads == 1 ? "thread CPU time" : "wall time", huge.c_str());
  return 0;
}
