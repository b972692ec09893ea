// AVX2 kernels (baseline build flags). Fast paths come next; until then every weight falls
// back to the reference kernel.
#include "kernels/internal.h"

namespace prism::kernels {

bool matmulAvx2(const LinearWeight&, const float*, int64_t, int64_t, float*, int64_t, ThreadPool&,
                KernelScratch&) {
  return false;
}

}  // namespace prism::kernels
