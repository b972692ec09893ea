// The addon's LoRA exports (see native/native.ts): createAdapter(Async), adapterInfo,
// disposeAdapter, setAdapterSlot. Glue only; the math is in lora.cc.
#include <napi.h>

#include <cmath>
#include <stdexcept>

#include "handles.h"
#include "lora.h"

namespace prism {
namespace {

const glue::HandleKind kAdapterHandle{{0x7072697301020304ull, 0x6c6f726100000001ull}, "an adapter", "adapter"};

const std::shared_ptr<const Adapter>& adapterArg(Napi::Env env, Napi::Value v, const char* what) {
  return glue::handleArg<const Adapter>(env, v, kAdapterHandle, what);
}

Napi::Float32Array f32Field(Napi::Env env, Napi::Object o, const char* field, const std::string& where) {
  Napi::Value v = o.Get(field);
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
    throw Napi::TypeError::New(env, where + "." + field + " must be a Float32Array");
  return v.As<Napi::Float32Array>();
}

int64_t intField(Napi::Env env, Napi::Object o, const char* field, const std::string& where, int64_t lo, int64_t hi) {
  return glue::intArg(env, o.Get(field), where + "." + field, lo, hi);
}

// Reads createAdapter's arguments: the model, the layers (pointers into their
// Float32Arrays, which the caller keeps alive) and the storage type.
struct AdapterArgs {
  std::shared_ptr<Model> model;
  std::vector<LoraSource> sources;
  LoraStorage storage = LoraStorage::F32;
};

AdapterArgs adapterArgs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AdapterArgs args;
  args.model = modelArg(env, info[0], "model");
  if (info.Length() < 2 || !info[1].IsArray()) throw Napi::TypeError::New(env, "layers must be an array");
  Napi::Array arr = info[1].As<Napi::Array>();
  if (info.Length() > 2 && !info[2].IsUndefined()) {
    const std::string s = info[2].IsString() ? info[2].As<Napi::String>().Utf8Value() : "";
    if (s == "F16") args.storage = LoraStorage::F16;
    else if (s != "F32") throw Napi::TypeError::New(env, "storage must be 'F32' or 'F16'");
  }
  args.sources.reserve(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); i++) {
    const std::string where = "layers[" + std::to_string(i) + "]";
    Napi::Value item = arr.Get(i);
    if (!item.IsObject()) throw Napi::TypeError::New(env, where + " must be an object");
    Napi::Object o = item.As<Napi::Object>();
    LoraSource s;
    s.layer = intField(env, o, "layer", where, 0, 1 << 20);
    Napi::Value t = o.Get("target");
    if (!t.IsString() || !loraTargetFromName(t.As<Napi::String>().Utf8Value(), &s.target))
      throw Napi::TypeError::New(env, where + ".target must be one of q, k, v, o, gate, up, down");
    s.rank = intField(env, o, "rank", where, 1, 65536);
    Napi::Value sc = o.Get("scale");
    if (!sc.IsNumber() || !std::isfinite(sc.As<Napi::Number>().DoubleValue()))
      throw Napi::TypeError::New(env, where + ".scale must be a finite number");
    s.scale = static_cast<float>(sc.As<Napi::Number>().DoubleValue());
    Napi::Float32Array a = f32Field(env, o, "a", where), b = f32Field(env, o, "b", where);
    s.a = a.Data();
    s.aLen = a.ElementLength();
    s.b = b.Data();
    s.bLen = b.ElementLength();
    args.sources.push_back(s);
  }
  return args;
}

Napi::Value wrapAdapter(Napi::Env env, std::shared_ptr<const Adapter> adapter) {
  return glue::wrapHandle(env, std::move(adapter), kAdapterHandle);
}

