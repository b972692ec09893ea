// One step's plan, copied out of the JS typed arrays into buffers the context owns (their
// capacity is reserved at context creation, so steady-state decode does not allocate), and
// the step's results.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace prism {

enum class ReturnLogits { None = 0, Last = 1, All = 2 };

struct StepPlanData {
  int32_t T = 0, S = 0;
  std::vector<int32_t> tokens, positions, seqTokenOffsets, blockTableOffsets, blockTables, blockCopies;
  std::vector<uint8_t> sample;
  std::vector<float> temperature, topP, repetitionPenalty, presencePenalty, frequencyPenalty;
  std::vector<int32_t> topK, penaltyTokenOffsets, penaltyTokens, sampleCounters, allowedMaskRows, allowedMask,
      topLogprobs;
  // Per sequence (CSR, optional: empty = none): tokens it may not sample this step (min_tokens
  // holds back end-of-sequence and stop tokens until enough output exists).
  std::vector<int32_t> suppressTokenOffsets, suppressTokens;
  // Per sequence (CSR, optional: empty = none): logit_bias, a value added to each listed
  // token's logit before the penalties.
  std::vector<int32_t> logitBiasOffsets, logitBiasTokens;
  std::vector<float> logitBiasValues;
  // Per sequence (optional: empty = off for all): min_p (0 = off) and typical_p (1 = off).
  std::vector<float> minP, typicalP;
  std::vector<uint64_t> seeds;
  std::vector<int32_t> adapterSlots;  // per sequence: LoRA slot, -1 = base model; empty = all base
  ReturnLogits returnLogits = ReturnLogits::None;
  // > 0: allowedMask is empty and its rows come later (late_masks.h); sampling waits for them.
  int64_t lateMaskRows = 0;
  // Speculative decoding: per sequence, how many of its last tokens are draft tokens to
  // verify (empty = none). draftOffsets (derived, S+1) is where each sequence's draft slots
  // start in the result's accepted* arrays.
  std::vector<int32_t> draftCounts, draftOffsets;
  int64_t draftTotal = 0;
  // Layers to run (1..layers): fewer is self-speculation's draft pass (the first layers and
  // the output head); their K/V are written, the later layers' are not.
  int64_t exitLayer = 0;
  // Pooling (encoder/hidden_step_addon.cc, never a JS plan field): the step returns the final
  // norm's output for the last token of every sequence instead of logits, and samples nothing.
  bool returnHidden = false;
  // Prompt logprobs (prompt_scores.h), optional (empty = none): per token row [T] the token
  // its distribution is read at (-1: not scored), and per sequence [S] the top alternatives.
  std::vector<int32_t> promptTargets, promptTop;
  // Placed embeddings (images), optional (empty = none): CSR by sequence [S+1], per placement
  // its absolute position and [n × hidden] rows that replace the token's table row before layer
  // 0. embedTokenRows (derived) is each placement's token row in the step.
  std::vector<int32_t> embedOffsets, embedPositions, embedTokenRows;
  std::vector<float> embedRows;
  // Bidirectional spans (Gemma 3's images), optional (empty = all causal): CSR by sequence
  // [S+1], per span its positions [start, end) as a pair; a query inside a span also sees the
  // span's later positions. attendEnd (derived, [T] or empty) is each token row's end of sight:
  // the end of its span, else its position + 1.
  std::vector<int32_t> bidiOffsets, bidiSpans, attendEnd;
};

struct StepResultData {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  int32_t topStride = 0;
  std::vector<int32_t> topIds;
  std::vector<float> topValues;
  std::vector<std::string> errors;  // per sequence; empty string = fine
  bool anyError = false;
  // Logits asked for by the plan: [rows × vocab] with rows = S ('last') or T ('all').
  float* logits = nullptr;
  int64_t logitRows = 0;
  // Plans with returnHidden: [S × hidden], the last token's final-norm output per sequence.
  const float* hidden = nullptr;
  // Late masks: how long sampling waited for them after the forward pass (ms).
  double lateMaskWaitMs = 0;
  // Speculative decoding (plans with draftCounts): per sequence the draft tokens accepted
  // (tokens[s] is then the token sampled after them), and per draft slot the logprob (and
  // top alternatives) of an accepted draft token, NaN / -1 for the rest.
  std::vector<int32_t> numAccepted;
  std::vector<float> acceptedLogprobs;
  std::vector<int32_t> acceptedTopIds;
  std::vector<float> acceptedTopValues;
  // Plans with promptTargets: per token row [T] the target's logprob and rank (NaN / -1 where
  // not scored), and [T × promptTopStride] the top alternatives (-1 / NaN padded).
  bool prompt = false;
  std::vector<float> promptLogprobs;
  std::vector<int32_t> promptRanks;
  int32_t promptTopStride = 0;
  std::vector<int32_t> promptTopIds;
  std::vector<float> promptTopValues;
};

}  // namespace prism
