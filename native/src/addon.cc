// The addon's CPU exports (see native/native.ts: NativeAddon): conversions between JS values
// and the C++ structures; the argument checks, handles, workers and error mapping are
// addon_glue.h's, shared with the CUDA exports (native/cuda/host/device_addon.cc).
#include <napi.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "backend_capabilities.h"
#include "context.h"
#include "decode_tuning/host.h"
#include "format_error.h"
#include "gguf.h"
#include "handles.h"
#include "kernels/amx/amx.h"
#include "kernels/amx/q4xv_amx.h"
#include "model.h"
#include "plan_reader.h"
#include "switches.h"
#include "system_info.h"

namespace prism {
namespace {

using glue::guarded;
using glue::intArg;
using glue::stringArg;

// --- readGgufMetadata ---------------------------------------------------------------

Napi::Value ggufToJs(Napi::Env env, const GgufValue& v) {
  switch (v.type) {
    case GgufType::U8: case GgufType::U16: case GgufType::U32: return Napi::Number::New(env, static_cast<double>(v.u));
    case GgufType::I8: case GgufType::I16: case GgufType::I32: return Napi::Number::New(env, static_cast<double>(v.i));
    case GgufType::U64:
      if (v.u <= (1ull << 53)) return Napi::Number::New(env, static_cast<double>(v.u));
      return Napi::BigInt::New(env, v.u);
    case GgufType::I64:
      if (v.i <= (1ll << 53) && v.i >= -(1ll << 53)) return Napi::Number::New(env, static_cast<double>(v.i));
      return Napi::BigInt::New(env, v.i);
    case GgufType::F32: case GgufType::F64: return Napi::Number::New(env, v.f);
    case GgufType::BOOL: return Napi::Boolean::New(env, v.u != 0);
    case GgufType::STRING: return Napi::String::New(env, v.s);
    case GgufType::ARRAY: {
      Napi::Array a = Napi::Array::New(env, v.items.size());
      for (size_t k = 0; k < v.items.size(); k++) a.Set(static_cast<uint32_t>(k), ggufToJs(env, v.items[k]));
      return a;
    }
  }
  return env.Undefined();
}

Napi::Value ReadGgufMetadata(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = stringArg(info, 0, "path");
  return guarded(env, [&]() -> Napi::Value {
    GgufFile g = readGguf(path, false);
    Napi::Object out = Napi::Object::New(env);
    for (const auto& [k, v] : g.kvs) out.Set(k, ggufToJs(env, v));
    return out;
  });
}

// --- loadModel -----------------------------------------------------------------------

Napi::Value LoadModel(const Napi::CallbackInfo& info) {
  const std::string path = stringArg(info, 0, "path");
  return glue::LoadWork<Model>::queue(
      info.Env(), "prism.loadModel", path, glue::optionalFunctionArg(info, 1, "onProgress"),
      [path](const ProgressFn& progress) { return loadModelFromPath(path, progress); }, wrapModel);
}

Napi::Value ModelInfo(const Napi::CallbackInfo& info) {
  return modelInfoToJs(info.Env(), *modelArg(info.Env(), info[0], "model"));
}

Napi::Value DisposeModel(const Napi::CallbackInfo& info) {
  // Contexts hold their own reference, so the weights live until the last one is gone.
  glue::handleBox<Model>(info.Env(), info[0], kModelHandle, "model")->ptr.reset();
  return info.Env().Undefined();
}

// --- contexts --------------------------------------------------------------------------

Napi::Value CreateContext(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Model> model = modelArg(env, info[0], "model");
  Napi::Object o = glue::objectArg(info, 1, "options");
  ContextOptionsData opts = glue::contextOptionsArg(env, o);
  int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  opts.threads = o.Get("threads").IsUndefined() ? hw : static_cast<int>(intArg(env, o.Get("threads"), "options.threads", 1, 1024));
  if (!o.Get("maxLoras").IsUndefined()) opts.maxLoras = intArg(env, o.Get("maxLoras"), "options.maxLoras", 0, 1024);
  if (!o.Get("maxLoraRank").IsUndefined()) opts.maxLoraRank = intArg(env, o.Get("maxLoraRank"), "options.maxLoraRank", 0, 65536);
  if (opts.maxLoras > 0 && opts.maxLoraRank < 1)
    throw Napi::RangeError::New(env, "options.maxLoraRank must be >= 1 when options.maxLoras > 0");
  if (Napi::Value t = o.Get("decodeTuning"); !t.IsUndefined()) {
    if (!t.IsString()) throw Napi::TypeError::New(env, "options.decodeTuning must be a string");
    opts.decodeTuning = t.As<Napi::String>().Utf8Value();
    std::string why;
    if (opts.decodeTuning.empty() || !validDecodeTuningRequest(opts.decodeTuning, &why))
      throw Napi::RangeError::New(env, "options.decodeTuning " + (why.empty() ? std::string("must not be empty") : why));
  }
  const ModelConfig& c = model->cfg;
  const double kvBytes = 4.0 * static_cast<double>(KvLayout::forModel(c).pageLayers) * static_cast<double>(opts.kvBlocks) *
                         static_cast<double>(opts.blockSize) * static_cast<double>(c.kvHeads * c.headDim);
  if (kvBytes > 256e9) throw Napi::RangeError::New(env, "options.kvBlocks × blockSize: the KV cache would need " +
                                                         std::to_string(kvBytes / 1e9) + " GB");
  glue::checkPositions(env, opts);
  return guarded(env, [&]() -> Napi::Value {
    try {
      return wrapContext(env, std::make_shared<Context>(model, opts));
    } catch (const std::bad_alloc&) {
      throw Napi::Error::New(env, "cannot allocate the context (KV cache " + std::to_string(kvBytes / 1e6) + " MB plus scratch)");
    }
  });
}

Napi::Value ContextInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Context& ctx = *contextArg(env, info[0], "ctx");
  Napi::Object o = Napi::Object::New(env);
  o.Set("kvBlocks", static_cast<double>(ctx.options().kvBlocks));
  o.Set("blockSize", static_cast<double>(ctx.options().blockSize));
  o.Set("kvBytes", static_cast<double>(ctx.kvBytes()));
  o.Set("threads", ctx.threads());
  o.Set("isa", selectedIsa());
  const DecodeTuningChoice& t = ctx.decodeTuning();
  Napi::Object d = Napi::Object::New(env);
  d.Set("setting", t.tuning.describe());
  d.Set("source", t.source);
  d.Set("detail", t.detail);
  d.Set("measuredMs", t.measuredMs);
  d.Set("ratioToDefault", t.ratioToDefault);
  d.Set("cachePath", t.cachePath);
  o.Set("decodeTuning", d);
  return o;
}

Napi::Value DisposeContext(const Napi::CallbackInfo& info) {
  glue::disposeContext(glue::handleBox<Context>(info.Env(), info[0], kContextHandle, "ctx"));
  return info.Env().Undefined();
}

// --- step ------------------------------------------------------------------------------

Napi::Value Step(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Context> ctx = contextArg(env, info[0], "ctx");
  return glue::queueStep(env, "prism.step", ctx, info[1],
                         [](Napi::Env e, Napi::Object plan, const Context& c, StepPlanData& out) {
                           readStepPlan(e, plan, c, out);
                         });
}

Napi::Value FailNextStepsForTest(const Napi::CallbackInfo& info) {
  glue::failNextSteps(info, *contextArg(info.Env(), info[0], "ctx"));
  return info.Env().Undefined();
}

// Test hook: the next step on this context sleeps `ms` after layer 0 (native/native.ts
// faultTestHooks). Nothing a client sends reaches it.
Napi::Value StallNextStepForTest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Context> ctx = contextArg(env, info[0], "ctx");
  ctx->stallStepMs.store(static_cast<int>(intArg(env, info[1], "ms", 0, 600000)));
  return env.Undefined();
}

