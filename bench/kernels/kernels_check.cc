// Correctness harness for the kernels outside the addon (the addon's tests in
// native/kernels.test.ts cover the same ground through the JS hooks):
//   kernels_check matmul                              every type × supported ISA vs reference
//   kernels_check quant TYPE ROWS COLS in.f32 out.bin      reference quantizer on a file
//   kernels_check dequant TYPE ROWS COLS in.bin out.f32    reference dequantizer on a file
// check_gguf.py drives the last two against the Python gguf package.
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <thread>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/planes.h"

using namespace prism;

namespace {

std::vector<char> readFile(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", path);
    std::exit(2);
  }
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void writeFile(const char* path, const void* data, size_t n) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}

TensorType parseType(const char* name) {
  TensorType t;
  if (!typeFromName(name, &t)) {
    std::fprintf(stderr, "unknown type %s\n", name);
    std::exit(2);
  }
  return t;
}

// Max over (t, r) of |y - yref| / (|W_r| · |x_t|): the error relative to the scale of the dot.
int checkMatmul() {
  const TensorType types[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0,
                              TensorType::Q4_0, TensorType::Q4_1, TensorType::Q4_K, TensorType::Q6_K,
                              TensorType::Q5_0, TensorType::Q5_1, TensorType::Q5_K, TensorType::Q3_K,
                              TensorType::Q2_K, TensorType::IQ4_NL, TensorType::IQ4_XS};
  std::vector<std::string> isas = {"reference", "avx2"};
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vnni"))
    isas.push_back("avx512");
  // The int16-activation kernels: AVX2's for every type; AVX-512's for Q4_0/Q4_1/Q4_K and
  // Q8_0 (the rest fall back to AVX2's).
  isas.push_back("avx2+int16");
  if (isas[2] == "avx512") isas.push_back("avx512+int16");
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0, 1);
  int failures = 0;
  for (TensorType type : types) {
    int64_t bv = typeBlockValues(type) == 1 ? 32 : typeBlockValues(type);
    // Shapes: tails of the row/token tiles, odd block counts, and (the last one) enough rows
    // and columns that the kernels' cache blocking splits rows into several groups.
    std::vector<std::array<int64_t, 3>> shapes;
    for (int64_t rows : {1, 5, 67})
      for (int64_t cols : {bv, bv * 3, bv * 18})
        for (int64_t n : {1, 3, 17, 64}) shapes.push_back({rows, cols, n});
    shapes.push_back({301, 1536, 37});
    std::vector<double> worstOfIsa(isas.size(), 0.0);
    for (auto [rows, cols, n] : shapes) {
      std::vector<float> w(rows * cols), x(n * cols);
      for (auto& v : w) v = normal(rng);
      for (auto& v : x) v = normal(rng);
      std::vector<uint8_t> q(typeRowBytes(type, cols) * rows);
      quantizeReference(type, w.data(), rows, cols, q.data());
      std::vector<float> wd(rows * cols);
      dequantizeReference(type, q.data(), rows, cols, wd.data());
      std::vector<double> yref(n * rows), rowNorm(rows), xNorm(n);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t k = 0; k < cols; ++k) rowNorm[r] += double(wd[r * cols + k]) * wd[r * cols + k];
        rowNorm[r] = std::sqrt(rowNorm[r]);
      }
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t k = 0; k < cols; ++k) xNorm[t] += double(x[t * cols + k]) * x[t * cols + k];
        xNorm[t] = std::sqrt(xNorm[t]);
        for (int64_t r = 0; r < rows; ++r) {
          double acc = 0;
          for (int64_t k = 0; k < cols; ++k) acc += double(wd[r * cols + k]) * x[t * cols + k];
          yref[t * rows + r] = acc;
        }
      }
      for (size_t i = 0; i < isas.size(); ++i) {
        const std::string& isa = isas[i];
        std::vector<float> y(n * rows, NAN);
        matmulForTest(type, q.data(), rows, cols, x.data(), n, y.data(), isa);
        double worst = 0;
        for (int64_t t = 0; t < n; ++t)
          for (int64_t r = 0; r < rows; ++r) {
            double e = std::fabs(y[t * rows + r] - yref[t * rows + r]) / (rowNorm[r] * xNorm[t] + 1e-30);
            if (!(e == e)) e = 1e9;  // NaN: never written
            worst = std::max(worst, e);
          }
        worstOfIsa[i] = std::max(worstOfIsa[i], worst);
        const bool exact = isa == "reference" || typeBlockValues(type) == 1;
        double limit = exact ? 1e-5 : isa.ends_with("+int16") ? 1e-4 : 1e-2;
        if (worst > limit) {
          std::printf("FAIL %s %s rows=%ld cols=%ld n=%ld rel.err=%.3g\n", typeName(type), isa.c_str(),
                      long(rows), long(cols), long(n), worst);
          ++failures;
        }
      }
    }
    {
      // matmul() itself with padded strides (ldx > cols, ldy > rows), as the forward pass
      // calls it, must leave the padding alone and agree with matmulForTest.
      int64_t rows = 13, cols = bv * 2, n = 9, ldx = cols + 5, ldy = rows + 3;
      std::vector<float> w(rows * cols), x(n * ldx, 1e30f), y(n * ldy, -7.0f), yt(n * rows);
      for (auto& v : w) v = normal(rng);
      for (int64_t t = 0; t < n; ++t)
        for (int64_t k = 0; k < cols; ++k) x[t * ldx + k] = normal(rng);
      std::vector<float> xc(n * cols);
      for (int64_t t = 0; t < n; ++t)
        for (int64_t k = 0; k < cols; ++k) xc[t * cols + k] = x[t * ldx + k];
      std::vector<uint8_t> q(typeRowBytes(type, cols) * rows);
      quantizeReference(type, w.data(), rows, cols, q.data());
      LinearWeight W = prepareLinear(type, q.data(), rows, cols);
      ThreadPool pool(2);
      KernelScratch scratch;
      scratch.reserve(n, cols, 2);
      matmul(W, x.data(), n, ldx, y.data(), ldy, pool, scratch);
      matmulForTest(type, q.data(), rows, cols, xc.data(), n, yt.data(), selectedIsa());
      for (int64_t t = 0; t < n; ++t)
        for (int64_t r = 0; r < ldy; ++r) {
          float want = r < rows ? yt[t * rows + r] : -7.0f;
          if (y[t * ldy + r] != want) {
            std::printf("FAIL %s strided matmul t=%ld r=%ld: %g vs %g\n", typeName(type), long(t), long(r),
                        y[t * ldy + r], want);
            ++failures;
            t = n;
            break;
          }
        }
    }
    std::printf("%-6s checked, worst relative error:", typeName(type));
    for (size_t i = 0; i < isas.size(); ++i) std::printf(" %s %.2g", isas[i].c_str(), worstOfIsa[i]);
    std::printf("\n");
  }
  std::printf("isas: ");
  for (const auto& i : isas) std::printf("%s ", i.c_str());
  std::printf("\n%s (%d failures)\n", failures ? "FAILED" : "ok", failures);
  return failures ? 1 : 0;
}

