// The addon's exports (see native/native.ts: NativeAddon). Glue only: argument checks,
// conversions between JS values and the C++ structures, and async workers.
#include <napi.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "context.h"
#include "decode_tuning/host.h"
#include "format_error.h"
#include "gguf.h"
#include "handles.h"
#include "kernels/amx/amx.h"
#include "kernels/amx/bf16_amx.h"
#include "kernels/amx/q4xv_amx.h"
#include "model.h"
#include "plan_reader.h"
#include "system_info.h"

namespace prism {
namespace {

// A JS Error for a model-file problem, with the structured fields errors.ts maps onto
// ModelFormatError.
Napi::Error formatError(Napi::Env env, const FormatError& e) {
  Napi::Error err = Napi::Error::New(env, e.what());
  err.Set("code", "PRISM_MODEL_FORMAT");
  err.Set("file", e.file());
  if (!e.tensor().empty()) err.Set("tensor", e.tensor());
  err.Set("reason", e.reason());
  return err;
}

// Runs `f`, turning C++ exceptions into JS exceptions (Napi::Error passes through).
template <typename F>
auto guarded(Napi::Env env, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Napi::Error&) {
    throw;
  } catch (const FormatError& e) {
    throw formatError(env, e);
  } catch (const std::bad_alloc&) {
    throw Napi::Error::New(env, "out of memory");
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
}

std::string stringArg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsString()) throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

int64_t intArg(Napi::Env env, Napi::Value v, const std::string& name, int64_t min, int64_t max) {
  if (!v.IsNumber()) throw Napi::TypeError::New(env, name + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d == std::floor(d)) || d < static_cast<double>(min) || d > static_cast<double>(max))
    throw Napi::RangeError::New(env, name + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return static_cast<int64_t>(d);
}

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

class LoadWorker : public Napi::AsyncProgressQueueWorker<double> {
 public:
  LoadWorker(Napi::Env env, std::string path, Napi::Function onProgress)
      : Napi::AsyncProgressQueueWorker<double>(env, "prism.loadModel"), path_(std::move(path)), deferred_(env) {
    if (!onProgress.IsEmpty()) progress_ = Napi::Persistent(onProgress);
  }
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute(const ExecutionProgress& progress) override {
    try {
      model_ = loadModelFromPath(path_, [&](double f) { progress.Send(&f, 1); });
    } catch (const FormatError& e) {
      fe_ = std::make_unique<FormatError>(e);
      SetError(e.what());
    } catch (const std::bad_alloc&) {
      SetError(path_ + ": out of memory while loading");
    } catch (const std::exception& e) {
      SetError(path_ + ": " + e.what());
    }
  }
  void OnProgress(const double* data, size_t count) override {
    if (progress_.IsEmpty() || count == 0) return;
    Napi::Env env = Env();
    try {
      progress_.Call({Napi::Number::New(env, data[count - 1])});
    } catch (const Napi::Error&) {
      // A throwing progress callback must not break the load; the error is dropped.
    }
  }
  void OnOK() override { deferred_.Resolve(wrapModel(Env(), std::move(model_))); }
  void OnError(const Napi::Error& e) override {
    if (fe_) deferred_.Reject(formatError(Env(), *fe_).Value());
    else deferred_.Reject(e.Value());
  }

