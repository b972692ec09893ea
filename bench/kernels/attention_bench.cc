// packedAttention (native/src/encoder/packed_attention.cc), the encoders' and vision towers'
// bidirectional attention, against a double-precision reference and on the clock.
//   attention_bench check [threads=2]
//     every head size the families use (8 .. 128, multiples of 8, 16 and not), inputs of 1 to
//     300 tokens packed end to end; prints the worst relative error and exits 1 above 1e-5
//   attention_bench time [threads=1] [heads=12] [headDim=32] [inputs=16] [rounds=7]
//     `inputs` inputs whose lengths step evenly through 16 .. 256 (bench:embed's texts; the
//     default is all-MiniLM-L6-v2's heads), one layer's attention: the median of `rounds`
//     calls after one warm-up, in ms and GFLOP/s (4 · n² · heads · headDim per input)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "encoder/packed_attention.h"

using namespace prism;

namespace {

struct Batch {
  int64_t heads, headDim;
  std::vector<int32_t> offsets;
  std::vector<float> qkv;
  int64_t tokens() const { return offsets.back(); }
  int32_t inputs() const { return static_cast<int32_t>(offsets.size() - 1); }
};

Batch makeBatch(int64_t heads, int64_t headDim, const std::vector<int32_t>& lengths, uint32_t seed) {
  Batch b{heads, headDim, {0}, {}};
  for (int32_t n : lengths) b.offsets.push_back(b.offsets.back() + n);
  b.qkv.resize(static_cast<size_t>(b.tokens() * 3 * heads * headDim));
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (float& v : b.qkv) v = g(rng);
  return b;
}

std::vector<float> run(ThreadPool& pool, const Batch& b, std::vector<std::vector<float>>& scratch) {
  std::vector<float> out(static_cast<size_t>(b.tokens() * b.heads * b.headDim));
  packedAttention(pool, b.qkv.data(), out.data(), b.offsets.data(), b.inputs(), b.heads, b.headDim, scratch);
  return out;
}

// softmax(q·K / sqrt(hd)) · V per (input, head, query), in double.
std::vector<double> reference(const Batch& b) {
  const int64_t hd = b.headDim, H = b.heads, D = H * hd, ld = 3 * D;
  std::vector<double> out(static_cast<size_t>(b.tokens() * D));
  for (int32_t s = 0; s < b.inputs(); s++) {
    const int64_t t0 = b.offsets[s], n = b.offsets[s + 1] - t0;
    for (int64_t h = 0; h < H; h++)
      for (int64_t i = 0; i < n; i++) {
        const float* q = &b.qkv[(t0 + i) * ld + h * hd];
        std::vector<double> w(n);
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n; j++) {
          double dot = 0;
          for (int64_t d = 0; d < hd; d++) dot += double(q[d]) * b.qkv[(t0 + j) * ld + D + h * hd + d];
          w[j] = dot / std::sqrt(double(hd));
          mx = std::max(mx, w[j]);
        }
        for (auto& x : w) sum += (x = std::exp(x - mx));
        for (int64_t d = 0; d < hd; d++) {
          double acc = 0;
          for (int64_t j = 0; j < n; j++) acc += w[j] * b.qkv[(t0 + j) * ld + 2 * D + h * hd + d];
          out[(t0 + i) * D + h * hd + d] = acc / sum;
        }
      }
  }
  return out;
}

int check(int threads) {
  ThreadPool pool(threads);
  std::vector<std::vector<float>> scratch(pool.size());  // left empty: packedAttention grows it
  const std::vector<std::vector<int32_t>> lengthSets = {{1}, {3}, {1, 2, 3, 4, 5}, {17, 4, 33}, {300}, {255, 16, 1, 129}};
  double worst = 0;
  for (int64_t hd : {8, 16, 24, 32, 40, 64, 72, 128})
    for (size_t k = 0; k < lengthSets.size(); k++) {
      const int64_t heads = hd >= 64 ? 2 : 3;
      const Batch b = makeBatch(heads, hd, lengthSets[k], static_cast<uint32_t>(hd * 31 + k));
      const std::vector<float> got = run(pool, b, scratch);
      const std::vector<double> want = reference(b);
      double err = 0, norm = 0;
      for (size_t i = 0; i < got.size(); i++) {
        err = std::max(err, std::abs(got[i] - want[i]));
        norm = std::max(norm, std::abs(want[i]));
      }
      const double rel = err / std::max(norm, 1e-30);
      worst = std::max(worst, rel);
      if (!(rel <= 1e-5)) {
        std::printf("FAIL headDim %lld, length set %zu: relative error %.3g\n", static_cast<long long>(hd), k, rel);
        return 1;
      }
    }
  std::printf("ok: 8 head sizes x 6 length sets, worst relative error %.3g\n", worst);
  return 0;
}

int time(int threads, int64_t heads, int64_t headDim, int inputs, int rounds) {
  std::vector<int32_t> lengths;
  double flops = 0;
  for (int i = 0; i < inputs; i++) {
    lengths.push_back(16 + (inputs > 1 ? 240 * i / (inputs - 1) : 0));
    flops += 4.0 * lengths.back() * lengths.back() * heads * headDim;
  }
  const Batch b = makeBatch(heads, headDim, lengths, 7);
  ThreadPool pool(threads);
  // Sized here, not by packedAttentionScratch, so an older packed_attention.cc (ATTENTION_SRC,
  // whose callers sized one score row per thread) times on the same binary.
  std::vector<std::vector<float>> scratch(pool.size(), std::vector<float>((headDim + 16) * 272));
  run(pool, b, scratch);
  std::vector<double> ms;
  for (int r = 0; r < rounds; r++) {
    const auto t0 = std::chrono::steady_clock::now();
    run(pool, b, scratch);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2];
  std::printf("threads %d, %d inputs of 16-256 tokens (%lld in all), %lld heads x %lld: %.3f ms, %.1f GFLOP/s\n",
              threads, inputs, static_cast<long long>(b.tokens()), static_cast<long long>(heads),
              static_cast<long long>(headDim), med, flops / med / 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  auto arg = [&](int i, long long fallback) { return argc > i ? std::atoll(argv[i]) : fallback; };
  if (mode == "check") return check(static_cast<int>(arg(2, 2)));
  const int threads = static_cast<int>(arg(2, 1)), inputs = static_cast<int>(arg(5, 16)), rounds = static_cast<int>(arg(6, 7));
  const int64_t heads = arg(3, 12), headDim = arg(4, 32);
  if (mode != "time" || threads < 1 || heads < 1 || headDim < 8 || headDim % 8 != 0 || inputs < 1 || rounds < 1)
    return std::fprintf(stderr, "usage: attention_bench check [threads] | time [threads] [heads] [headDim%%8==0] [inputs] [rounds]\n"), 2;
  return time(threads, heads, headDim, inputs, rounds);
}
