// An inference context: the paged KV cache, a thread pool and every scratch buffer a step
// needs, all sized once at creation for (maxBatchTokens, maxSeqs), bound to one model.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "decode_tuning/choose.h"
#include "kernels/kernels.h"
#include "kv_layout.h"
#include "lazy_zero.h"
#include "late_masks.h"
#include "lora.h"
#include "model.h"
#include "sampler.h"
#include "step_plan.h"
#include "thread_pool.h"
#include "weight_prefetch.h"

namespace prism {

struct ContextOptionsData {
  // kvBlocks: pages in the KV pool (one page per block, every layer, unless the model keeps
  // layer groups apart: kv_layout.h).
  int64_t kvBlocks = 0, blockSize = 0, maxBatchTokens = 0, maxSeqs = 0;
  int threads = 1;
  int64_t maxLoras = 0, maxLoraRank = 0;  // adapter slots and the largest rank they take
  std::string decodeTuning;  // decode_tuning/choose.h: "" (environment, else host), auto, measure, host, off or a setting
};

class Context {
 public:
  Context(std::shared_ptr<Model> model, const ContextOptionsData& opts);

  // Runs one validated plan (see addon validation) on the calling thread + the pool. A plan
  // with lateMaskRows > 0 waits for `lateMasks` after the forward pass, before sampling.
  void step(StepPlanData& plan, StepResultData& out);

  const std::shared_ptr<Model>& model() const { return model_; }
  int64_t vocab() const { return model_->cfg.vocab; }
  const ContextOptionsData& options() const { return opts_; }
  const KvLayout& kvLayout() const { return kv_; }
  size_t kvBytes() const { return (kCache_.size() + vCache_.size()) * sizeof(uint16_t); }
  int threads() const { return pool_.size(); }
  // How single-token decode prefetches and tiles on this host, and how that was decided.
  const DecodeTuningChoice& decodeTuning() const { return decodeTuning_; }

  // The plan/result buffers the addon fills and reads (reused step after step).
  StepPlanData plan;
  StepResultData result;
  std::atomic<bool> busy{false};
  // Test hook (failNextStepsForTest): the next this-many steps throw mid-forward.
  std::atomic<int> failSteps{0};
  // Test hook (stallNextStepForTest): the next step sleeps this long after layer 0 (a step that
  // does not return, as the engine's callers see it).
  std::atomic<int> stallStepMs{0};
  // Masks of the running step that arrive while its forward pass runs (structured output).
  LateMasks lateMasks;
  // Resident adapters (lora.h); bound and unbound only while no step runs.
  LoraRunner& lora() { return lora_; }
  const LoraRunner& lora() const { return lora_; }

  // KV transfer between engines (kv_transfer.cc): one layer of one block is K then V of all
  // its KV heads, blockSize × headDim F16 values each. The copies take layers [l0, l0 + n) of
  // `block`; the addon checks the ranges. Only blocks no running step writes are copied.
  int64_t kvBlockLayerBytes() const;
  void readKvBlock(int64_t block, int64_t l0, int64_t n, uint8_t* out) const;
  void writeKvBlock(int64_t block, int64_t l0, int64_t n, const uint8_t* in);

 private:
  // Runs f(begin, end, thread) over [0, count): inline when the work is small (decode's
  // per-token vector ops), else split across the pool.
  template <typename F>
  void forRange(int64_t count, int64_t workPerItem, F&& f);
  void copyBlocks(const StepPlanData& plan);
  void embed(const StepPlanData& plan);
  void ropeTables(const StepPlanData& plan);
  void layer(int64_t l, const StepPlanData& plan);
  void attention(int64_t l, const StepPlanData& plan);
  // The FFN of layer l for T tokens: normed input in xn_, output in tmp_.
  void denseFfn(int64_t l, int64_t T);
  void expertFfn(int64_t l, int64_t T);  // mixture of experts (moe.cc)
  void oneTokenExperts(int64_t l);        // ... its one-token (decode) path
  void gate(const float* gate, const float* up, float* out, int64_t n) const;
  // `after`: the group the step multiplies by next (its weights are prefetched by threads
  // that wait, weight_prefetch.h).
  void linear(const LinearGroup& g, const float* x, int64_t n, float* y, int64_t ldy, const LinearGroup& after);
  // The base linear of a LoRA site, prefetching the site's adapter weights while it runs.
  void loraLinear(const LinearGroup& g, int64_t layer, LoraSite site, const float* x, int64_t n, float* y,
                  int64_t ldy, const LinearGroup& after);
  void outputHead(const StepPlanData& plan, StepResultData& out);
  void sampleAll(const StepPlanData& plan, StepResultData& out);
  // Prompt logprobs: the rows plan.promptTargets names, kPromptRows at a time (after sampling:
  // xSel_ is free again), so a long prefill chunk never needs [T × vocab] logits at once.
  void promptScores(const StepPlanData& plan, StepResultData& out);
  static constexpr int64_t kPromptRows = 64;
  void injectFault();
  void injectStall();

