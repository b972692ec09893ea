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
// round (the machine's bandwidth swings hit them alike). `race [BASE]` runs the load-time
// measurement (decode_tuning/measure.h) on these layers from the setting BASE (default: the
// constants; the engine races from its host default, e.g. `prefetch=t1:1,rows=2` on Intel
// AVX-512) and prints its stages.
//
// `interleaved [SETTING]` (Q4_0, AVX-512; issue 27's layout question, q4g_interleaved.h):
// first checks that the tile-interleaved copy of every layer shape gives the engine's y bit
// for bit (1 token: decode tiles; 16 tokens: prefill tiles), then runs the engine's Q4_0
// decode, the interleaved copy and the project's read loop (sustainedReadRate, the
// denominator of step-vs-read.ts and the size suite) over as many bytes, one pass each per
// round in rotating order, all in wall time, with the decode tuning SETTING (default
// `rows=8`: the tiles are 8 rows). Each is reported with its
// median rate and the median (and lowest) of its rate ÷ the read loop's in the same round.
// DECODE_BENCH_NO_THP=1 turns transparent huge pages off for the process before the weights
// are allocated (prctl PR_SET_THP_DISABLE): a host whose THP mode gives no huge pages.
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "decode_tuning/measure.h"
#include "kernels/kernels.h"
#include "q4g_interleaved.h"
#include "system_info.h"

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
  // The interleaved check compares 16-token steps against the engine's VNNI row tiles, which
  // the AMX-INT8 tiles would take over where the CPU has them (switches.h, read once).
  if (!settings.empty() && settings[0] == "interleaved") setenv("PRISM_AMX", "0", 1);
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
  auto hugePages = [] {  // the process's transparent-huge-page memory now
    std::string huge = "?";
    std::ifstream smaps("/proc/self/smaps_rollup");
    for (std::string line; std::getline(smaps, line);)
      if (line.rfind("AnonHugePages:", 0) == 0) huge = line.substr(14);
    return huge;
  };
  double (*now)() = threads == 1 ? threadCpu : wall;
  using Matmul = void (*)(const LinearWeight&, const float*, int64_t, int64_t, float*, int64_t, ThreadPool&,
                          KernelScratch&);
  // One pass over every layer of `set` in decode order, the idle prefetcher aimed as the
  // forward pass aims it.
  auto passOf = [&](const std::vector<LinearWeight>& set, Matmul mm) {
    const double t0 = now();
    for (int l = 0; l < layers; ++l)
      for (int k = 0; k < 4; ++k) {
        const LinearWeight& W = set[k * layers + l];
        const LinearWeight& next = k < 3 ? set[(k + 1) * layers + l] : set[(l + 1) % layers];
        prefetcher.setNext(&next);
        mm(W, x.data(), 1, W.cols, y.data(), W.rows, pool, scratch);
      }
    prefetcher.setNext(nullptr);
    return now() - t0;
  };
  auto pass = [&] { return passOf(ws, matmul); };

  if (!settings.empty() && settings[0] == "interleaved") {
    DecodeTuning tuning;
    tuning.rows = 8;
    std::string why;
    if (settings.size() > 2) return std::fprintf(stderr, "interleaved takes at most one SETTING\n"), 2;
    if (settings.size() == 2 && !parseDecodeTuning(settings[1], &tuning, &why))
      return std::fprintf(stderr, "%s\n", why.c_str()), 2;
    if (tuning.rows != 8) return std::fprintf(stderr, "interleaved: the interleaved tiles are 8 rows (rows=8)\n"), 2;
    if (std::string(selectedIsa()) != "avx512")
      return std::fprintf(stderr, "interleaved: needs the AVX-512 kernels (isa=%s)\n", selectedIsa()), 2;
    std::vector<LinearWeight> wi;
    wi.reserve(ws.size());
    for (const LinearWeight& W : ws) {
      if (!tileInterleavable(W))
        return std::fprintf(stderr, "interleaved: needs Q4_0 in the engine's Q4G0 layout, rows a multiple of 8\n"), 2;
      wi.push_back(tileInterleaved(W));
    }
    scratch.setDecodeTuning(tuning);
    prefetcher.setEnabled(tuning.idlePrefetch);
    const int64_t checkTokens = 16;
    scratch.reserve(checkTokens, I, threads);
    std::vector<float> xs(checkTokens * I), ya(checkTokens * 2 * I), yb(checkTokens * 2 * I);
    for (auto& v : xs) v = normal(rng);
    for (int64_t n : {int64_t(1), checkTokens})
      for (int k = 0; k < 4; ++k) {
        const LinearWeight& W = ws[k * layers];
        matmul(W, xs.data(), n, W.cols, ya.data(), W.rows, pool, scratch);
        tileInterleavedMatmul(wi[k * layers], xs.data(), n, W.cols, yb.data(), W.rows, pool, scratch);
        if (std::memcmp(ya.data(), yb.data(), sizeof(float) * n * W.rows) != 0)
          return std::fprintf(stderr, "interleaved: y differs from the engine's (%lld×%lld, %lld tokens)\n",
                              static_cast<long long>(W.rows), static_cast<long long>(W.cols), static_cast<long long>(n)),
                 1;
      }
    now = wall;  // the read loop is timed in wall time
    const char* names[] = {"engine layout (rows one after another)", "tile-interleaved (q4g_interleaved.h)",
                           "read loop (sustainedReadRate)"};
    std::vector<double> times[3];
    for (int rep = -1; rep < 25; ++rep)
      for (int j = 0; j < 3; ++j) {
        const int i = (j + rep + 1) % 3;  // rotate who goes first
        const double t = i == 0   ? passOf(ws, matmul)
                         : i == 1 ? passOf(wi, tileInterleavedMatmul)
                                  : total / (sustainedReadRate(static_cast<int64_t>(total), 1, threads) * 1e9);
        if (rep >= 0) times[i].push_back(t);
      }
    std::printf("%s isa=%s threads=%d %.0f MB (wall time), %s; huge pages:%s\n"
                "  y bit-identical to the engine's on the 4 layer shapes, 1 token and %lld tokens\n",
                typeName.c_str(), selectedIsa(), threads, total / 1e6, tuning.describe().c_str(), hugePages().c_str(),
                static_cast<long long>(checkTokens));
    for (int i = 0; i < 3; ++i) {
      std::vector<double> ofRead, toEngine;
      for (size_t r = 0; r < times[i].size(); ++r) {
        ofRead.push_back(times[2][r] / times[i][r]);
        toEngine.push_back(times[i][r] / times[0][r]);
      }
      std::printf("  %-40s median %5.1f GB/s, best %5.1f", names[i], total / median(times[i]) / 1e9,
                  total / *std::min_element(times[i].begin(), times[i].end()) / 1e9);
      if (i < 2)
        std::printf(", ÷ read %.3f (lowest %.3f), time ÷ engine's %.3f", median(ofRead),
                    *std::min_element(ofRead.begin(), ofRead.end()), median(toEngine));
      std::printf("\n");
    }
    return 0;
  }

  if (!settings.empty() && settings.size() <= 2 && settings[0] == "race") {
    DecodeTuning base = kDefaultDecodeTuning;
    std::string why;
    if (settings.size() == 2 && !parseDecodeTuning(settings[1], &base, &why))
      return std::fprintf(stderr, "%s\n", why.c_str()), 2;
    std::vector<TuneLayer> tl(layers);
    for (int l = 0; l < layers; ++l)
      for (int k = 0; k < 4; ++k) {
        tl[l].mats.push_back(&ws[k * layers + l]);
        tl[l].bytes += ws[k * layers + l].bytes;
      }
    const TuneResult r = measureDecodeTuning(tl, base, pool, scratch, prefetcher, TuneBudget{});
    std::printf("%s isa=%s threads=%d %.0f MB: race from %s %.0f ms, %s -> %s (ratio to the base %.3f, %.1f GB/s); huge pages:%s\n%s",
                typeName.c_str(), selectedIsa(), threads, total / 1e6, base.describe().c_str(), r.ms,
                r.conclusive ? "conclusive" : "inconclusive", r.tuning.describe().c_str(), r.ratioToDefault, r.gbps,
                hugePages().c_str(), r.summary().c_str());
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
                total / 1e6, threads == 1 ? "thread CPU time" : "wall time", hugePages().c_str());
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
              threads == 1 ? "thread CPU time" : "wall time", hugePages().c_str());
  return 0;
}
