#include "backend_capabilities.h"

namespace prism {

std::vector<TensorType> loadableTensorTypes() {
  std::vector<TensorType> out;
  for (uint32_t t = 0; t <= 64; t++)
    if (typeSupported(t)) out.push_back(static_cast<TensorType>(t));
  return out;
}

const BackendCapabilities& cpuCapabilities() {
  static const BackendCapabilities c = [] {
    BackendCapabilities b;
    b.lora = b.verify = b.earlyExit = b.kvTransfer = b.minTokens = b.experts = b.mixedWindows = b.hiddenStates = b.samplerWarpers =
        b.placedEmbeddings = true;
    b.architectures = {Arch::Llama, Arch::Qwen2, Arch::Qwen3, Arch::Qwen3Moe, Arch::Gemma3, Arch::Phi3};
    b.tensorTypes = loadableTensorTypes();
    return b;
  }();
  return c;
}

Napi::Object capabilitiesToJs(Napi::Env env, const BackendCapabilities& c) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("lora", c.lora);
  o.Set("verify", c.verify);
  o.Set("earlyExit", c.earlyExit);
  o.Set("kvTransfer", c.kvTransfer);
  o.Set("minTokens", c.minTokens);
  o.Set("experts", c.experts);
  o.Set("mixedWindows", c.mixedWindows);
  o.Set("hiddenStates", c.hiddenStates);
  o.Set("samplerWarpers", c.samplerWarpers);
  o.Set("placedEmbeddings", c.placedEmbeddings);
  Napi::Array archs = Napi::Array::New(env, c.architectures.size());
  for (size_t i = 0; i < c.architectures.size(); i++) archs.Set(static_cast<uint32_t>(i), archName(c.architectures[i]));
  o.Set("architectures", archs);
  Napi::Array types = Napi::Array::New(env, c.tensorTypes.size());
  for (size_t i = 0; i < c.tensorTypes.size(); i++) types.Set(static_cast<uint32_t>(i), typeName(c.tensorTypes[i]));
  o.Set("tensorTypes", types);
  return o;
}

}  // namespace prism
