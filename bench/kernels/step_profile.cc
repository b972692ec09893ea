// Where a single-token decode step's matmul time goes, per matmul and per thread, on the
// layer shapes of a real model (random weights, DRAM-resident as in a real decode):
//   step_profile [threads=2] [type=Q4_0] [shape=3b] [rounds=12] [SETTING [SETTING_B]]
// shape: 1b (Llama-3.2-1B: 16 layers, hidden 2048, FFN 8192, 8 KV heads of 64), 3b (28 layers,
// hidden 3072, FFN 8192, 8 KV heads of 128) or 8b (Llama-3.1-8B: 32 layers, hidden 4096, FFN
// 14336, 8 KV heads of 128); each layer's fused qkv, o, gate+up and down as the engine fuses
// them (forward.cc), then the 32,000-row output head, all of `type`, in the engine's own
// layouts (prepareLinear) and matmul(), with the engine's idle prefetcher aimed as the forward
// pass aims it. SETTING: a decode tuning (kernels/decode_tuning.h), default the constants;
// with SETTING_B too, every round runs a pass of each (alternating which goes first) and the
// last line gives the median over rounds of B's pass time ÷ A's: a paired comparison of two
// settings in the same seconds (e.g. `off` against `split=steal`).
//
// Every round runs one pass over all matmuls per setting and one pass of the project's read
// loop (sustainedReadRate over as many bytes: the denominator of step-vs-read.ts and the size
// suite), alternating which goes first. Per matmul it stamps the call's start and end on the
// owner thread and, through the pool's idle hook (IdleWork::regionDone, called by each thread
// as it finishes its share), when each thread finished: busy = finish − start (the owner's
// includes the activation quantization before the region, the worker's its wake-up), idle =
// end − finish (a thread waiting at the join). Prints, per kind of matmul, bytes, median time
// per pass, GB/s and each thread's busy and idle time, then the pass against the read loop.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "system_info.h"
#include "weight_prefetch.h"

using namespace prism;

namespace {

double wall() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Shape {
  const char* name;
  int layers;
  int64_t hidden, ffn, kvDim;
};
constexpr Shape kShapes[] = {{"1b", 16, 2048, 8192, 512}, {"3b", 28, 3072, 8192, 1024}, {"8b", 32, 4096, 14336, 1024}};
constexpr int64_t kVocab = 32000;
constexpr int kKinds = 5;
const char* const kKindNames[kKinds] = {"qkv", "o", "gate+up", "down", "output head"};

// The engine's idle prefetcher, with each thread's finish time of the current region stamped.
class StampingIdle final : public IdleWork {
 public:
  StampingIdle(WeightPrefetcher& inner, int threads) : inner_(inner), done_(static_cast<size_t>(threads) * 8, 0.0) {}
  void regionDone(int thread) override {
    done_[static_cast<size_t>(thread) * 8] = wall();
    inner_.regionDone(thread);
  }
  bool step(int thread) override { return inner_.step(thread); }
  double done(int thread) const { return done_[static_cast<size_t>(thread) * 8]; }

 private:
  WeightPrefetcher& inner_;
  std::vector<double> done_;  // a cache line per thread
};

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const std::string typeName = argc > 2 ? argv[2] : "Q4_0";
  const std::string shapeName = argc > 3 ? argv[3] : "3b";
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 12;
  std::vector<DecodeTuning> settings(1);
  for (int a = 5; a < argc && a < 7; ++a) {
    DecodeTuning t;
    std::string why;
    if (std::string(argv[a]) != "off" && !parseDecodeTuning(argv[a], &t, &why))
      return std::fprintf(stderr, "%s\n", why.c_str()), 2;
    if (a == 5) settings[0] = t;
    else settings.push_back(t);
  }
  TensorType type;
  if (!typeFromName(typeName, &type)) return std::fprintf(stderr, "unknown type %s\n", typeName.c_str()), 2;
  const Shape* shape = nullptr;
  for (const Shape& s : kShapes)
    if (shapeName == s.name) shape = &s;
  if (shape == nullptr || threads < 1 || rounds < 1)
    return std::fprintf(stderr, "usage: step_profile [threads] [type] [1b|3b|8b] [rounds] [SETTING]\n"), 2;

