// The addon's pooling-model exports (see native/native.ts, "Pooling models"): encoders
// (load, info, contexts, encode) and the pooling spec of any model path. Glue only: argument
// checks, conversions and async workers; the math is in encoder_forward.cc and pooling.cc.
#include <napi.h>

#include <cmath>
#include <thread>

#include "addon_glue.h"
#include "encoder/encoder_context.h"
#include "encoder/packed_attention.h"
#include "format_error.h"
#include "gguf.h"

namespace prism {
namespace {

const napi_type_tag kEncoderTag = {0x7072697301020304ull, 0x656e636f64650001ull};
const napi_type_tag kEncoderContextTag = {0x7072697301020304ull, 0x656e63637478001ull};

struct EncoderBox {
  std::shared_ptr<EncoderModel> model;
};
struct EncoderContextBox {
  std::shared_ptr<EncoderContext> ctx;
};

template <typename Box>
Box* box(Napi::Env env, Napi::Value v, const napi_type_tag& tag, const char* what, const char* kind) {
  bool ok = false;
  if (v.IsExternal()) napi_check_object_type_tag(env, v, &tag, &ok);
  if (!ok) throw Napi::TypeError::New(env, std::string(what) + " must be an " + kind + " handle");
  return v.As<Napi::External<Box>>().Data();
}

std::shared_ptr<EncoderModel> encoderArg(Napi::Env env, Napi::Value v) {
  EncoderBox* b = box<EncoderBox>(env, v, kEncoderTag, "encoder", "encoder");
  if (!b->model) throw Napi::Error::New(env, "encoder: the encoder has been disposed");
  return b->model;
}

EncoderContextBox* contextArg(Napi::Env env, Napi::Value v) {
  EncoderContextBox* b = box<EncoderContextBox>(env, v, kEncoderContextTag, "ctx", "encoder context");
  if (!b->ctx) throw Napi::Error::New(env, "ctx: the encoder context has been disposed");
  return b;
}

// A model-file problem as the JS error errors.ts maps onto ModelFormatError.
Napi::Value formatErrorValue(Napi::Env env, const FormatError& e) {
  Napi::Error err = Napi::Error::New(env, e.what());
  err.Set("code", "PRISM_MODEL_FORMAT");
  err.Set("file", e.file());
  if (!e.tensor().empty()) err.Set("tensor", e.tensor());
  err.Set("reason", e.reason());
  return err.Value();
}

std::string pathArg(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(info.Env(), "path must be a string");
  return info[0].As<Napi::String>().Utf8Value();
}

int64_t intField(Napi::Env env, Napi::Object o, const char* key, int64_t min, int64_t max, int64_t fallback) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return fallback;
  const double d = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : NAN;
  if (!(d == std::floor(d)) || d < static_cast<double>(min) || d > static_cast<double>(max))
    throw Napi::RangeError::New(env, std::string("options.") + key + " must be an integer in [" + std::to_string(min) + ", " +
                                         std::to_string(max) + "]");
  return static_cast<int64_t>(d);
}

Napi::Object poolingToJs(Napi::Env env, const PoolingSpec& p) {
  Napi::Object o = Napi::Object::New(env);
  Napi::Array modes = Napi::Array::New(env, p.modes.size());
  for (size_t k = 0; k < p.modes.size(); k++) modes.Set(static_cast<uint32_t>(k), poolingModeName(p.modes[k]));
  o.Set("modes", modes);
  o.Set("rank", p.rank);
  o.Set("normalize", p.normalize);
  o.Set("maxSeqLength", static_cast<double>(p.maxSeqLength));
  o.Set("doLowerCase", p.doLowerCase);
  o.Set("source", p.source);
  return o;
}

// --- probing ---------------------------------------------------------------------------

Napi::Value IsEncoderModel(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), isEncoderPath(pathArg(info)));
}

Napi::Value ReadPoolingSpec(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string path = pathArg(info);
  try {
    return poolingToJs(env, readPoolingSpec(path));
  } catch (const FormatError& e) {
    throw Napi::Error(env, formatErrorValue(env, e));
  }
}

// --- encoders ----------------------------------------------------------------------------

