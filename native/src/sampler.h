// Per-sequence sampling from one row of logits: logit bias, penalties, suppressed tokens,
// allowed-token mask, temperature, top-k, top-p, min-p, typical-p (Hugging Face's warper
// order), then a draw from a counter-based RNG so the same
// (seed, counter) always gives the same token whatever else is in the batch.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace prism {

struct SamplerScratch {
  std::vector<float> z;         // processed logits [vocab]
  std::vector<int32_t> idx;     // candidate ids [vocab]
  std::vector<int32_t> counts;  // penalty token counts [vocab], kept all-zero between uses
  std::vector<float> shift;     // typical-p: each candidate's distance from the entropy [vocab]
  void reserve(int64_t vocab) {
    z.resize(vocab);
    shift.resize(vocab);
    idx.resize(vocab);
    counts.assign(vocab, 0);
  }
};

struct SampleParams {
  float temperature = 0, topP = 1, minP = 0, typicalP = 1, repetitionPenalty = 1, presencePenalty = 0, frequencyPenalty = 0;
  int32_t topK = 0;
  // logit_bias: added to these tokens' logits before the penalties.
  const int32_t* biasTokens = nullptr;
  const float* biasValues = nullptr;
  int64_t biasCount = 0;
  const int32_t* penaltyTokens = nullptr;
  int64_t penaltyCount = 0;
  // More history after penaltyTokens: a verified position's draft tokens before it.
  const int32_t* penaltyTail = nullptr;
  int64_t penaltyTailCount = 0;
  const int32_t* suppressTokens = nullptr;  // tokens that may not be sampled (min_tokens)
  int64_t suppressCount = 0;
  const uint32_t* allowedMask = nullptr;  // ceil(vocab/32) words, or null
  uint64_t seed = 0;
  uint64_t counter = 0;
  int32_t topLogprobs = -1;
};

struct SampleOutcome {
  int32_t token = -1;
  float logprob = 0;
  std::string error;
};

// topIds/topValues: `topLogprobs` slots (when > 0) to fill, best first.
void sampleToken(const float* logits, int64_t vocab, const SampleParams& p, SamplerScratch& s, SampleOutcome& out,
                 int32_t* topIds, float* topValues);

// log(sum(exp(z))) over a row of n values (max-shifted; -inf entries contribute 0).
double logSumExpRow(const float* z, int64_t n);

// The RNG: a uniform double in [0, 1) from (seed, counter) (splitmix64 of both).
double uniformFromSeed(uint64_t seed, uint64_t counter);

}  // namespace prism
