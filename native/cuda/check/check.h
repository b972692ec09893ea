// The kernel check (kernel_check.cc): each CUDA kernel, run through libprism_cuda.so's
// check entry points on random inputs, against the CPU reference of the same computation
// (native/src/kernels/reference.cc for the weight types, native/src/sampler.cc for sampling,
// plain double-precision loops here for the rest).
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "../host/cuda_library.h"

namespace prism::cudacheck {

struct Options {
  const cuda::CudaLibrary* lib = nullptr;
  int device = 0;
  bool quick = false;  // small shapes (the CPU emulation in CI)
  uint64_t seed = 1;
};

// One line of the report: a kernel, how many cases ran, the worst error against its bound.
struct Result {
  std::string kernel;
  int cases = 0;
  double worst = 0;  // the largest error measure seen
  double bound = 0;
  std::string failure;  // the first failing case, empty when all passed
  void observe(double err, const std::string& label) {
    cases++;
    if (!(err <= worst)) worst = err;  // NaN sticks
    if (!(err <= bound) && failure.empty()) failure = label + ": error " + std::to_string(err);
  }
  bool ok() const { return failure.empty() && cases > 0; }
};

inline std::vector<float> randomVector(std::mt19937_64& rng, size_t n, float scale, float mean = 0) {
  std::normal_distribution<float> d(mean, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// ‖a − b‖ / ‖b‖ (NaN anywhere gives NaN).
inline double relError(const float* a, const double* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += b[i] * b[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}
inline double relError(const std::vector<float>& a, const std::vector<double>& b) {
  return relError(a.data(), b.data(), b.size());
}

uint16_t toHalf(float f);
float fromHalf(uint16_t h);

Result checkDequantize(const Options& o);
Result checkMatmulGemv(const Options& o);
Result checkMatmulGemm(const Options& o);
std::vector<Result> checkMatmulFast(const Options& o);
Result checkRmsNorm(const Options& o);
Result checkSwiglu(const Options& o);
std::vector<Result> checkRopeKv(const Options& o);
Result checkAttention(const Options& o);
Result checkSampling(const Options& o);

}  // namespace prism::cudacheck