// Hands the running step the masks its plan announced with lateMaskRows (null: they will not
// come, the step fails). Returns false when no step waits for masks.
Napi::Value SupplyMasks(const Napi::CallbackInfo& info) {
  return glue::supplyMasks(info, *contextArg(info.Env(), info[0], "ctx"));
}

// --- CPU and kernel hooks ---------------------------------------------------------------

Napi::Value CpuFeatures(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  __builtin_cpu_init();
  o.Set("avx2", static_cast<bool>(__builtin_cpu_supports("avx2")));
  o.Set("fma", static_cast<bool>(__builtin_cpu_supports("fma")));
  o.Set("f16c", cpuHasF16c());
  o.Set("avx512f", static_cast<bool>(__builtin_cpu_supports("avx512f")));
  o.Set("avx512bw", static_cast<bool>(__builtin_cpu_supports("avx512bw")));
  o.Set("avx512vl", static_cast<bool>(__builtin_cpu_supports("avx512vl")));
  o.Set("avx512vnni", static_cast<bool>(__builtin_cpu_supports("avx512vnni")));
  o.Set("avx512bf16", static_cast<bool>(__builtin_cpu_supports("avx512bf16")));
  o.Set("amx", kernels::cpuHasAmxInt8());
  o.Set("amxPrefill", amxPrefillSelected());
  o.Set("selected", selectedIsa());
  return o;
}

TensorType typeArg(Napi::Env env, Napi::Value v) {
  if (!v.IsString()) throw Napi::TypeError::New(env, "type must be a string");
  TensorType t;
  std::string name = v.As<Napi::String>().Utf8Value();
  if (!typeFromName(name, &t)) throw Napi::RangeError::New(env, "type: unknown tensor type '" + name + "'");
  return t;
}

