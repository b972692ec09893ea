// Reads and validates a JS StepPlan into the context's StepPlanData (on the JS thread).
// Every rule violation throws a JS TypeError (wrong type) or RangeError (bad value) that
// names the field, so nothing a caller passes can reach the forward pass unchecked.
#pragma once
#include <napi.h>

#include "context.h"

namespace prism {

void readStepPlan(Napi::Env env, Napi::Object plan, const Context& ctx, StepPlanData& out);

}  // namespace prism
