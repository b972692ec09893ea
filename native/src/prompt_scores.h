// Prompt logprobs (vLLM's prompt_logprobs, OpenAI's legacy echo with logprobs, TGI's prefill
// details): how likely the model found each prompt token given the tokens before it. The row
// of the output head at prompt position p is read at prompt token p+1, from the model's own
// (raw) distribution: no penalty, temperature, mask or top-k/top-p applies, as in vLLM.
#pragma once
#include <cstdint>

namespace prism {

struct PromptRowScore {
  float logprob = 0;  // log-softmax of the row at the target token
  int32_t rank = 0;   // 1 + the tokens whose logit is strictly higher than the target's
};

// One row of raw logits [V] scored at `target` (in [0, V)); its `top` most likely tokens, best
// first (ties: lower id first), go to topIds/topValues (`top` slots each). idx: [V] scratch.
PromptRowScore scorePromptRow(const float* logits, int64_t V, int32_t target, int32_t top, int32_t* idx,
                              int32_t* topIds, float* topValues);

}  // namespace prism