// The plane layouts' repacks are lossless: every value of the repacked rows dequantizes to
// the same float, bit for bit, as the GGUF blocks it came from (odd group counts included).
int checkRepacks() {
  const TensorType types[] = {TensorType::Q5_0, TensorType::Q5_1,   TensorType::Q5_K,  TensorType::Q3_K,
                              TensorType::Q2_K, TensorType::IQ4_NL, TensorType::IQ4_XS};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 1);
  int failures = 0;
  for (TensorType type : types) {
    const int64_t bv = typeBlockValues(type);
    for (int64_t cols : {bv, bv * 3, bv * 19}) {
      const int64_t rows = 5;
      std::vector<float> w(rows * cols), want(rows * cols), got(cols);
      for (auto& v : w) v = normal(rng) * (1 + 10 * (&v - w.data()) % 3);
      std::vector<uint8_t> q(typeRowBytes(type, cols) * rows);
      quantizeReference(type, w.data(), rows, cols, q.data());
      dequantizeReference(type, q.data(), rows, cols, want.data());
      WeightBytes packed;
      kernels::repackPlanes(type, q.data(), rows, cols, &packed);
      const kernels::Layout layout = kernels::planeLayoutFor(type);
      if (packed.size() != kernels::planeRowBytes(cols, layout) * rows ||
          kernels::planeRowBytes(cols, layout) != typeRowBytes(type, cols) * ((cols / 32 + 15) / 16 * 16) / (cols / 32)) {
        std::printf("FAIL %s cols=%ld: repacked row is %zu bytes, the file's %zu (padded to whole groups)\n",
                    typeName(type), long(cols), kernels::planeRowBytes(cols, layout), typeRowBytes(type, cols));
        ++failures;
      }
      for (int64_t r = 0; r < rows; ++r) {
        kernels::dequantizePlaneRow(packed.data(), cols, layout, r, got.data());
        if (std::memcmp(got.data(), &want[r * cols], cols * 4) != 0) {
          std::printf("FAIL %s cols=%ld row %ld: repacked values differ\n", typeName(type), long(cols), long(r));
          ++failures;
          break;
        }
      }
    }
  }
  std::printf("plane repacks %s\n", failures ? "FAILED" : "lossless");
  return failures;
}

