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
};

void readStepPlan(Napi::Env env, Napi::Object plan, const PlanLimits& limits, StepPlanData& out);
// The limits of a CPU context.
void readStepPlan(Napi::Env env, Napi::Object plan, const Context& ctx, StepPlanData& out);

// `S` sequences; `lateMasks`: the plan had lateMaskRows (the result reports the wait).
Napi::Object stepResultToJs(Napi::Env env, const StepResultData& r, int64_t S, bool lateMasks, int64_t vocab);

}  // namespace prism