  // K / V of one KV head of `layer` in `page` (a block-table entry: see pageOf).
  uint16_t* kAt(int64_t layer, int64_t page, int64_t kvHead) { return kCache_.data() + kvOffset(layer, page, kvHead); }
  uint16_t* vAt(int64_t layer, int64_t page, int64_t kvHead) { return vCache_.data() + kvOffset(layer, page, kvHead); }
  int64_t kvOffset(int64_t layer, int64_t page, int64_t kvHead) const {
    return (((kv_.layerSlot[layer] * opts_.kvBlocks + page) * cfg_.kvHeads + kvHead) * opts_.blockSize) * cfg_.headDim;
  }
  // The page that holds `layer`'s K/V for block `blk` of a sequence whose table is `table`.
  int32_t pageOf(const int32_t* table, int64_t blk, int64_t layer) const {
    return table[blk * kv_.pagesPerBlock + kv_.layerPage[layer]];
  }
  const uint16_t* kAt(int64_t layer, int64_t page) const { return kCache_.data() + kvOffset(layer, page, 0); }
  const uint16_t* vAt(int64_t layer, int64_t page) const { return vCache_.data() + kvOffset(layer, page, 0); }

  std::shared_ptr<Model> model_;
  const ModelConfig& cfg_;
  ContextOptionsData opts_;
  const KvLayout kv_ = KvLayout::forModel(cfg_);
  // Before pool_: the pool's threads use it until the pool is destroyed.
  WeightPrefetcher prefetcher_;
  static constexpr int64_t kPrefetchMaxTokens = 8;
  ThreadPool pool_;
  KernelScratch scratch_;
  DecodeTuningChoice decodeTuning_;
  int64_t qDim_, kvDim_, qkvDim_;

  // KV cache in F16: [slot in page][page][kvHead][position][headDim] for K and for V (a page's
  // slots are its layers; with one page per block of every layer: [layer][block]...).
  HugePageVector<uint16_t> kCache_, vCache_;  // huge pages where the kernel gives them (kernels.h)
  // Activations, [maxBatchTokens × width]: sized for the largest prefill, resident only
  // for the rows steps have used (lazy_zero.h).
  LazyZeroVector<float> x_, xn_, qkv_, attn_, gu_, act_, tmp_;
  std::vector<RopeSpec> ropes_;              // the global RoPE, then the sliding layers' if different
  LazyZeroVector<float> ropeCos_, ropeSin_;  // per RoPE: [maxBatchTokens × ropeDim/2]
  std::vector<float> invFreq_;               // per RoPE: [ropeDim/2]
  const float embedScale_ = static_cast<float>(cfg_.embedScale);
  // Mixture of experts (moe.cc): router logits [T × experts], each token's chosen experts
  // and their weights [T × expertsUsed], the tokens each expert got this layer, and the
  // gathered inputs / outputs of one expert's tokens [T × hidden].
  std::vector<float> routerLogits_;
  std::vector<int32_t> expertChoice_;
  std::vector<float> expertWeight_;
  std::vector<std::vector<int32_t>> expertTokens_;
  LazyZeroVector<float> xe_, ye_;
  // One-token steps run all chosen experts in two parallel regions: each pool thread takes its
  // rows of every expert's matrices through its own one-thread pool and kernel scratch.
  struct ExpertLane {
    ThreadPool pool{1};
    KernelScratch scratch;
  };
  std::vector<std::unique_ptr<ExpertLane>> expertLanes_;
  std::vector<std::pair<int32_t, float>> expertOrder_;  // the token's chosen experts by id, with weights
  std::vector<int32_t> tokenSeq_;         // sequence of each token of the step
  // Attention work tiles: (first token, count) runs of up to kTile tokens of one sequence.
  static constexpr int32_t kTile = 8;
  std::vector<std::pair<int32_t, int32_t>> tiles_;
  std::vector<int32_t> outRows_;          // tokens whose logits are computed
  std::vector<int32_t> seqOutRow_;        // per sequence: its first row in logits_ (1 + draft tokens rows), -1 if none
  LazyZeroVector<float> xSel_;            // [maxBatchTokens × hidden]
  LazyZeroVector<float> logits_;          // [rows × vocab]
  std::vector<float> promptLogits_;       // [kPromptRows × vocab], sized at a step's first prompt rows
  std::vector<int32_t> promptRows_;       // tokens of the step whose prompt logprobs are asked for
  std::vector<std::vector<float>> attnScratch_;  // per thread: K/V block in f32, scores and accumulators per head
  std::vector<SamplerScratch> samplerScratch_;   // per thread
  LoraRunner lora_;
};

template <typename F>
void Context::forRange(int64_t count, int64_t workPerItem, F&& f) {
  prism::forRange(pool_, count, workPerItem, f);
}

}  // namespace prism
