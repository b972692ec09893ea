// What a device backend serves beyond the step-plan contract they all take (native.ts's
// BackendCapabilities): the engine asks these instead of naming a device. Each backend
// declares its own beside the code that refuses what it lacks (cpuCapabilities here: the CPU
// runs everything; cuda::deviceCapabilities in native/cuda/host/device_model.cc).
#pragma once
#include <napi.h>

#include <vector>

#include "kernels/kernels.h"
#include "model.h"

namespace prism {

struct BackendCapabilities {
  bool lora = false;          // LoRA adapters (createAdapter, setAdapterSlot, a plan's adapterSlots)
  bool verify = false;        // a plan's draftCounts: speculative decoding's verify in the sampler
  bool earlyExit = false;     // a plan's exitLayer: layer-skip speculation's draft pass
  bool kvTransfer = false;    // KV blocks read out of and written into a context (split prefill/decode)
  bool minTokens = false;     // a plan's suppressTokens (min_tokens)
  bool experts = false;       // mixture-of-experts layers
  bool mixedWindows = false;  // sliding-window layers mixed with global ones (KV layer groups)
  bool samplerWarpers = false;  // a plan's logitBias, minP and typicalP
  bool hiddenStates = false;  // hiddenStep: a decoder step answering final-norm hidden states (pooling)
  bool placedEmbeddings = false;  // a plan's embedRows: given rows in place of token rows (images)
  std::vector<Arch> architectures;
  std::vector<TensorType> tensorTypes;
};

const BackendCapabilities& cpuCapabilities();

// The storage types the model loaders read (kernels.h's TensorType, types.cc's table).
std::vector<TensorType> loadableTensorTypes();

Napi::Object capabilitiesToJs(Napi::Env env, const BackendCapabilities& c);

}  // namespace prism