// Thread pool: every index runs exactly once per run(), many runs back to back (hot
// workers) and after sleeps (cold workers); an exception from the owner's share propagates.
int checkPool() {
  int failures = 0;
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    std::vector<int64_t> counts(threads * 16, 0);
    auto task = [&](int i, int n) {
      if (n != threads) std::abort();
      counts[i * 16] += 1;
    };
    const int runs = 20000;
    for (int r = 0; r < runs; ++r) {
      pool.run(prism::TaskRef(task));
      if (r % 5000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (int i = 0; i < threads; ++i)
      if (counts[i * 16] != runs) {
        std::printf("FAIL pool threads=%d index %d ran %ld times\n", threads, i, long(counts[i * 16]));
        ++failures;
      }
    bool caught = false;
    auto throwing = [&](int i, int) {
      if (i == 0) throw std::runtime_error("owner share failed");
    };
    try {
      pool.run(prism::TaskRef(throwing));
    } catch (const std::runtime_error&) {
      caught = true;
    }
    if (!caught) {
      std::printf("FAIL pool threads=%d: exception not propagated\n", threads);
      ++failures;
    }
    pool.run(prism::TaskRef(task));  // still usable afterwards
  }
  std::printf("thread pool %s\n", failures ? "FAILED" : "ok");
  return failures;
}

// The idle work of the pool (weight_prefetch.h uses it): every thread reports the end of its
// share of each region once, waiting threads do idle steps, and nothing calls a removed one.
int checkIdleWork() {
  struct Counting final : prism::IdleWork {
    std::atomic<long> done[4] = {}, steps[4] = {};
    void regionDone(int thread) override { done[thread]++; }
    bool step(int thread) override {
      steps[thread]++;
      return true;
    }
  };
  int failures = 0;
  for (int threads : {2, 3}) {
    Counting idle;
    ThreadPool pool(threads);
    pool.setIdleWork(&idle);
    const int runs = 2000;
    auto quick = [](int, int) {};
    for (int r = 0; r < runs; ++r) pool.run(prism::TaskRef(quick));
    for (int i = 0; i < threads; ++i)
      if (idle.done[i] != runs) {
        std::printf("FAIL idle threads=%d: thread %d reported %ld region ends of %d\n", threads, i, long(idle.done[i]), runs);
        ++failures;
      }
    // Thread 0 (the owner) slow: the workers wait at the join and must have done idle steps;
    // then the last worker slow: the owner waits and must have too.
    const long before1 = idle.steps[1];
    auto ownerSlow = [](int i, int) {
      if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    };
    pool.run(prism::TaskRef(ownerSlow));
    const long before0 = idle.steps[0];
    auto workerSlow = [&](int i, int n) {
      if (i == n - 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    };
    pool.run(prism::TaskRef(workerSlow));
    if (idle.steps[1] == before1 || idle.steps[0] == before0) {
      std::printf("FAIL idle threads=%d: no idle steps while waiting (worker %ld, owner %ld)\n", threads,
                  long(idle.steps[1] - before1), long(idle.steps[0] - before0));
      ++failures;
    }
    // Removed: after one region (spins that began before it may still hold the old pointer),
    // nothing calls it again.
    pool.setIdleWork(nullptr);
    pool.run(prism::TaskRef(quick));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    long total = 0;
    for (int i = 0; i < threads; ++i) total += idle.done[i] + idle.steps[i];
    for (int r = 0; r < 100; ++r) pool.run(prism::TaskRef(ownerSlow));
    long after = 0;
    for (int i = 0; i < threads; ++i) after += idle.done[i] + idle.steps[i];
    if (after != total) {
      std::printf("FAIL idle threads=%d: called %ld times after removal\n", threads, after - total);
      ++failures;
    }
  }
  std::printf("thread pool idle work %s\n", failures ? "FAILED" : "ok");
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "matmul";
  if (cmd == "matmul") return checkPool() + checkIdleWork() + checkRepacks() + checkMatmul() ? 1 : 0;
  if ((cmd == "quant" || cmd == "dequant") && argc == 7) {
    TensorType type = parseType(argv[2]);
    int64_t rows = std::atoll(argv[3]), cols = std::atoll(argv[4]);
    auto in = readFile(argv[5]);
    size_t qbytes = typeRowBytes(type, cols) * rows;
    if (cmd == "quant") {
      if (in.size() != size_t(rows * cols) * 4) return std::fprintf(stderr, "bad input size\n"), 2;
      std::vector<uint8_t> out(qbytes);
      quantizeReference(type, reinterpret_cast<const float*>(in.data()), rows, cols, out.data());
      writeFile(argv[6], out.data(), out.size());
    } else {
      if (in.size() != qbytes) return std::fprintf(stderr, "bad input size\n"), 2;
      std::vector<float> out(rows * cols);
      dequantizeReference(type, reinterpret_cast<const uint8_t*>(in.data()), rows, cols, out.data());
      writeFile(argv[6], out.data(), out.size() * 4);
    }
    return 0;
  }
  std::fprintf(stderr, "usage: kernels_check [matmul | quant|dequant TYPE ROWS COLS IN OUT]\n");
  return 2;
}
