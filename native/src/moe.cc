// The mixture-of-experts FFN of one layer (Mixtral, Qwen3-MoE). A router scores every expert
// for every token; each token goes to its top `expertsUsed` experts, weighted by the softmax
// of the router logits over all experts (renormalised over the chosen ones when the model
// says so). The experts' matmuls are batched by expert, not by token: the step's tokens are
// grouped by the expert they chose, and each expert with work multiplies its own tokens in
// one gate-up and one down call (so a prefill of T tokens reads each chosen expert's weights
// once, not once per token). Outputs are summed into each token's row in expert order, so a
// token's result does not depend on what else is in the batch.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "context.h"
#include "simd.h"

namespace prism {

void Context::expertFfn(int64_t l, int64_t T) {
  const ExpertWeights& M = model_->layers[l].moe;
  const int64_t D = cfg_.hidden, E = cfg_.experts, K = cfg_.expertsUsed, I = cfg_.expertIntermediate;

  linear(M.router, xn_.data(), T, routerLogits_.data(), E, M.gateUp.front());

  // Top-k of the logits is top-k of the softmax; its weights are the softmax over all experts.
  forRange(T, E * 8, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; t++) {
      const float* logit = &routerLogits_[t * E];
      int32_t* pick = &expertChoice_[t * K];
      float* w = &expertWeight_[t * K];
      int64_t have = 0;
      for (int32_t x = 0; x < E; x++) {
        // Insertion into the sorted top-K; ties keep the lower expert id first (as torch.topk
        // does on CPU for equal values in practice; exact ties do not occur with real logits).
        if (have == K && logit[x] <= logit[pick[K - 1]]) continue;
        int64_t at = have < K ? have++ : K - 1;
        while (at > 0 && logit[pick[at - 1]] < logit[x]) {
          pick[at] = pick[at - 1];
          at--;
        }
        pick[at] = x;
      }
      const float mx = logit[pick[0]];
      float all = 0;
      for (int64_t x = 0; x < E; x++) all += std::exp(logit[x] - mx);
      float chosen = 0;
      for (int64_t k = 0; k < K; k++) chosen += w[k] = std::exp(logit[pick[k]] - mx) / all;
      if (cfg_.normTopK)
        for (int64_t k = 0; k < K; k++) w[k] /= chosen;
    }
  });

  // Group the (token, choice) slots by expert, in token order.
  for (auto& v : expertTokens_) v.clear();
  for (int64_t t = 0; t < T; t++)
    for (int64_t k = 0; k < K; k++) expertTokens_[expertChoice_[t * K + k]].push_back(static_cast<int32_t>(t * K + k));

  std::fill(tmp_.begin(), tmp_.begin() + T * D, 0.0f);
  for (int64_t x = 0; x < E; x++) {
    const std::vector<int32_t>& slots = expertTokens_[x];
    const int64_t n = static_cast<int64_t>(slots.size());
    if (n == 0) continue;
    forRange(n, D, [&](int64_t b, int64_t e, int) {
      for (int64_t r = b; r < e; r++) std::memcpy(&xe_[r * D], &xn_[(slots[r] / K) * D], D * sizeof(float));
    });
    // Prefetch the next expert this step uses while this one runs.
    int64_t nextX = x + 1;
    while (nextX < E && expertTokens_[nextX].empty()) nextX++;
    const LinearGroup& after = nextX < E ? M.gateUp[nextX] : model_->output;
    linear(M.gateUp[x], xe_.data(), n, gu_.data(), 2 * I, M.down[x]);
    forRange(n, I * 4, [&](int64_t b, int64_t e, int) {
      for (int64_t r = b; r < e; r++) gate(&gu_[r * 2 * I], &gu_[r * 2 * I + I], &act_[r * I], I);
    });
    linear(M.down[x], act_.data(), n, ye_.data(), D, after);
    forRange(n, D, [&](int64_t b, int64_t e, int) {
      // Rows of distinct slots of one expert are distinct tokens: no two threads add to one row.
      for (int64_t r = b; r < e; r++) {
        const float w = expertWeight_[slots[r]];
        float* out = &tmp_[(slots[r] / K) * D];
        const float* y = &ye_[r * D];
        for (int64_t i = 0; i < D; i++) out[i] += w * y[i];
      }
    });
  }
}

}  // namespace prism
