// The pooling heads: one input's last hidden states [n × D] -> its vector, each mode's D
// values side by side in the spec's order (sentence-transformers concatenates them so).
// No normalisation here: the engine normalises after any Matryoshka truncation.
#pragma once
#include <cstdint>
#include <vector>

#include "encoder/pooling_spec.h"

namespace prism {

// cls: the first token; max: per dimension; mean: the average; mean_sqrt_len_tokens: the sum
// over sqrt(n); weightedmean: token i weighted i + 1; lasttoken: the last token.
// out: [modes.size() × D].
void poolInput(const std::vector<PoolingMode>& modes, const float* hidden, int64_t n, int64_t D, float* out);

}  // namespace prism
