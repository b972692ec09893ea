#include "prompt_scores.h"

#include <algorithm>
#include <cmath>

#include "sampler.h"

namespace prism {

PromptRowScore scorePromptRow(const float* z, int64_t V, int32_t target, int32_t top, int32_t* idx, int32_t* topIds,
                              float* topValues) {
  const double lse = logSumExpRow(z, V);
  const float at = z[target];
  int32_t higher = 0;
  for (int64_t t = 0; t < V; t++) higher += z[t] > at ? 1 : 0;
  PromptRowScore out;
  out.logprob = static_cast<float>(at - lse);
  out.rank = higher + 1;
  if (top > 0) {
    for (int64_t t = 0; t < V; t++) idx[t] = static_cast<int32_t>(t);
    const int64_t k = std::min<int64_t>(top, V);
    auto byLogit = [z](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); };
    std::partial_sort(idx, idx + k, idx + V, byLogit);
    for (int64_t j = 0; j < k; j++) {
      topIds[j] = idx[j];
      topValues[j] = static_cast<float>(z[idx[j]] - lse);
    }
  }
  return out;
}

}  // namespace prism
