// The addon's CUDA exports (native/native.ts: cudaDevices, loadDeviceModel, createDeviceContext,
// deviceStep, ...). Glue only: handles, argument checks and async workers around
// device_model.h. The plan is read and checked by the CPU context's reader (plan_reader.h).
#include <dlfcn.h>
#include <napi.h>

#include <cmath>
#include <thread>

#include "device_model.h"
#include "format_error.h"
#include "handles.h"

namespace prism::cuda {
namespace {

const napi_type_tag kDeviceModelTag = {0x7072697301020304ull, 0x6375646d6f640001ull};
const napi_type_tag kDeviceContextTag = {0x7072697301020304ull, 0x637564637478ull};

struct DeviceModelBox {
  std::shared_ptr<DeviceModel> model;
};
struct DeviceContextBox {
  std::shared_ptr<DeviceContext> ctx;
};

template <typename Box>
Box* unwrap(Napi::Env env, Napi::Value v, const napi_type_tag& tag, const char* what, const char* kind) {
  bool ok = false;
  if (v.IsExternal()) napi_check_object_type_tag(env, v, &tag, &ok);
  if (!ok) throw Napi::TypeError::New(env, std::string(what) + " must be a " + kind + " handle");
  return v.As<Napi::External<Box>>().Data();
}
DeviceModelBox* modelOf(Napi::Env env, Napi::Value v) {
  DeviceModelBox* b = unwrap<DeviceModelBox>(env, v, kDeviceModelTag, "model", "CUDA model");
  if (!b->model) throw Napi::Error::New(env, "model: the model has been disposed");
  return b;
}
DeviceContextBox* contextOf(Napi::Env env, Napi::Value v) {
  DeviceContextBox* b = unwrap<DeviceContextBox>(env, v, kDeviceContextTag, "ctx", "CUDA context");
  if (!b->ctx) throw Napi::Error::New(env, "ctx: the context has been disposed");
  return b;
}

// libprism_cuda.so beside this addon (build/Release/), unless PRISM_CUDA_LIBRARY names one.
std::string libraryPath() {
  Dl_info info{};
  std::string dir = ".";
  if (dladdr(reinterpret_cast<void*>(&libraryPath), &info) && info.dli_fname) {
    dir = info.dli_fname;
    dir = dir.substr(0, dir.find_last_of('/'));
  }
  return defaultCudaLibraryPath(dir);
}

int64_t intArg(Napi::Env env, Napi::Value v, const std::string& name, int64_t min, int64_t max) {
  if (!v.IsNumber()) throw Napi::TypeError::New(env, name + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d == std::floor(d)) || d < static_cast<double>(min) || d > static_cast<double>(max))
    throw Napi::RangeError::New(env, name + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return static_cast<int64_t>(d);
}

Napi::Error formatError(Napi::Env env, const FormatError& e) {
  Napi::Error err = Napi::Error::New(env, e.what());
  err.Set("code", "PRISM_MODEL_FORMAT");
  err.Set("file", e.file());
  if (!e.tensor().empty()) err.Set("tensor", e.tensor());
  err.Set("reason", e.reason());
  return err;
}

Napi::Object deviceInfoToJs(Napi::Env env, int device, const pc_device_info& d) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("device", "cuda:" + std::to_string(device));
  o.Set("name", d.name);
  o.Set("totalBytes", static_cast<double>(d.total_bytes));
  o.Set("freeBytes", static_cast<double>(d.free_bytes));
  o.Set("multiprocessors", d.multiprocessors);
  o.Set("computeCapability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor));
  o.Set("l2Bytes", static_cast<double>(d.l2_bytes));
  o.Set("peakBandwidthGBs", d.peak_bandwidth_gbs);
  o.Set("emulated", d.emulated != 0);
  return o;
}

// --- devices ------------------------------------------------------------------------------

// Every visible device; throws naming the library and why it cannot be used.
Napi::Value CudaDevices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    const CudaLibrary& lib = loadCudaLibrary(libraryPath());
    int32_t count = 0;
    lib.check(lib.pc_device_count(&count), "counting CUDA devices");
    Napi::Array out = Napi::Array::New(env, static_cast<size_t>(count));
    for (int32_t d = 0; d < count; d++) {
      pc_device_info di{};
      lib.check(lib.pc_device_info_get(d, &di), "reading a CUDA device");
      out.Set(static_cast<uint32_t>(d), deviceInfoToJs(env, d, di));
    }
    return out;
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
}

class BandwidthWorker : public Napi::AsyncWorker {
 public:
  BandwidthWorker(Napi::Env env, int device, uint64_t bytes, int passes)
      : Napi::AsyncWorker(env, "prism.cudaBandwidth"), device_(device), bytes_(bytes), passes_(passes), deferred_(env) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      const CudaLibrary& lib = loadCudaLibrary(libraryPath());
      lib.check(lib.pc_measure_bandwidth(device_, bytes_, passes_, &gbs_), "measuring the device's read bandwidth");
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override { deferred_.Resolve(Napi::Number::New(Env(), gbs_)); }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  int device_;
  uint64_t bytes_;
  int passes_;
  double gbs_ = 0;
  Napi::Promise::Deferred deferred_;
};

Napi::Value MeasureDeviceBandwidth(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = static_cast<int>(intArg(env, info[0], "device", 0, 1024));
  const uint64_t bytes = static_cast<uint64_t>(intArg(env, info[1], "bytes", 1 << 20, int64_t{64} << 30));
  const int passes = static_cast<int>(intArg(env, info[2], "passes", 1, 1000));
  auto* w = new BandwidthWorker(env, device, bytes, passes);
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

// --- models -------------------------------------------------------------------------------

class LoadWorker : public Napi::AsyncProgressQueueWorker<double> {
 public:
  LoadWorker(Napi::Env env, std::string path, int device, int kernels, Napi::Function onProgress)
      : Napi::AsyncProgressQueueWorker<double>(env, "prism.loadDeviceModel"), path_(std::move(path)), device_(device),
        kernels_(kernels), deferred_(env) {
    if (!onProgress.IsEmpty()) progress_ = Napi::Persistent(onProgress);
  }
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute(const ExecutionProgress& progress) override {
    try {
      model_ = loadDeviceModel(path_, device_, kernels_, libraryPath(), [&](double f) { progress.Send(&f, 1); });
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
    try {
      progress_.Call({Napi::Number::New(Env(), data[count - 1])});
    } catch (const Napi::Error&) {
      // A throwing progress callback must not break the load.
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    auto ext = Napi::External<DeviceModelBox>::New(env, new DeviceModelBox{std::move(model_)},
                                                   [](Napi::Env, DeviceModelBox* b) { delete b; });
    napi_type_tag_object(env, ext, &kDeviceModelTag);
    deferred_.Resolve(ext);
  }
  void OnError(const Napi::Error& e) override {
    if (fe_) deferred_.Reject(formatError(Env(), *fe_).Value());
    else deferred_.Reject(e.Value());
  }

 private:
  std::string path_;
  int device_, kernels_;
  Napi::Promise::Deferred deferred_;
  Napi::FunctionReference progress_;
  std::shared_ptr<DeviceModel> model_;
  std::unique_ptr<FormatError> fe_;
};

Napi::Value LoadDeviceModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "path must be a string");
  const int device = static_cast<int>(intArg(env, info[1], "device", 0, 1024));
  Napi::Function cb;
  if (info.Length() > 2 && !info[2].IsUndefined() && !info[2].IsNull()) {
    if (!info[2].IsFunction()) throw Napi::TypeError::New(env, "onProgress must be a function");
    cb = info[2].As<Napi::Function>();
  }
  const int kernels = static_cast<int>(intArg(env, info[3], "kernels", PC_KERNELS_LEGACY, PC_KERNELS_FAST));
  auto* w = new LoadWorker(env, info[0].As<Napi::String>().Utf8Value(), device, kernels, cb);
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

Napi::Value DeviceModelInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const DeviceModel& d = *modelOf(env, info[0])->model;
  Napi::Object o = modelInfoToJs(env, *d.host);
  o.Set("device", "cuda:" + std::to_string(d.device));
  o.Set("deviceName", d.deviceName);
  o.Set("deviceBytes", static_cast<double>(d.deviceBytes));
  o.Set("cudaKernels", d.kernels == PC_KERNELS_FAST ? "fast" : "legacy");
  return o;
}

Napi::Value DisposeDeviceModel(const Napi::CallbackInfo& info) {
  // Contexts hold their own reference: the device memory goes with the last of them.
  modelOf(info.Env(), info[0])->model.reset();
  return info.Env().Undefined();
}

// --- contexts -----------------------------------------------------------------------------

Napi::Value CreateDeviceContext(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<DeviceModel> model = modelOf(env, info[0])->model;
  if (info.Length() < 2 || !info[1].IsObject()) throw Napi::TypeError::New(env, "options must be an object");
  Napi::Object o = info[1].As<Napi::Object>();
  ContextOptionsData opts;
  opts.kvBlocks = intArg(env, o.Get("kvBlocks"), "options.kvBlocks", 1, 1 << 24);
  opts.blockSize = intArg(env, o.Get("blockSize"), "options.blockSize", 1, 1 << 16);
  opts.maxBatchTokens = intArg(env, o.Get("maxBatchTokens"), "options.maxBatchTokens", 1, 1 << 20);
  opts.maxSeqs = intArg(env, o.Get("maxSeqs"), "options.maxSeqs", 1, 1 << 16);
  if (!o.Get("maxLoras").IsUndefined() && intArg(env, o.Get("maxLoras"), "options.maxLoras", 0, 1024) > 0)
    throw Napi::RangeError::New(env, "options.maxLoras: LoRA adapters are not supported on a CUDA device yet");
  if (static_cast<double>(opts.blockSize) * static_cast<double>(opts.kvBlocks) > 2147483647.0)
    throw Napi::RangeError::New(env, "options.kvBlocks × blockSize must stay below 2^31 positions");
  try {
    auto ctx = std::make_shared<DeviceContext>(model, opts);
    auto ext = Napi::External<DeviceContextBox>::New(env, new DeviceContextBox{std::move(ctx)},
                                                     [](Napi::Env, DeviceContextBox* b) { delete b; });
    napi_type_tag_object(env, ext, &kDeviceContextTag);
    return ext;
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
}

Napi::Value DeviceContextInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const DeviceContext& ctx = *contextOf(env, info[0])->ctx;
  Napi::Object o = Napi::Object::New(env);
  o.Set("kvBlocks", static_cast<double>(ctx.options().kvBlocks));
  o.Set("blockSize", static_cast<double>(ctx.options().blockSize));
  try {
    o.Set("kvBytes", static_cast<double>(ctx.kvBytes()));
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
  o.Set("threads", 1);
  o.Set("isa", "cuda");
  o.Set("device", "cuda:" + std::to_string(ctx.model()->device));
  o.Set("deviceName", ctx.model()->deviceName);
  o.Set("lastStepDeviceMs", ctx.lastStepDeviceMs());
  o.Set("lastStepLaunches", static_cast<double>(ctx.lastStepLaunches()));
  return o;
}

Napi::Value DisposeDeviceContext(const Napi::CallbackInfo& info) {
  DeviceContextBox* b = contextOf(info.Env(), info[0]);
  b->ctx->lateMasks.abandon();  // a step waiting for masks would wait for ever
  b->ctx.reset();
  return info.Env().Undefined();
}

class StepWorker : public Napi::AsyncWorker {
 public:
  StepWorker(Napi::Env env, std::shared_ptr<DeviceContext> ctx)
      : Napi::AsyncWorker(env, "prism.deviceStep"), ctx_(std::move(ctx)), deferred_(env) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    try {
      ctx_->step(ctx_->plan, ctx_->result);
    } catch (const std::exception& e) {
      ctx_->lateMasks.abandon();
      SetError(std::string("step failed: ") + e.what());
    }
  }
  void OnOK() override {
    Napi::Object o = stepResultToJs(Env(), ctx_->result, ctx_->plan.S, ctx_->plan.lateMaskRows > 0,
                                    ctx_->model()->host->cfg.vocab);
    ctx_->busy = false;
    deferred_.Resolve(o);
  }
  void OnError(const Napi::Error& e) override {
    ctx_->busy = false;
    deferred_.Reject(e.Value());
  }

 private:
  std::shared_ptr<DeviceContext> ctx_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value DeviceStep(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<DeviceContext> ctx = contextOf(env, info[0])->ctx;
  if (info.Length() < 2 || !info[1].IsObject()) throw Napi::TypeError::New(env, "plan must be an object");
  if (ctx->busy) throw Napi::Error::New(env, "step: another step is already running on this context");
  readStepPlan(env, info[1].As<Napi::Object>(), ctx->limits(), ctx->plan);
  if (ctx->plan.lateMaskRows > 0) ctx->lateMasks.expect(ctx->plan.lateMaskRows, (ctx->model()->host->cfg.vocab + 31) / 32);
  ctx->busy = true;
  auto* w = new StepWorker(env, ctx);
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

Napi::Value DeviceSupplyMasks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<DeviceContext> ctx = contextOf(env, info[0])->ctx;
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

Napi::Value DeviceFailNextStepsForTest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  contextOf(env, info[0])->ctx->failSteps.store(static_cast<int>(intArg(env, info[1], "count", 0, 1 << 20)));
  return env.Undefined();
}

}  // namespace
}  // namespace prism::cuda

namespace prism {

void registerCudaExports(Napi::Env env, Napi::Object exports) {
  using namespace cuda;
  exports.Set("cudaDevices", Napi::Function::New(env, CudaDevices));
  exports.Set("measureDeviceBandwidth", Napi::Function::New(env, MeasureDeviceBandwidth));
  exports.Set("loadDeviceModel", Napi::Function::New(env, LoadDeviceModel));
  exports.Set("deviceModelInfo", Napi::Function::New(env, DeviceModelInfo));
  exports.Set("disposeDeviceModel", Napi::Function::New(env, DisposeDeviceModel));
  exports.Set("createDeviceContext", Napi::Function::New(env, CreateDeviceContext));
  exports.Set("deviceContextInfo", Napi::Function::New(env, DeviceContextInfo));
  exports.Set("disposeDeviceContext", Napi::Function::New(env, DisposeDeviceContext));
  exports.Set("deviceStep", Napi::Function::New(env, DeviceStep));
  exports.Set("deviceSupplyMasks", Napi::Function::New(env, DeviceSupplyMasks));
  exports.Set("deviceFailNextStepsForTest", Napi::Function::New(env, DeviceFailNextStepsForTest));
}

}  // namespace prism
