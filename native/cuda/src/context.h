// A context on the device: the paged KV cache in device memory, the activation buffers,
// and one step's forward pass and sampling. Buffers are sized once for (max_batch_tokens,
// max_seqs); a step allocates nothing except when a plan needs more than any before it
// (logits of every token, a longer block table or token history).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "../prism_cuda.h"
#include "gemm.h"
#include "gemv_fast.h"
#include "model.h"

namespace pc {

class DeviceContext {
 public:
  DeviceContext(DeviceModel& model, const pc_context_options& opts);

  void forward(const pc_step_plan& plan);
  void sample(const pc_step_plan& plan, const int32_t* masks, int64_t maskRows, pc_step_result& out);
  size_t kvBytes() const { return kCache_.bytes() + vCache_.bytes(); }
  double lastStepMs() const { return lastMs_; }
  int64_t lastLaunches() const { return lastLaunches_; }

 private:
  // One step's arrays on the device (the plan and what the host derived from it), copied
  // with a single transfer from a pinned staging buffer.
  struct StepArrays {
    const int32_t *tokens, *positions, *blockTableOffsets, *blockTables, *blockCopies, *tokenSeq, *tileFirst, *tileCount,
        *outRows, *seqRow;
    const uint8_t* sample;
    const float *temperature, *topP, *repetitionPenalty, *presencePenalty, *frequencyPenalty;
    const int32_t *topK, *penaltyOffsets, *penaltyTokens, *maskRow, *topLogprobs;
    const double* uniform;
  };
  void upload(const pc_step_plan& plan);
  // Embedding to logits on stream_ (what a decode graph captures).
  void runForward();
  void linear(const DeviceLinear& L, const float* x, int64_t n, float* y, int64_t ldy, bool accumulate);
  void layer(int64_t l, int64_t T);
  // The fast kernel set's decode layer (T ≤ 8): five launches where every part fuses.
  void fastLayer(int64_t l, int64_t T);
  void fastLinear(const DeviceLinear& L, const GemvIn& in, int64_t n, GemvOut out);
  AttentionParams attentionParams(int64_t l, int64_t T) const;
  RopeKvParams ropeParams(int64_t l, int64_t T) const;
  int attentionSplits(int64_t T) const;

  DeviceModel& m_;
  pc_context_options opts_;
  const pc_model_config& cfg_;
  int64_t qkvDim_ = 0;
  int multiprocessors_ = 1;
  Stream stream_;
  Gemm gemm_;
  Timer timer_;
  double lastMs_ = -1;

  DeviceBuffer kCache_, vCache_;
  int64_t layerStride_ = 0, blockStride_ = 0;
  DeviceBuffer x_, xn_, qkv_, attn_, gu_, act_, xSel_, logits_, partial_;
  DeviceBuffer xBf16_, wBf16_;
  int64_t wBf16Rows_ = 0;  // rows of the widest matrix that fit wBf16_
  DeviceBuffer penaltyCounts_, masks_;
  // The fast set's scratch: split-K partials and counters, attention's split counters, the
  // step's RoPE table.
  bool fast_ = false;
  DeviceBuffer gemvPartial_, gemvCounters_, attnCounters_, ropeTable_;
  GemvScratch gemvScratch_;
  int64_t lastLaunches_ = -1;
  DeviceBuffer resultDev_;
  PinnedBuffer resultHost_;

  PinnedBuffer planHost_;
  DeviceBuffer planDev_;
  StepArrays a_{};
  // Host-side derivations, reused step after step.
  std::vector<int32_t> tokenSeq_, tileFirst_, tileCount_, outRows_, seqRow_;
  int tileTokens_ = 1;
  // Decode graphs by shape (tokens, attention splits, logits rows); PRISM_CUDA_GRAPHS=0 turns
  // them off. A buffer a graph reads being reallocated clears them all.
  using GraphKey = std::tuple<int64_t, int, int64_t>;
  struct DecodeGraph {
    int runs = 0;
    std::unique_ptr<Graph> graph;
  };
  std::map<GraphKey, DecodeGraph> graphs_;
  bool useGraphs_ = false;
  int64_t T_ = 0, S_ = 0, rows_ = 0, maxPositions_ = 0;
  bool forwardDone_ = false;
};

}  // namespace pc
