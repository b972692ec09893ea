// An encoder context: a thread pool and every buffer one forward pass needs, sized once for
// (maxBatchTokens, maxSeqs), bound to one encoder. A batch is any number of whole inputs
// packed end to end (no padding): each attends to all of its own tokens and to no other's,
// so nothing outlives the call (no KV cache).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "encoder/encoder_model.h"
#include "kernels/kernels.h"
#include "lazy_zero.h"
#include "thread_pool.h"

namespace prism {

struct EncoderContextOptions {
  int64_t maxBatchTokens = 0, maxSeqs = 0;
  int threads = 1;
};

// S inputs: input s is tokens[seqOffsets[s] .. seqOffsets[s+1]), with its token types (null:
// all 0, "sentence A").
struct EncoderBatch {
  const int32_t* tokens = nullptr;
  const int32_t* tokenTypes = nullptr;
  const int32_t* seqOffsets = nullptr;
  int32_t S = 0;
  int32_t T() const { return seqOffsets[S]; }
};

// What a pass returns. Pooled: [S × pooledDim()], the model's pooling (not normalised).
// Tokens: [T × hidden], the last hidden state of every token. Scores: [S × numLabels], the
// classifier's raw logits.
enum class EncoderOutput { Pooled, Tokens, Scores };

class EncoderContext {
 public:
  EncoderContext(std::shared_ptr<EncoderModel> model, const EncoderContextOptions& opts);

  // The first rule the batch breaks, naming the field ("" when it is valid): offsets,
  // sizes against the options, token ids against the vocabulary, types against the table,
  // input lengths against the position table, the output against the model.
  std::string check(const EncoderBatch& batch, EncoderOutput what) const;
  // Runs a checked batch on the calling thread + the pool; `out` holds the output's size.
  void run(const EncoderBatch& batch, EncoderOutput what, float* out);

  int64_t pooledDim() const { return static_cast<int64_t>(model_->cfg.pooling.modes.size()) * model_->cfg.hidden; }
  const std::shared_ptr<EncoderModel>& model() const { return model_; }
  const EncoderContextOptions& options() const { return opts_; }
  int threads() const { return pool_.size(); }
  // A pass is running (set and cleared by the addon, on the JS thread): one at a time, the
  // buffers are the pass's.
  std::atomic<bool> busy{false};

 private:
  template <typename F>
  void forRange(int64_t count, int64_t workPerItem, F&& f) {
    prism::forRange(pool_, count, workPerItem, f);
  }
  void embed(const EncoderBatch& batch);
  void layer(const EncoderLayer& L, const EncoderBatch& batch);
  void attention(const EncoderBatch& batch);
  void linear(const LinearGroup& g, const float* x, int64_t n, float* y, int64_t ldy);
  void classify(const EncoderBatch& batch, float* out);

  std::shared_ptr<EncoderModel> model_;
  const EncoderConfig& cfg_;
  EncoderContextOptions opts_;
  ThreadPool pool_;
  KernelScratch scratch_;
  // [maxBatchTokens × width] activations, resident only for the rows passes have used.
  LazyZeroVector<float> x_, qkv_, attn_, tmp_, ffn_;
  std::vector<float> ropeCos_, ropeSin_;          // NomicBert: [maxTokens × headDim/2]
  std::vector<std::vector<float>> attnScratch_;  // per thread: packedAttention's keys and scores for a whole input
  std::vector<float> cls_, clsHidden_;           // [maxSeqs × hidden]: the classifier's input and dense output
};

}  // namespace prism