template <typename A>
A typedArg(Napi::Env env, Napi::Value v, const char* name, napi_typedarray_type type, const char* typeName) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != type)
    throw Napi::TypeError::New(env, std::string(name) + " must be a " + typeName);
  return v.As<A>();
}

Napi::Value MatmulForTest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorType type = typeArg(env, info[0]);
  auto w = typedArg<Napi::Uint8Array>(env, info[1], "weights", napi_uint8_array, "Uint8Array");
  int64_t rows = intArg(env, info[2], "rows", 1, 1 << 24), cols = intArg(env, info[3], "cols", 1, 1 << 24);
  auto x = typedArg<Napi::Float32Array>(env, info[4], "x", napi_float32_array, "Float32Array");
  int64_t n = intArg(env, info[5], "n", 1, 1 << 20);
  std::string isa = info[6].IsString() ? info[6].As<Napi::String>().Utf8Value() : "";
  return guarded(env, [&]() -> Napi::Value {
    if (w.ByteLength() != typeRowBytes(type, cols) * rows) throw Napi::RangeError::New(env, "weights: byte length does not match rows × cols of the type");
    if (static_cast<int64_t>(x.ElementLength()) != n * cols) throw Napi::RangeError::New(env, "x: length must be n × cols");
    auto y = Napi::Float32Array::New(env, n * rows);
    matmulForTest(type, w.Data(), rows, cols, x.Data(), n, y.Data(), isa);
    return y;
  });
}

// Calls of the Layout::Q4XV AMX kernel so far (kernels/amx/q4xv_amx.h), for tests.
Napi::Value Q4xvAmxCallsForTest(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(kernels::q4xvAmxCalls()));
}

Napi::Value QuantizeForTest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorType type = typeArg(env, info[0]);
  auto v = typedArg<Napi::Float32Array>(env, info[1], "values", napi_float32_array, "Float32Array");
  int64_t rows = intArg(env, info[2], "rows", 1, 1 << 24), cols = intArg(env, info[3], "cols", 1, 1 << 24);
  return guarded(env, [&]() -> Napi::Value {
    if (static_cast<int64_t>(v.ElementLength()) != rows * cols) throw Napi::RangeError::New(env, "values: length must be rows × cols");
    auto out = Napi::Uint8Array::New(env, typeRowBytes(type, cols) * rows);
    quantizeReference(type, v.Data(), rows, cols, out.Data());
    return out;
  });
}

Napi::Value DequantizeForTest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  TensorType type = typeArg(env, info[0]);
  auto d = typedArg<Napi::Uint8Array>(env, info[1], "data", napi_uint8_array, "Uint8Array");
  int64_t rows = intArg(env, info[2], "rows", 1, 1 << 24), cols = intArg(env, info[3], "cols", 1, 1 << 24);
  return guarded(env, [&]() -> Napi::Value {
    if (d.ByteLength() != typeRowBytes(type, cols) * rows) throw Napi::RangeError::New(env, "data: byte length does not match rows × cols of the type");
    auto out = Napi::Float32Array::New(env, rows * cols);
    dequantizeReference(type, d.Data(), rows, cols, out.Data());
    return out;
  });
}

// The token-table rows the forward pass looks up (dequantized, before any embedding scale): a
// test places them as embedding rows and expects the logits of the prompt holding the tokens.
Napi::Value EmbeddingRowsForTest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Model> model = modelArg(env, info[0], "model");
  auto ids = typedArg<Napi::Int32Array>(env, info[1], "ids", napi_int32_array, "Int32Array");
  return guarded(env, [&]() -> Napi::Value {
    const int64_t D = model->cfg.hidden, V = model->cfg.vocab, n = static_cast<int64_t>(ids.ElementLength());
    auto out = Napi::Float32Array::New(env, n * D);
    const int32_t* id = ids.Data();
    for (int64_t k = 0; k < n; k++) {
      if (id[k] < 0 || id[k] >= V)
        throw Napi::RangeError::New(env, "ids[" + std::to_string(k) + "]: token id must be in [0, " + std::to_string(V) + ")");
      dequantizeRow(model->embedType, model->embedData, D, id[k], out.Data() + k * D);
    }
    return out;
  });
}

Napi::Value MeasureMemoryBandwidth(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t bytes = intArg(env, info[0], "bytes", 1 << 20, int64_t{16} << 30);
  int64_t passes = intArg(env, info[1], "passes", 1, 1000);
  return guarded(env, [&]() -> Napi::Value { return Napi::Number::New(env, measureBandwidth(bytes, passes)); });
}