class LoadEncoderWorker : public Napi::AsyncWorker {
 public:
  LoadEncoderWorker(Napi::Env env, std::string path) : Napi::AsyncWorker(env, "prism.loadEncoder"), path_(std::move(path)), deferred_(env) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      model_ = loadEncoderFromPath(path_, nullptr);
    } catch (const FormatError& e) {
      fe_ = std::make_unique<FormatError>(e);
      SetError(e.what());
    } catch (const std::bad_alloc&) {
      SetError(path_ + ": out of memory while loading");
    } catch (const std::exception& e) {
      SetError(path_ + ": " + e.what());
    }
  }
  void OnOK() override {
    auto ext = Napi::External<EncoderBox>::New(Env(), new EncoderBox{std::move(model_)}, [](Napi::Env, EncoderBox* b) { delete b; });
    napi_type_tag_object(Env(), ext, &kEncoderTag);
    deferred_.Resolve(ext);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(fe_ ? formatErrorValue(Env(), *fe_) : e.Value()); }

 private:
  std::string path_;
  Napi::Promise::Deferred deferred_;
  std::shared_ptr<EncoderModel> model_;
  std::unique_ptr<FormatError> fe_;
};

Napi::Value LoadEncoder(const Napi::CallbackInfo& info) {
  auto* w = new LoadEncoderWorker(info.Env(), pathArg(info));
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

const char* ffnName(EncoderFfn f) {
  switch (f) {
    case EncoderFfn::GeluErf: return "gelu";
    case EncoderFfn::GeluTanh: return "gelu_tanh";
    case EncoderFfn::SwiGlu: return "swiglu";
  }
  return "?";
}

Napi::Value EncoderInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const EncoderModel& m = *encoderArg(env, info[0]);
  const EncoderConfig& c = m.cfg;
  Napi::Object o = Napi::Object::New(env);
  o.Set("path", c.path);
  o.Set("format", c.format);
  o.Set("architecture", c.family);
  o.Set("name", c.name);
  o.Set("vocabSize", static_cast<double>(c.vocab));
  o.Set("hiddenSize", static_cast<double>(c.hidden));
  o.Set("intermediateSize", static_cast<double>(c.intermediate));
  o.Set("numLayers", static_cast<double>(c.layers));
  o.Set("numHeads", static_cast<double>(c.heads));
  o.Set("maxTokens", static_cast<double>(c.maxTokens()));
  o.Set("tokenTypes", static_cast<double>(c.typeVocab));
  o.Set("activation", ffnName(c.ffn));
  Napi::Array labels = Napi::Array::New(env, c.labels.size());
  for (size_t k = 0; k < c.labels.size(); k++) labels.Set(static_cast<uint32_t>(k), c.labels[k]);
  o.Set("labels", labels);
  o.Set("pooling", poolingToJs(env, c.pooling));
  o.Set("pooledDim", static_cast<double>(c.pooling.modes.size() * c.hidden));
  o.Set("weightBytes", m.weightBytes);
  o.Set("activations", m.activations == ActivationPrecision::Int8 ? "int8" : "int16");
  Napi::Object types = Napi::Object::New(env);
  for (const auto& [k, v] : m.tensorTypes) types.Set(k, v);
  o.Set("tensorTypes", types);
  return o;
}

Napi::Value DisposeEncoder(const Napi::CallbackInfo& info) {
  // Contexts hold their own reference: the weights live until the last one is gone.
  box<EncoderBox>(info.Env(), info[0], kEncoderTag, "encoder", "encoder")->model.reset();
  return info.Env().Undefined();
}

Napi::Value CreateEncoderContext(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<EncoderModel> model = encoderArg(env, info[0]);
  if (info.Length() < 2 || !info[1].IsObject()) throw Napi::TypeError::New(env, "options must be an object");
  Napi::Object o = info[1].As<Napi::Object>();
  EncoderContextOptions opts;
  opts.maxBatchTokens = intField(env, o, "maxBatchTokens", 1, 1 << 20, 0);
  opts.maxSeqs = intField(env, o, "maxSeqs", 1, 1 << 16, 0);
  if (opts.maxBatchTokens == 0 || opts.maxSeqs == 0)
    throw Napi::TypeError::New(env, "options.maxBatchTokens and options.maxSeqs are required");
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  opts.threads = static_cast<int>(intField(env, o, "threads", 1, 1024, hw));
  try {
    auto ctx = std::make_shared<EncoderContext>(std::move(model), opts);
    auto ext = Napi::External<EncoderContextBox>::New(env, new EncoderContextBox{std::move(ctx)},
                                                      [](Napi::Env, EncoderContextBox* b) { delete b; });
    napi_type_tag_object(env, ext, &kEncoderContextTag);
    return ext;
  } catch (const std::bad_alloc&) {
    throw Napi::Error::New(env, "cannot allocate the encoder context's buffers");
  }
}

