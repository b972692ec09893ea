// The mixture-of-experts FFN of one layer (Mixtral, Qwen3-MoE). A router scores every expert
// for every token; each token goes to its top `expertsUsed` experts, weighted by the softmax
// of the router logits over all experts (renormalised over the chosen ones when the model
// says so). The experts' matmuls are batched by expert, not by token: the step's tokens are
// grouped by the expert they chose, and each expert with work multiplies its own tokens in
// one gate-up and one down call (so a prefill of T tokens reads each chosen expert's weights
// once, not once per token). Outputs are summed into each token's row in expert order, so a
// token's result does not depend on what else is in the batch.
//
// A one-token step (decode) takes another route to the same numbers: per expert the batched
// route opens a parallel region for each of its three small matrices (Granite-3.1-1B-A400M:
// 8 experts × 3 matrices of 512 × 1024 per layer, ~300 KB each), and each region's join and
// cold start cost more than its rows take to stream. oneTokenExperts runs every chosen
// expert's gate and up (and SwiGLU) in one region and every down (and the weighted sum) in a
// second: each pool thread takes the same row range of every expert's matrices.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "context.h"
#include "kernels/prefetch_lines.h"
#include "kernels/q4xv.h"
#include "kernels/q8xv.h"
#include "simd.h"

namespace prism {

namespace {

// Rows [r0, r1) of W as a weight of their own: every layout keeps a row's bytes together at a
// fixed stride (W.bytes / W.rows; Layout::Q4XV / Q8XV a 16-row group's, see rowsSplittable), so a row
// range is a plain sub-buffer and the kernels give each of its rows the bits they give that
// row in the whole matrix.
LinearWeight rowRange(const LinearWeight& W, int64_t r0, int64_t r1) {
  LinearWeight v;
  v.type = W.type;
  v.rows = r1 - r0;
  v.cols = W.cols;
  v.layout = W.layout;
  v.precision = W.precision;
  const size_t rowBytes = W.bytes / static_cast<size_t>(W.rows);
  v.data = weightData(W) + rowBytes * static_cast<size_t>(r0);
  v.bytes = rowBytes * static_cast<size_t>(r1 - r0);
  return v;
}

// Layout::Q4XV and Layout::Q8XV (kernels/q4xv.h, kernels/q8xv.h) keep 16 rows per record: their stride
// holds for slices that start at a multiple of 16 rows (rowBound's, where the group's offsets
// are such multiples: oneTokenFits) of a matrix of whole groups.
bool groupedRows(const LinearWeight& W) {
  return W.layout == kernels::Layout::Q4XV || W.layout == kernels::Layout::Q8XV;
}
bool rowsSplittable(const LinearWeight& W) {
  if (groupedRows(W)) return W.rows > 0 && W.rows % kernels::kQ4XVRows == 0;
  return W.rows > 0 && W.bytes % static_cast<size_t>(W.rows) == 0;
}

// Thread i's rows of a matrix of `rows` rows split over n threads: boundaries at multiples of
// 16 rows, so that a slice of gate/up values starts where simd::swiglu's 8-wide steps start
// in the whole row (the same element takes the same vector or scalar path either way).
int64_t rowBound(int64_t rows, int i, int n) {
  if (i >= n) return rows;
  return std::min(rows, rows * i / n / 16 * 16);
}

// Output rows [lo, hi) of a group of parts (e.g. an expert's gate and up, one matrix of 2I
// rows when both have one type, as model.cc builds them) for one token x, each part's share
// through its own rows.
void groupRows(const LinearGroup& g, int64_t lo, int64_t hi, const float* x, float* y, ThreadPool& pool,
               KernelScratch& scratch) {
  for (const LinearGroup::Part& p : g.parts) {
    const int64_t a = std::max(lo, p.outOffset), b = std::min(hi, p.outOffset + p.w.rows);
    if (a < b) matmul(rowRange(p.w, a - p.outOffset, b - p.outOffset), x, 1, g.inFeatures, y + a, b - a, pool, scratch);
  }
}

// The decode tiles prefetch within a matrix only: a thread moving on to its next rows would
// start them from memory. So it asks for the first bytes of the next rows before it starts
// on the current ones.
constexpr size_t kAheadBytes = 4 * 1024;
void prefetchRows(const LinearGroup& g, int64_t lo, int64_t hi) {
  for (const LinearGroup::Part& p : g.parts) {
    const int64_t a = std::max(lo, p.outOffset), b = std::min(hi, p.outOffset + p.w.rows);
    if (a >= b) continue;
    const size_t rowBytes = p.w.bytes / static_cast<size_t>(p.w.rows);
    const uintptr_t at = reinterpret_cast<uintptr_t>(weightData(p.w)) + rowBytes * static_cast<size_t>(a - p.outOffset);
    kernels::prefetchLines(PrefetchHint::T1, at, at + std::min(kAheadBytes, rowBytes * static_cast<size_t>(b - a)));
    return;
  }
}

// Whether the chosen experts' groups have the shapes oneTokenExperts slices (gate/up 2I
// outputs, down D) with every part at a fixed row stride.
bool oneTokenFits(const ExpertWeights& M, const int32_t* pick, int64_t K, int64_t D, int64_t I) {
  auto splittable = [I](const LinearGroup& g, int64_t out) {
    if (g.outFeatures != out || g.parts.empty()) return false;
    for (const LinearGroup::Part& p : g.parts) {
      if (!rowsSplittable(p.w)) return false;
      if (groupedRows(p.w) && (p.outOffset % kernels::kQ4XVRows != 0 || I % kernels::kQ4XVRows != 0))
        return false;
    }
    return true;
  };
  for (int64_t k = 0; k < K; k++)
    if (!splittable(M.gateUp[pick[k]], 2 * I) || !splittable(M.down[pick[k]], D)) return false;
  return true;
}

}  // namespace

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