Napi::Value SustainedReadRate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t bytes = intArg(env, info[0], "bytes", 1 << 20, int64_t{16} << 30);
  int64_t passes = intArg(env, info[1], "passes", 1, 1000);
  int threads = static_cast<int>(intArg(env, info[2], "threads", 1, 1024));
  return guarded(env, [&]() -> Napi::Value { return Napi::Number::New(env, sustainedReadRate(bytes, passes, threads)); });
}

Napi::Value ReleaseReadBuffer(const Napi::CallbackInfo& info) {
  releaseReadBuffer();
  return info.Env().Undefined();
}

// What the CPU backend serves (backend_capabilities.h).
Napi::Value CpuCapabilities(const Napi::CallbackInfo& info) { return capabilitiesToJs(info.Env(), cpuCapabilities()); }

// The switch table (switches.h), for the docs test.
Napi::Value NativeSwitches(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::vector<SwitchSpec>& specs = switchSpecs();
  Napi::Array out = Napi::Array::New(env, specs.size());
  for (size_t i = 0; i < specs.size(); i++) {
    const SwitchSpec& s = specs[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", s.name);
    o.Set("values", s.values);
    o.Set("byDefault", s.byDefault);
    o.Set("read", s.read == SwitchRead::OncePerProcess ? "once per process"
                  : s.read == SwitchRead::EachUse     ? "at each use"
                                                      : "by the CUDA library");
    o.Set("what", s.what);
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

Napi::Value HostInfoExport(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const HostInfo& h = hostInfo();
  Napi::Object o = Napi::Object::New(env);
  o.Set("cpu", h.cpuKey());
  o.Set("description", h.describe());
  o.Set("l1dBytes", static_cast<double>(h.l1d));
  o.Set("l2Bytes", static_cast<double>(h.l2));
  o.Set("l3Bytes", static_cast<double>(h.l3));
  o.Set("transparentHugePages", h.thp);
  o.Set("anonHugeBytes", static_cast<double>(anonHugeBytes()));
  return o;
}

}  // namespace

void registerLoraExports(Napi::Env env, Napi::Object exports);
void registerCudaExports(Napi::Env env, Napi::Object exports);
void registerKvTransferExports(Napi::Env env, Napi::Object exports);
void registerEncoderExports(Napi::Env env, Napi::Object exports);
void registerVisionExports(Napi::Env env, Napi::Object exports);

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("readGgufMetadata", Napi::Function::New(env, ReadGgufMetadata));
  exports.Set("loadModel", Napi::Function::New(env, LoadModel));
  exports.Set("modelInfo", Napi::Function::New(env, ModelInfo));
  exports.Set("disposeModel", Napi::Function::New(env, DisposeModel));
  exports.Set("createContext", Napi::Function::New(env, CreateContext));
  exports.Set("contextInfo", Napi::Function::New(env, ContextInfo));
  exports.Set("disposeContext", Napi::Function::New(env, DisposeContext));
  exports.Set("step", Napi::Function::New(env, Step));
  exports.Set("failNextStepsForTest", Napi::Function::New(env, FailNextStepsForTest));
  exports.Set("stallNextStepForTest", Napi::Function::New(env, StallNextStepForTest));
  exports.Set("supplyMasks", Napi::Function::New(env, SupplyMasks));
  exports.Set("cpuFeatures", Napi::Function::New(env, CpuFeatures));
  exports.Set("matmulForTest", Napi::Function::New(env, MatmulForTest));
  exports.Set("quantizeForTest", Napi::Function::New(env, QuantizeForTest));
  exports.Set("dequantizeForTest", Napi::Function::New(env, DequantizeForTest));
  exports.Set("embeddingRowsForTest", Napi::Function::New(env, EmbeddingRowsForTest));
  exports.Set("q4xvAmxCallsForTest", Napi::Function::New(env, Q4xvAmxCallsForTest));
  exports.Set("measureMemoryBandwidth", Napi::Function::New(env, MeasureMemoryBandwidth));
  exports.Set("sustainedReadRate", Napi::Function::New(env, SustainedReadRate));
  exports.Set("releaseReadBuffer", Napi::Function::New(env, ReleaseReadBuffer));
  exports.Set("hostInfo", Napi::Function::New(env, HostInfoExport));
  exports.Set("nativeSwitches", Napi::Function::New(env, NativeSwitches));
  exports.Set("cpuCapabilities", Napi::Function::New(env, CpuCapabilities));
  registerLoraExports(env, exports);  // lora_addon.cc
  registerCudaExports(env, exports);  // native/cuda/host/device_addon.cc
  registerKvTransferExports(env, exports);  // kv_transfer.cc
  registerEncoderExports(env, exports);     // encoder/encoder_addon.cc: pooling models
  registerVisionExports(env, exports);      // vision/vision_addon.cc: vision-language models' image side
  return exports;
}

}  // namespace prism

static Napi::Object InitPrism(Napi::Env env, Napi::Object exports) { return prism::Init(env, exports); }
NODE_API_MODULE(prism_native, InitPrism)
