// The reference matmul: y = x · Wᵀ in f32 (accumulated in f64) with the weights dequantized
// row by row by their layout's reference dequantizer (layout_traits.h). The "truth" for
// tests, and the path PRISM_ISA=reference forces.
#include <vector>

#include "kernels/internal.h"
#include "kernels/layout_traits.h"

namespace prism::kernels {

// Rows are split across the pool; each thread reuses one row buffer (grown once,
// thread_local) so repeated calls do not allocate.
void matmulReference(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y,
                     int64_t ldy, ThreadPool& pool) {
  const auto dequantize = layoutTraits(W.layout).dequantizeRow;
  pool.parallelFor(W.rows, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> row;
    if (row.size() < static_cast<size_t>(W.cols)) row.resize(static_cast<size_t>(W.cols));
    for (int64_t r = begin; r < end; ++r) {
      dequantize(W, r, row.data());
      for (int64_t t = 0; t < n; ++t) {
        const float* xt = x + t * ldx;
        double acc = 0;
        for (int64_t k = 0; k < W.cols; ++k) acc += static_cast<double>(row[k]) * xt[k];
        y[t * ldy + r] = static_cast<float>(acc);
      }
    }
  });
}

}  // namespace prism::kernels
