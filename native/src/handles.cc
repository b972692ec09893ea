#include "handles.h"

#include "kv_layout.h"

namespace prism {

const glue::HandleKind kModelHandle{{0x7072697301020304ull, 0x6d6f64656c000001ull}, "a model", "model"};
const glue::HandleKind kContextHandle{{0x7072697301020304ull, 0x636f6e7465787401ull}, "a context", "context"};

Napi::Object modelInfoToJs(Napi::Env env, const Model& m) {
  const ModelConfig& c = m.cfg;
  Napi::Object o = Napi::Object::New(env);
  o.Set("path", c.path);
  o.Set("format", c.format);
  if (!c.vision.empty()) o.Set("vision", c.vision);
  o.Set("architecture", archName(c.arch));
  o.Set("name", c.name);
  o.Set("vocabSize", static_cast<double>(c.vocab));
  o.Set("hiddenSize", static_cast<double>(c.hidden));
  o.Set("intermediateSize", static_cast<double>(c.intermediate));
  o.Set("numLayers", static_cast<double>(c.layers));
  o.Set("numHeads", static_cast<double>(c.heads));
  o.Set("numKvHeads", static_cast<double>(c.kvHeads));
  o.Set("headDim", static_cast<double>(c.headDim));
  o.Set("contextLength", static_cast<double>(c.contextLength));
  o.Set("ropeTheta", c.ropeTheta);
  o.Set("rmsNormEps", c.eps);
  o.Set("tiedEmbeddings", c.tiedEmbeddings);
  Napi::Array windows = Napi::Array::New(env, c.layerWindow.size());
  for (size_t l = 0; l < c.layerWindow.size(); l++) windows.Set(l, static_cast<double>(c.layerWindow[l]));
  o.Set("layerWindows", windows);
  const KvLayout kv = KvLayout::forModel(c);
  Napi::Object layout = Napi::Object::New(env);
  layout.Set("pageLayers", static_cast<double>(kv.pageLayers));
  layout.Set("pagesPerBlock", static_cast<double>(kv.pagesPerBlock));
  Napi::Array groups = Napi::Array::New(env, kv.groups.size());
  for (size_t g = 0; g < kv.groups.size(); g++) {
    Napi::Object group = Napi::Object::New(env);
    group.Set("window", static_cast<double>(kv.groups[g].window));
    group.Set("pages", static_cast<double>(kv.groups[g].pages));
    groups.Set(g, group);
  }
  layout.Set("groups", groups);
  o.Set("kvLayout", layout);
  o.Set("experts", static_cast<double>(c.experts));
  o.Set("expertsUsed", static_cast<double>(c.expertsUsed));
  o.Set("weightBytes", m.weightBytes);
  o.Set("residentWeightBytes", m.residentWeightBytes);
  o.Set("weightArenaBytes", m.weightArena ? static_cast<double>(m.weightArena->chunkBytes()) : 0.0);
  o.Set("activations", m.activations == ActivationPrecision::Int8 ? "int8" : "int16");
  Napi::Object types = Napi::Object::New(env);
  for (const auto& [k, v] : m.tensorTypes) types.Set(k, v);
  o.Set("tensorTypes", types);
  Napi::Object switches = Napi::Object::New(env);
  for (const SwitchValue& v : m.switches) {
    Napi::Object one = Napi::Object::New(env);
    one.Set("value", v.value);
    one.Set("source", v.fromEnvironment && v.warning.empty() ? "environment" : "default");
    if (!v.warning.empty()) one.Set("warning", v.warning);
    switches.Set(v.name, one);
  }
  o.Set("switches", switches);
  return o;
}

}  // namespace prism