  const int64_t D = shape->hidden, I = shape->ffn;
  const struct { int64_t rows, cols; } dims[kKinds] = {{D + 2 * shape->kvDim, D}, {D, D}, {2 * I, D}, {D, I}, {kVocab, D}};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 1);
  // mats[k][l]: kind k of layer l (the head: one).
  std::vector<std::vector<LinearWeight>> mats(kKinds);
  for (int k = 0; k < kKinds; ++k) {
    const int copies = k == 4 ? 1 : shape->layers;
    std::vector<float> w(static_cast<size_t>(dims[k].rows * dims[k].cols));
    for (auto& v : w) v = normal(rng) * 0.05f;
    std::vector<uint8_t> q(typeRowBytes(type, dims[k].cols) * dims[k].rows);
    quantizeReference(type, w.data(), dims[k].rows, dims[k].cols, q.data());
    for (int l = 0; l < copies; ++l) mats[k].push_back(prepareLinear(type, q.data(), dims[k].rows, dims[k].cols));
  }
  size_t total = 0, kindBytes[kKinds] = {};
  for (int k = 0; k < kKinds; ++k)
    for (auto& W : mats[k]) kindBytes[k] += W.bytes;
  for (size_t b : kindBytes) total += b;

  WeightPrefetcher prefetcher(threads);
  StampingIdle stamps(prefetcher, threads);
  ThreadPool pool(threads);
  pool.setIdleWork(&stamps);
  KernelScratch scratch;
  scratch.reserve(1, I, threads);
  std::vector<float> x(static_cast<size_t>(I)), y(static_cast<size_t>(std::max<int64_t>(2 * I, kVocab)));
  for (auto& v : x) v = normal(rng);

  // Per round and kind: time, and each thread's busy time, summed over the pass.
  struct Sums {
    double time = 0;
    std::vector<double> busy;
  };
  const size_t nSettings = settings.size();
  std::vector<std::vector<std::vector<Sums>>> perRound(nSettings);  // [setting][round][kind]
  std::vector<std::vector<double>> passTimes(nSettings);
  std::vector<double> readTimes;
  auto pass = [&](const DecodeTuning& tuning, std::vector<Sums>& sums) {
    scratch.setDecodeTuning(tuning);
    prefetcher.setEnabled(tuning.idlePrefetch);
    sums.assign(kKinds, Sums{0, std::vector<double>(static_cast<size_t>(threads), 0.0)});
    const double p0 = wall();
    auto one = [&](int k, const LinearWeight& W, const LinearWeight* next) {
      prefetcher.setNext(next);
      const double t0 = wall();
      matmul(W, x.data(), 1, W.cols, y.data(), W.rows, pool, scratch);
      const double t1 = wall();
      sums[k].time += t1 - t0;
      for (int i = 0; i < threads; ++i) sums[k].busy[static_cast<size_t>(i)] += (threads == 1 ? t1 : stamps.done(i)) - t0;
    };
    for (int l = 0; l < shape->layers; ++l)
      for (int k = 0; k < 4; ++k) {
        const LinearWeight* next = k < 3 ? &mats[k + 1][l] : l + 1 < shape->layers ? &mats[0][l + 1] : &mats[4][0];
        one(k, mats[k][l], next);
      }
    one(4, mats[4][0], &mats[0][0]);
    prefetcher.setNext(nullptr);
    return wall() - p0;
  };
  std::vector<Sums> scratchSums;
  for (const DecodeTuning& t : settings) pass(t, scratchSums);  // warm-up: page faults
  sustainedReadRate(static_cast<int64_t>(total), 1, threads);   // ... and the read buffer
  auto readTime = [&] {
    return static_cast<double>(total) / (sustainedReadRate(static_cast<int64_t>(total), 1, threads) * 1e9);
  };
  for (int r = 0; r < rounds; ++r) {
    // Order within the round: the read first on even rounds, last on odd ones; the settings
    // in turn, the first of the round alternating.
    if (r % 2 == 0) readTimes.push_back(readTime());
    for (size_t j = 0; j < nSettings; ++j) {
      const size_t i = (j + static_cast<size_t>(r)) % nSettings;
      std::vector<Sums> sums;
      passTimes[i].push_back(pass(settings[i], sums));
      perRound[i].push_back(std::move(sums));
    }
    if (r % 2 == 1) readTimes.push_back(readTime());
  }
  releaseReadBuffer();

  std::printf("%s %s isa=%s threads=%d, %d layers + head, %.0f MB per pass, %d rounds (wall time)\n", shape->name,
              typeName.c_str(), selectedIsa(), threads, shape->layers, total / 1e6, rounds);
  for (size_t si = 0; si < nSettings; ++si) {
    std::printf("setting %s\n", settings[si].describe().c_str());
    std::printf("%-12s %9s %9s %8s %6s", "matmul", "MB/pass", "ms/pass", "GB/s", "share");
    for (int i = 0; i < threads; ++i) std::printf("  t%d busy ms  idle ms", i);
    std::printf("\n");
    const double passMedian = median(passTimes[si]);
    double sumKinds = 0;
    for (int k = 0; k < kKinds; ++k) {
      std::vector<double> t;
      for (auto& s : perRound[si]) t.push_back(s[k].time);
      const double tm = median(t);
      sumKinds += tm;
      std::printf("%-12s %9.1f %9.2f %8.1f %5.1f%%", kKindNames[k], kindBytes[k] / 1e6, tm * 1e3, kindBytes[k] / tm / 1e9,
                  100 * tm / passMedian);
      for (int i = 0; i < threads; ++i) {
        std::vector<double> b, idle;
        for (auto& s : perRound[si]) {
          b.push_back(s[k].busy[static_cast<size_t>(i)]);
          idle.push_back(s[k].time - s[k].busy[static_cast<size_t>(i)]);
        }
        std::printf("  %10.2f %8.2f", median(b) * 1e3, median(idle) * 1e3);
      }
      std::printf("\n");
    }
    std::vector<double> ofRead;
    for (size_t r = 0; r < passTimes[si].size(); ++r) ofRead.push_back(readTimes[r] / passTimes[si][r]);
    std::printf("pass: median %.2f ms (%.1f GB/s; matmuls %.2f ms, %.2f ms between them), read loop %.1f GB/s, "
                "pass ÷ read %.3f (lowest %.3f)\n",
                passMedian * 1e3, total / passMedian / 1e9, sumKinds * 1e3, (passMedian - sumKinds) * 1e3,
                total / median(readTimes) / 1e9, median(ofRead), *std::min_element(ofRead.begin(), ofRead.end()));
  }
  if (nSettings == 2) {
    std::vector<double> ratio;
    for (size_t r = 0; r < passTimes[0].size(); ++r) ratio.push_back(passTimes[1][r] / passTimes[0][r]);
    std::printf("paired: %s ÷ %s pass time, median over %d rounds %.3f (range %.3f-%.3f)\n",
                settings[1].describe().c_str(), settings[0].describe().c_str(), rounds, median(ratio),
                *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()));
  }
  return 0;
}
