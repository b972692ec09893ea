// The addon's CUDA exports (native/native.ts: cudaDevices, loadDeviceModel, createDeviceContext,
// deviceStep, ...) around device_model.h: the argument checks, handles, workers and error
// mapping are the CPU exports' (addon_glue.h), and the plan is read and checked by the CPU
// context's reader (plan_reader.h).
#include <napi.h>

#include "addon_glue.h"
#include "device_model.h"
#include "handles.h"
#include "switches.h"

namespace prism::cuda {
namespace {

using glue::intArg;

const glue::HandleKind kDeviceModelHandle{{0x7072697301020304ull, 0x6375646d6f640001ull}, "a CUDA model", "model"};
const glue::HandleKind kDeviceContextHandle{{0x7072697301020304ull, 0x637564637478ull}, "a CUDA context", "context"};

const std::shared_ptr<DeviceModel>& modelArg(Napi::Env env, Napi::Value v) {
  return glue::handleArg<DeviceModel>(env, v, kDeviceModelHandle, "model");
}
const std::shared_ptr<DeviceContext>& contextArg(Napi::Env env, Napi::Value v) {
  return glue::handleArg<DeviceContext>(env, v, kDeviceContextHandle, "ctx");
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
    const CudaLibrary& lib = loadCudaLibrary(cudaLibraryPath());
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

Napi::Value MeasureDeviceBandwidth(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = static_cast<int>(intArg(env, info[0], "device", 0, 1024));
  const uint64_t bytes = static_cast<uint64_t>(intArg(env, info[1], "bytes", 1 << 20, int64_t{64} << 30));
  const int passes = static_cast<int>(intArg(env, info[2], "passes", 1, 1000));
  return glue::Work<double>::queue(
      env, "prism.cudaBandwidth", glue::ErrorPolicy{},
      [device, bytes, passes] {
        const CudaLibrary& lib = loadCudaLibrary(cudaLibraryPath());
        double gbs = 0;
        lib.check(lib.pc_measure_bandwidth(device, bytes, passes, &gbs), "measuring the device's read bandwidth");
        return gbs;
      },
      [](Napi::Env e, double& gbs) -> Napi::Value { return Napi::Number::New(e, gbs); });
}

// --- models -------------------------------------------------------------------------------

Napi::Value LoadDeviceModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string path = glue::stringArg(info, 0, "path");
  const int device = static_cast<int>(intArg(env, info[1], "device", 0, 1024));
  const Napi::Function onProgress = glue::optionalFunctionArg(info, 2, "onProgress");
  const int kernels = static_cast<int>(intArg(env, info[3], "kernels", PC_KERNELS_LEGACY, PC_KERNELS_FAST));
  return glue::LoadWork<DeviceModel>::queue(
      env, "prism.loadDeviceModel", path, onProgress,
      [path, device, kernels](const ProgressFn& progress) {
        return loadDeviceModel(path, device, kernels, cudaLibraryPath(), progress);
      },
      [](Napi::Env e, std::shared_ptr<DeviceModel> m) { return glue::wrapHandle(e, std::move(m), kDeviceModelHandle); });
}

Napi::Value DeviceModelInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const DeviceModel& d = *modelArg(env, info[0]);
  Napi::Object o = modelInfoToJs(env, *d.host);
  o.Set("device", "cuda:" + std::to_string(d.device));
  o.Set("deviceName", d.deviceName);
  o.Set("deviceBytes", static_cast<double>(d.deviceBytes));
  o.Set("cudaKernels", d.kernels == PC_KERNELS_FAST ? "fast" : "legacy");
  return o;
}

Napi::Value DisposeDeviceModel(const Napi::CallbackInfo& info) {
  // Contexts hold their own reference: the device memory goes with the last of them.
  glue::handleBox<DeviceModel>(info.Env(), info[0], kDeviceModelHandle, "model")->ptr.reset();
  return info.Env().Undefined();
}

// --- contexts -----------------------------------------------------------------------------

Napi::Value CreateDeviceContext(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<DeviceModel> model = modelArg(env, info[0]);
  Napi::Object o = glue::objectArg(info, 1, "options");
  ContextOptionsData opts = glue::contextOptionsArg(env, o);
  if (!deviceCapabilities().lora && !o.Get("maxLoras").IsUndefined() &&
      intArg(env, o.Get("maxLoras"), "options.maxLoras", 0, 1024) > 0)
    throw Napi::RangeError::New(env, "options.maxLoras: LoRA adapters are not supported on a CUDA device yet");
  glue::checkPositions(env, opts);
  try {
    return glue::wrapHandle(env, std::make_shared<DeviceContext>(model, opts), kDeviceContextHandle);
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
}

Napi::Value DeviceContextInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const DeviceContext& ctx = *contextArg(env, info[0]);
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
  glue::disposeContext(glue::handleBox<DeviceContext>(info.Env(), info[0], kDeviceContextHandle, "ctx"));
  return info.Env().Undefined();
}

Napi::Value DeviceStep(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return glue::queueStep(env, "prism.deviceStep", contextArg(env, info[0]), info[1],
                         [](Napi::Env e, Napi::Object plan, const DeviceContext& c, StepPlanData& out) {
                           readStepPlan(e, plan, c.limits(), out);
                         });
}

Napi::Value DeviceSupplyMasks(const Napi::CallbackInfo& info) {
  return glue::supplyMasks(info, *contextArg(info.Env(), info[0]));
}

Napi::Value DeviceFailNextStepsForTest(const Napi::CallbackInfo& info) {
  glue::failNextSteps(info, *contextArg(info.Env(), info[0]));
  return info.Env().Undefined();
}

Napi::Value CudaCapabilities(const Napi::CallbackInfo& info) {
  return capabilitiesToJs(info.Env(), deviceCapabilities());
}

}  // namespace
}  // namespace prism::cuda

namespace prism {

void registerCudaExports(Napi::Env env, Napi::Object exports) {
  using namespace cuda;
  exports.Set("cudaCapabilities", Napi::Function::New(env, CudaCapabilities));
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
