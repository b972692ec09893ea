#include "encoder/pooling.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace prism {

void poolInput(const std::vector<PoolingMode>& modes, const float* hidden, int64_t n, int64_t D, float* out) {
  for (size_t k = 0; k < modes.size(); k++) {
    float* o = out + k * D;
    switch (modes[k]) {
      case PoolingMode::Cls: std::memcpy(o, hidden, D * sizeof(float)); break;
      case PoolingMode::LastToken: std::memcpy(o, hidden + (n - 1) * D, D * sizeof(float)); break;
      case PoolingMode::Max:
        std::memcpy(o, hidden, D * sizeof(float));
        for (int64_t t = 1; t < n; t++)
          for (int64_t i = 0; i < D; i++) o[i] = std::max(o[i], hidden[t * D + i]);
        break;
      case PoolingMode::Mean:
      case PoolingMode::MeanSqrtLen:
      case PoolingMode::WeightedMean: {
        // Sums in double: a long input's mean must not depend on the order of thousands of adds.
        std::vector<double> sum(D, 0.0);
        double weights = 0;
        for (int64_t t = 0; t < n; t++) {
          const double w = modes[k] == PoolingMode::WeightedMean ? static_cast<double>(t + 1) : 1.0;
          weights += w;
          for (int64_t i = 0; i < D; i++) sum[i] += w * hidden[t * D + i];
        }
        const double div = modes[k] == PoolingMode::MeanSqrtLen ? std::sqrt(static_cast<double>(n)) : weights;
        for (int64_t i = 0; i < D; i++) o[i] = static_cast<float>(sum[i] / div);
        break;
      }
    }
  }
}

}  // namespace prism
