// Reads and validates a JS StepPlan into the context's StepPlanData (on the JS thread).
// Every rule violation throws a JS TypeError (wrong type) or RangeError (bad value) that
// names the field, so nothing a caller passes can reach the forward pass unchecked.
// stepResultToJs is the other direction: a step's results as the JS StepResult.
#pragma once
#include <napi.h>

#include "context.h"

namespace prism {

// What a plan is checked against: the context's limits and the model's vocabulary.
struct PlanLimits {
  int64_t kvBlocks = 0, blockSize = 0, maxBatchTokens = 0, maxSeqs = 0, vocab = 0;
  int64_t pagesPerBlock = 1;  // block-table entries per block (kv_layout.h)
  const LoraRunner* lora = nullptr;  // null: the context takes no adapters (every slot must be -1)
  int64_t layers = 0;                // the model's layers: the default and bound of exitLayer
  int64_t hidden = 0;                // the model's hidden size: the width of a placed embedding row
};

void readStepPlan(Napi::Env env, Napi::Object plan, const PlanLimits& limits, StepPlanData& out);
// The limits of a CPU context.
void readStepPlan(Napi::Env env, Napi::Object plan, const Context& ctx, StepPlanData& out);

// `S` sequences; `lateMasks`: the plan had lateMaskRows (the result reports the wait).
// `drafts`: the plan verified draft tokens (numAccepted and the accepted tokens' logprobs go back too).
Napi::Object stepResultToJs(Napi::Env env, const StepResultData& r, int64_t S, bool lateMasks, int64_t vocab,
                            bool drafts = false);

}  // namespace prism
