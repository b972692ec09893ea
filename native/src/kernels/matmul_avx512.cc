// AVX-512 kernels (built with AVX-512 flags; only called after the CPUID check).
#include "kernels/internal.h"

namespace prism::kernels {

bool matmulAvx512(const LinearWeight&, const float*, int64_t, int64_t, float*, int64_t, ThreadPool&,
                  KernelScratch&) {
  return false;
}

}  // namespace prism::kernels
