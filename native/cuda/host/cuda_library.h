// Finds and loads libprism_cuda.so (the CUDA backend, native/cuda/prism_cuda.h) at run time,
// so that the addon and the kernel-check program build and run on machines without CUDA.
// Used by both; it needs no CUDA headers.
#pragma once
#include <string>

#include "../prism_cuda.h"

namespace prism::cuda {

struct CudaLibrary {
  std::string path;
#define PC_FN(name) decltype(&::name) name = nullptr;
#include "cuda_functions.inc"
#undef PC_FN
  // Throws std::runtime_error carrying pc_last_error() when `status` is not 0.
  void check(int status, const char* what) const;
};

// The library at `path` (loaded once per path and kept). Throws std::runtime_error naming
// the file and the reason (not there, not loadable, another interface version).
const CudaLibrary& loadCudaLibrary(const std::string& path);

}  // namespace prism::cuda