 private:
  std::string path_;
  Napi::Promise::Deferred deferred_;
  Napi::FunctionReference progress_;
  std::shared_ptr<Model> model_;
  std::unique_ptr<FormatError> fe_;
};

Napi::Value LoadModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = stringArg(info, 0, "path");
  Napi::Function cb;
  if (info.Length() > 1 && !info[1].IsUndefined() && !info[1].IsNull()) {
    if (!info[1].IsFunction()) throw Napi::TypeError::New(env, "onProgress must be a function");
    cb = info[1].As<Napi::Function>();
  }
  auto* w = new LoadWorker(env, path, cb);
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

Napi::Value ModelInfo(const Napi::CallbackInfo& info) {
  return modelInfoToJs(info.Env(), *modelBox(info.Env(), info[0], "model")->model);
}

Napi::Value DisposeModel(const Napi::CallbackInfo& info) {
  // Contexts hold their own reference, so the weights live until the last one is gone.
  modelBox(info.Env(), info[0], "model")->model.reset();
  return info.Env().Undefined();
}

// --- contexts --------------------------------------------------------------------------

Napi::Value CreateContext(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Model> model = modelBox(env, info[0], "model")->model;
  if (info.Length() < 2 || !info[1].IsObject()) throw Napi::TypeError::New(env, "options must be an object");
  Napi::Object o = info[1].As<Napi::Object>();
  ContextOptionsData opts;
  opts.kvBlocks = intArg(env, o.Get("kvBlocks"), "options.kvBlocks", 1, 1 << 24);
  opts.blockSize = intArg(env, o.Get("blockSize"), "options.blockSize", 1, 1 << 16);
  opts.maxBatchTokens = intArg(env, o.Get("maxBatchTokens"), "options.maxBatchTokens", 1, 1 << 20);
  opts.maxSeqs = intArg(env, o.Get("maxSeqs"), "options.maxSeqs", 1, 1 << 16);
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
  if (static_cast<double>(opts.blockSize) * static_cast<double>(opts.kvBlocks) > 2147483647.0)
    throw Napi::RangeError::New(env, "options.kvBlocks × blockSize must stay below 2^31 positions");
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
  const Context& ctx = *contextBox(env, info[0], "ctx")->ctx;
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
  Napi::Env env = info.Env();
  ContextBox* b = contextBox(env, info[0], "ctx");
  // A running step keeps its own reference; the memory goes when it finishes. A step waiting
  // for late masks would wait for ever (nobody can supply them now): it fails instead.
  if (b->ctx) b->ctx->lateMasks.abandon();
  b->ctx.reset();
  return env.Undefined();
}

// --- step ------------------------------------------------------------------------------

class StepWorker : public Napi::AsyncWorker {
 public:
  StepWorker(Napi::Env env, std::shared_ptr<Context> ctx) : Napi::AsyncWorker(env, "prism.step"), ctx_(std::move(ctx)), deferred_(env) {}
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      ctx_->step(ctx_->plan, ctx_->result);
    } catch (const std::exception& e) {
      ctx_->lateMasks.abandon();  // masks that arrive now are for nobody
      SetError(std::string("step failed: ") + e.what());
    }
  }
  void OnOK() override {
    Napi::Object o = stepResultToJs(Env(), ctx_->result, ctx_->plan.S, ctx_->plan.lateMaskRows > 0, ctx_->model()->cfg.vocab,
                                    !ctx_->plan.draftCounts.empty());
    ctx_->busy = false;
    deferred_.Resolve(o);
  }
  void OnError(const Napi::Error& e) override {
    ctx_->busy = false;
    deferred_.Reject(e.Value());
  }

 private:
  std::shared_ptr<Context> ctx_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value Step(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Context> ctx = contextBox(env, info[0], "ctx")->ctx;
  if (info.Length() < 2 || !info[1].IsObject()) throw Napi::TypeError::New(env, "plan must be an object");
  if (ctx->busy) throw Napi::Error::New(env, "step: another step is already running on this context");
  // The plan is copied before the context is marked busy, so a rejected plan leaves it free.
  readStepPlan(env, info[1].As<Napi::Object>(), *ctx, ctx->plan);
  if (ctx->plan.lateMaskRows > 0) ctx->lateMasks.expect(ctx->plan.lateMaskRows, (ctx->model()->cfg.vocab + 31) / 32);
  ctx->busy = true;
  auto* w = new StepWorker(env, ctx);
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

// Test hook: the next `count` steps on this context throw from native code mid-forward
// (native/native.ts faultTestHooks). Nothing a client sends reaches it.
Napi::Value FailNextStepsForTest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Context> ctx = contextBox(env, info[0], "ctx")->ctx;
  ctx->failSteps.store(static_cast<int>(intArg(env, info[1], "count", 0, 1 << 20)));
  return env.Undefined();
}

// Hands the running step the masks its plan announced with lateMaskRows (null: they will not
// come, the step fails). Returns false when no step waits for masks.
Napi::Value SupplyMasks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Context> ctx = contextBox(env, info[0], "ctx")->ctx;
  if (info.Length() < 2) throw Napi::TypeError::New(env, "masks must be an Int32Array or null");
  if (info[1].IsNull()) return Napi::Boolean::New(env, ctx->lateMasks.supply(nullptr, 0));
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
    throw Napi::TypeError::New(env, "masks must be an Int32Array or null");
  Napi::Int32Array a = info[1].As<Napi::Int32Array>();
  try {
    return Napi::Boolean::New(env, ctx->lateMasks.supply(a.Data(), a.ElementLength()));
  } catch (const std::length_error& e) {
    throw Napi::RangeError::New(env, e.what());
  }
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
  o.Set("amxBf16", kernels::cpuHasAmxBf16());
  o.Set("amxBf16Prefill", amxBf16PrefillSelected());
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

// Calls of the kLayoutQ4XV AMX kernel so far (kernels/amx/q4xv_amx.h), for tests.
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
  exports.Set("supplyMasks", Napi::Function::New(env, SupplyMasks));
  exports.Set("cpuFeatures", Napi::Function::New(env, CpuFeatures));
  exports.Set("matmulForTest", Napi::Function::New(env, MatmulForTest));
  exports.Set("quantizeForTest", Napi::Function::New(env, QuantizeForTest));
  exports.Set("dequantizeForTest", Napi::Function::New(env, DequantizeForTest));
  exports.Set("q4xvAmxCallsForTest", Napi::Function::New(env, Q4xvAmxCallsForTest));
  exports.Set("measureMemoryBandwidth", Napi::Function::New(env, MeasureMemoryBandwidth));
  exports.Set("sustainedReadRate", Napi::Function::New(env, SustainedReadRate));
  exports.Set("releaseReadBuffer", Napi::Function::New(env, ReleaseReadBuffer));
  exports.Set("hostInfo", Napi::Function::New(env, HostInfoExport));
  registerLoraExports(env, exports);  // lora_addon.cc
  registerCudaExports(env, exports);  // native/cuda/host/device_addon.cc
  registerKvTransferExports(env, exports);  // kv_transfer.cc
  registerEncoderExports(env, exports);     // encoder/encoder_addon.cc: pooling models
  return exports;
}

}  // namespace prism

static Napi::Object InitPrism(Napi::Env env, Napi::Object exports) { return prism::Init(env, exports); }
NODE_API_MODULE(prism_native, InitPrism)