Napi::Value DisposeEncoderContext(const Napi::CallbackInfo& info) {
  // A running pass keeps its own reference; the memory goes when it finishes.
  box<EncoderContextBox>(info.Env(), info[0], kEncoderContextTag, "ctx", "encoder context")->ctx.reset();
  return info.Env().Undefined();
}

class EncodeWorker : public Napi::AsyncWorker {
 public:
  // `arrays`: the batch's typed arrays and the output, kept alive while the pass reads them.
  EncodeWorker(Napi::Env env, std::shared_ptr<EncoderContext> ctx, const EncoderBatch& batch, EncoderOutput what,
               std::vector<Napi::Object> arrays, float* out)
      : Napi::AsyncWorker(env, "prism.encode"), ctx_(std::move(ctx)), batch_(batch), what_(what), out_(out), deferred_(env) {
    for (Napi::Object& a : arrays) refs_.push_back(Napi::Persistent(a));
  }
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      ctx_->run(batch_, what_, out_);
    } catch (const std::exception& e) {
      SetError(std::string("encode failed: ") + e.what());
    }
  }
  void OnOK() override {
    ctx_->busy = false;
    deferred_.Resolve(refs_.back().Value());  // the output array
  }
  void OnError(const Napi::Error& e) override {
    ctx_->busy = false;
    deferred_.Reject(e.Value());
  }

 private:
  std::shared_ptr<EncoderContext> ctx_;
  EncoderBatch batch_;
  EncoderOutput what_;
  float* out_;
  Napi::Promise::Deferred deferred_;
  std::vector<Napi::ObjectReference> refs_;
};

Napi::Int32Array int32Field(Napi::Env env, Napi::Object o, const char* key, bool required) {
  Napi::Value v = o.Get(key);
  if (!required && v.IsUndefined()) return Napi::Int32Array();
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
    throw Napi::TypeError::New(env, std::string("batch.") + key + " must be an Int32Array");
  return v.As<Napi::Int32Array>();
}

// encode(ctx, {tokens, seqOffsets, tokenTypes?, output}) -> Promise<Float32Array>
Napi::Value Encode(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  EncoderContextBox* b = contextArg(env, info[0]);
  if (info.Length() < 2 || !info[1].IsObject()) throw Napi::TypeError::New(env, "batch must be an object");
  Napi::Object o = info[1].As<Napi::Object>();
  Napi::Int32Array tokens = int32Field(env, o, "tokens", true), offsets = int32Field(env, o, "seqOffsets", true);
  Napi::Int32Array types = int32Field(env, o, "tokenTypes", false);
  const std::string output = o.Get("output").IsString() ? o.Get("output").As<Napi::String>().Utf8Value() : "";
  EncoderOutput what;
  if (output == "pooled") what = EncoderOutput::Pooled;
  else if (output == "tokens") what = EncoderOutput::Tokens;
  else if (output == "scores") what = EncoderOutput::Scores;
  else throw Napi::TypeError::New(env, "batch.output must be 'pooled', 'tokens' or 'scores'");
  if (offsets.ElementLength() < 2) throw Napi::RangeError::New(env, "batch.seqOffsets needs at least 2 entries (one input)");
  EncoderBatch batch;
  batch.tokens = tokens.Data();
  batch.seqOffsets = offsets.Data();
  batch.S = static_cast<int32_t>(offsets.ElementLength() - 1);
  // Offsets first: every other check indexes by them.
  for (int32_t s = 0; s < batch.S; s++)
    if (offsets[s + 1] < offsets[s]) throw Napi::RangeError::New(env, "batch.seqOffsets must not decrease");
  if (offsets[0] != 0 || static_cast<size_t>(offsets[batch.S]) != tokens.ElementLength())
    throw Napi::RangeError::New(env, "batch.seqOffsets must run from 0 to tokens.length");
  if (!types.IsEmpty()) {
    if (types.ElementLength() != tokens.ElementLength())
      throw Napi::RangeError::New(env, "batch.tokenTypes must have one entry per token");
    batch.tokenTypes = types.Data();
  }
  std::shared_ptr<EncoderContext> ctx = b->ctx;
  if (std::string why = ctx->check(batch, what); !why.empty()) throw Napi::RangeError::New(env, "batch." + why);
  if (ctx->busy) throw Napi::Error::New(env, "encode: another pass is already running on this context");
  const int64_t D = ctx->model()->cfg.hidden;
  const size_t n = what == EncoderOutput::Tokens   ? static_cast<size_t>(batch.T()) * D
                   : what == EncoderOutput::Scores ? static_cast<size_t>(batch.S) * ctx->model()->cfg.numLabels
                                                   : static_cast<size_t>(batch.S) * ctx->pooledDim();
  Napi::Float32Array out = Napi::Float32Array::New(env, n);
  std::vector<Napi::Object> arrays = {tokens, offsets};
  if (!types.IsEmpty()) arrays.push_back(types);
  arrays.push_back(out);
  ctx->busy = true;
  auto* w = new EncodeWorker(env, ctx, batch, what, std::move(arrays), out.Data());
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}