  if (T == 1 && pool_.size() > 1 && opts_.maxBatchTokens >= K && oneTokenFits(M, &expertChoice_[0], K, D, I)) {
    oneTokenExperts(l);
    return;
  }

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

// The batched route's numbers for one token, in two regions (see the top of the file): the
// experts' gate/up rows and SwiGLU, then their down rows, each thread on the same row range of
// every expert. Every output row is the kernels' row (rowRange), and every output element
// sums the experts in ascending id from zero, as the batched route does.
void Context::oneTokenExperts(int64_t l) {
  const ExpertWeights& M = model_->layers[l].moe;
  const int64_t D = cfg_.hidden, K = cfg_.expertsUsed, I = cfg_.expertIntermediate;
  const int n = pool_.size();
  if (expertLanes_.empty()) {
    for (int i = 0; i < n; i++) {
      expertLanes_.push_back(std::make_unique<ExpertLane>());
      expertLanes_.back()->scratch.reserve(1, std::max(D, I), 1);
    }
    expertOrder_.reserve(K);
  }
  for (auto& lane : expertLanes_) lane->scratch.setDecodeTuning(scratch_.decodeTuning());
  expertOrder_.clear();
  for (int64_t k = 0; k < K; k++) expertOrder_.emplace_back(expertChoice_[k], expertWeight_[k]);
  std::sort(expertOrder_.begin(), expertOrder_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

  // gate/up of expert k (in id order) → gu_ row k, SwiGLU → act_ row k.
  auto gateUp = [&](int i, int) {
    ExpertLane& lane = *expertLanes_[i];
    const int64_t a = rowBound(I, i, n), b = rowBound(I, i + 1, n);
    if (a >= b) return;
    for (int64_t k = 0; k < K; k++) {
      const LinearGroup& g = M.gateUp[expertOrder_[k].first];
      float* gu = &gu_[k * 2 * I];
      prefetchRows(g, I + a, I + b);
      groupRows(g, a, b, xn_.data(), gu, lane.pool, lane.scratch);
      if (k + 1 < K) prefetchRows(M.gateUp[expertOrder_[k + 1].first], a, b);
      groupRows(g, I + a, I + b, xn_.data(), gu, lane.pool, lane.scratch);
      gate(gu + a, gu + I + a, &act_[k * I + a], b - a);
    }
  };
  // down of expert k → ye_ row k, weighted into tmp_.
  auto down = [&](int i, int) {
    ExpertLane& lane = *expertLanes_[i];
    const int64_t c = rowBound(D, i, n), d = rowBound(D, i + 1, n);
    if (c >= d) return;
    float* out = &tmp_[0];
    std::fill(out + c, out + d, 0.0f);
    for (int64_t k = 0; k < K; k++) {
      if (k + 1 < K) prefetchRows(M.down[expertOrder_[k + 1].first], c, d);
      float* y = &ye_[k * D];
      groupRows(M.down[expertOrder_[k].first], c, d, &act_[k * I], y, lane.pool, lane.scratch);
      const float w = expertOrder_[k].second;
      for (int64_t r = c; r < d; r++) out[r] += w * y[r];
    }
  };
  prefetcher_.setNext(nullptr);
  pool_.run(TaskRef(gateUp));
  const LinearGroup& next = l + 1 < cfg_.layers ? model_->layers[l + 1].qkv : model_->output;
  prefetcher_.setNext(next.parts.empty() ? nullptr : &next.parts.front().w);
  pool_.run(TaskRef(down));
  prefetcher_.setNext(nullptr);
}

}  // namespace prism