// createAdapter(model, layers: {layer, target, rank, scale, a, b}[], storage: 'F32' | 'F16')
Napi::Value CreateAdapter(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  AdapterArgs args = adapterArgs(info);
  std::shared_ptr<const Adapter> adapter;
  try {
    adapter = buildAdapter(args.model->cfg, args.sources, args.storage);
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, std::string("createAdapter: ") + e.what());
  } catch (const std::bad_alloc&) {
    throw Napi::Error::New(env, "createAdapter: out of memory");
  }
  return wrapAdapter(env, std::move(adapter));
}

// createAdapterAsync: the same copy/convert/permute on a libuv worker thread, so a dynamic
// load (tens of millions of values for a rank-64 adapter) never stalls the event loop. The
// layers array stays referenced until the work ends: its Float32Arrays are read there.
Napi::Value CreateAdapterAsync(const Napi::CallbackInfo& info) {
  auto args = std::make_shared<AdapterArgs>(adapterArgs(info));
  return glue::Work<std::shared_ptr<const Adapter>>::queue(
      info.Env(), "prism.createAdapter", glue::ErrorPolicy{"createAdapter: ", "createAdapter: out of memory", false, true},
      [args] { return buildAdapter(args->model->cfg, args->sources, args->storage); },
      [](Napi::Env env, std::shared_ptr<const Adapter>& adapter) { return wrapAdapter(env, std::move(adapter)); }, {},
      info[1].As<Napi::Object>());
}

Napi::Value AdapterInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Adapter& a = *adapterArg(env, info[0], "adapter");
  Napi::Object o = Napi::Object::New(env);
  o.Set("rank", static_cast<double>(a.maxRank));
  o.Set("bytes", static_cast<double>(a.bytes));
  o.Set("storage", a.storage == LoraStorage::F16 ? "F16" : "F32");
  int64_t n = 0;
  for (const auto& layer : a.layers)
    for (const auto& m : layer) n += m.rank > 0;
  o.Set("adaptedLinears", static_cast<double>(n));
  return o;
}

Napi::Value DisposeAdapter(const Napi::CallbackInfo& info) {
  // Slots hold their own reference: a bound adapter lives until it is unbound.
  glue::handleBox<const Adapter>(info.Env(), info[0], kAdapterHandle, "adapter")->ptr.reset();
  return info.Env().Undefined();
}

// setAdapterSlot(ctx, slot, adapter | null)
Napi::Value SetAdapterSlot(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<Context> ctx = contextArg(env, info[0], "ctx");
  if (!info[1].IsNumber()) throw Napi::TypeError::New(env, "slot must be a number");
  const double d = info[1].As<Napi::Number>().DoubleValue();
  if (d != std::floor(d) || d < 0 || d >= static_cast<double>(ctx->lora().slots()))
    throw Napi::RangeError::New(env, "slot must be an integer in [0, " + std::to_string(ctx->lora().slots()) +
                                         ") (the context's maxLoras)");
  std::shared_ptr<const Adapter> a;
  if (!info[2].IsNull() && !info[2].IsUndefined()) a = adapterArg(env, info[2], "adapter");
  // A running step reads only the slots its plan names (the plan is not written while it
  // runs), so other slots may change under it; its own may not.
  if (ctx->busy)
    for (int32_t s : ctx->plan.adapterSlots)
      if (s == static_cast<int32_t>(d))
        throw Napi::Error::New(env, "setAdapterSlot: the running step uses slot " + std::to_string(s) + "; change it between steps");
  try {
    ctx->lora().bind(static_cast<int64_t>(d), std::move(a));
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, std::string("setAdapterSlot: ") + e.what());
  }
  return env.Undefined();
}

}  // namespace

void registerLoraExports(Napi::Env env, Napi::Object exports) {
  exports.Set("createAdapter", Napi::Function::New(env, CreateAdapter));
  exports.Set("createAdapterAsync", Napi::Function::New(env, CreateAdapterAsync));
  exports.Set("adapterInfo", Napi::Function::New(env, AdapterInfo));
  exports.Set("disposeAdapter", Napi::Function::New(env, DisposeAdapter));
  exports.Set("setAdapterSlot", Napi::Function::New(env, SetAdapterSlot));
}

}  // namespace prism