// attentionForTest(qkv, seqOffsets, heads, headDim, threads) -> Float32Array [T × heads·headDim]:
// packedAttention on its own, for tests against a reference (kernelTestHooks.attention).
Napi::Value AttentionForTest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
    throw Napi::TypeError::New(env, "qkv must be a Float32Array");
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
    throw Napi::TypeError::New(env, "seqOffsets must be an Int32Array");
  Napi::Float32Array qkv = info[0].As<Napi::Float32Array>();
  Napi::Int32Array offsets = info[1].As<Napi::Int32Array>();
  const int64_t heads = glue::intArg(env, info[2], "heads", 1, 256), headDim = glue::intArg(env, info[3], "headDim", 8, 512);
  const int64_t threads = glue::intArg(env, info[4], "threads", 1, 256);
  if (headDim % 8 != 0) throw Napi::RangeError::New(env, "headDim must be a multiple of 8");
  if (offsets.ElementLength() < 2) throw Napi::RangeError::New(env, "seqOffsets needs at least 2 entries (one input)");
  const size_t S = offsets.ElementLength() - 1;
  for (size_t s = 0; s < S; s++)
    if (offsets[s + 1] < offsets[s]) throw Napi::RangeError::New(env, "seqOffsets must not decrease");
  const int64_t T = offsets[S], D = heads * headDim;
  if (offsets[0] != 0 || static_cast<size_t>(T * 3 * D) != qkv.ElementLength())
    throw Napi::RangeError::New(env, "seqOffsets must run from 0 to the token count, and qkv must hold T × 3 × heads × headDim floats");
  return glue::guarded(env, [&]() -> Napi::Value {
    Napi::Float32Array out = Napi::Float32Array::New(env, static_cast<size_t>(T * D));
    ThreadPool pool(static_cast<int>(threads));
    std::vector<std::vector<float>> scratch(pool.size());
    packedAttention(pool, qkv.Data(), out.Data(), offsets.Data(), static_cast<int32_t>(S), heads, headDim, scratch);
    return out;
  });
}

}  // namespace

void registerHiddenStepExports(Napi::Env env, Napi::Object exports);  // hidden_step_addon.cc

void registerEncoderExports(Napi::Env env, Napi::Object exports) {
  exports.Set("isEncoderModel", Napi::Function::New(env, IsEncoderModel));
  exports.Set("readPoolingSpec", Napi::Function::New(env, ReadPoolingSpec));
  exports.Set("loadEncoder", Napi::Function::New(env, LoadEncoder));
  exports.Set("encoderInfo", Napi::Function::New(env, EncoderInfo));
  exports.Set("disposeEncoder", Napi::Function::New(env, DisposeEncoder));
  exports.Set("createEncoderContext", Napi::Function::New(env, CreateEncoderContext));
  exports.Set("disposeEncoderContext", Napi::Function::New(env, DisposeEncoderContext));
  exports.Set("encode", Napi::Function::New(env, Encode));
  exports.Set("attentionForTest", Napi::Function::New(env, AttentionForTest));
  registerHiddenStepExports(env, exports);
}

}  // namespace prism
