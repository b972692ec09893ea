// kernel_check: runs every CUDA kernel of libprism_cuda.so on random inputs and compares it
// with the CPU reference; prints one line per kernel and exits 1 when any disagrees.
//
//   kernel_check [--lib PATH] [--device N] [--quick] [--seed N]
//
// --lib defaults to build/Release/libprism_cuda.so (the GPU build); the tests run it against
// build/cuda-emu/libprism_cuda_emu.so (the CPU emulation build) with --quick.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "check.h"

using namespace prism::cudacheck;

int main(int argc, char** argv) {
  std::string lib = "build/Release/libprism_cuda.so";
  Options o;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    if (a == "--lib" && i + 1 < argc) lib = argv[++i];
    else if (a == "--device" && i + 1 < argc) o.device = std::atoi(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) o.seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--quick") o.quick = true;
    else {
      std::fprintf(stderr, "usage: kernel_check [--lib PATH] [--device N] [--quick] [--seed N]\n");
      return 2;
    }
  }
  try {
    o.lib = &prism::cuda::loadCudaLibrary(lib);
    int32_t count = 0;
    o.lib->check(o.lib->pc_device_count(&count), "pc_device_count");
    if (o.device < 0 || o.device >= count) {
      std::fprintf(stderr, "kernel_check: device %d not found (%d devices)\n", o.device, count);
      return 1;
    }
    pc_device_info info{};
    o.lib->check(o.lib->pc_device_info_get(o.device, &info), "pc_device_info_get");
    std::printf("kernel_check: %s (%s), device %d: %s\n", lib.c_str(), o.quick ? "quick" : "full", o.device, info.name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel_check: %s\n", e.what());
    return 1;
  }
  using Check = std::vector<Result> (*)(const Options&);
  const Check checks[] = {
      [](const Options& x) { return std::vector<Result>{checkDequantize(x)}; },
      [](const Options& x) { return std::vector<Result>{checkMatmulGemv(x)}; },
      [](const Options& x) { return std::vector<Result>{checkMatmulGemm(x)}; },
      [](const Options& x) { return checkMatmulFast(x); },
      [](const Options& x) { return std::vector<Result>{checkRmsNorm(x)}; },
      [](const Options& x) { return std::vector<Result>{checkSwiglu(x)}; },
      [](const Options& x) { return checkRopeKv(x); },
      [](const Options& x) { return std::vector<Result>{checkAttention(x)}; },
      [](const Options& x) { return std::vector<Result>{checkSampling(x)}; },
  };
  bool allOk = true;
  std::printf("%-48s %6s %12s %10s %8s %s\n", "kernel", "cases", "worst error", "bound", "result", "");
  for (Check c : checks) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Result> results;
    try {
      results = c(o);
    } catch (const std::exception& e) {
      results.push_back(Result{"(a check stopped)", 0, 0, 0, e.what()});
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const Result& r : results) {
      allOk = allOk && r.ok();
      std::printf("%-48s %6d %12.3g %10.3g %8s %.1fs %s\n", r.kernel.c_str(), r.cases, r.worst, r.bound,
                  r.ok() ? "ok" : "FAIL", s, r.failure.c_str());
    }
    std::fflush(stdout);
  }
  std::printf("kernel_check: %s\n", allOk ? "all kernels agree with the CPU reference" : "FAILED");
  return allOk ? 0 : 1;
}
