// The addon's side of the CUDA backend: a model whose weights were uploaded to a CUDA device
// through libprism_cuda.so, and a context (KV cache on the device) that runs steps there.
// The plan in and the results out are the CPU context's (step_plan.h), so everything above
// native.ts is the same on both devices.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "context.h"
#include "cuda_library.h"
#include "late_masks.h"
#include "model.h"
#include "plan_reader.h"
#include "step_plan.h"

namespace prism::cuda {

// "cuda" → 0, "cuda:N" → N; throws std::invalid_argument naming the rule otherwise.
int parseCudaDevice(const std::string& device);

struct DeviceModel {
  const CudaLibrary* lib = nullptr;
  pc_model* handle = nullptr;
  int device = 0;
  int kernels = PC_KERNELS_LEGACY;  // pc_model_config.kernels
  std::string deviceName;
  // Config, tensor types and byte counts; its weights were read from the file's mmap and
  // uploaded (their resident pages are released).
  std::shared_ptr<Model> host;
  uint64_t deviceBytes = 0;
  DeviceModel() = default;
  DeviceModel(const DeviceModel&) = delete;
  DeviceModel& operator=(const DeviceModel&) = delete;
  ~DeviceModel();
};

// Reads the model file as the CPU does (loadModelFromPath, file bytes kept as they are) and
// uploads every weight to `device`. Throws FormatError for the file, std::runtime_error for
// the device (no library, no such device, out of memory, a type the device lacks).
std::shared_ptr<DeviceModel> loadDeviceModel(const std::string& path, int device, int kernels,
                                             const std::string& libraryPath, const ProgressFn& progress);

class DeviceContext {
 public:
  DeviceContext(std::shared_ptr<DeviceModel> model, const ContextOptionsData& opts);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  // Runs one validated plan (a worker thread). A plan with lateMaskRows > 0 waits for
  // `lateMasks` after the forward pass is enqueued, before sampling.
  void step(StepPlanData& plan, StepResultData& out);

  PlanLimits limits() const;
  const ContextOptionsData& options() const { return opts_; }
  const std::shared_ptr<DeviceModel>& model() const { return model_; }
  uint64_t kvBytes() const;
  double lastStepDeviceMs() const;
  int64_t lastStepLaunches() const;

  StepPlanData plan;
  StepResultData result;
  std::atomic<bool> busy{false};
  std::atomic<int> failSteps{0};  // test hook, as the CPU context's
  LateMasks lateMasks;

 private:
  std::shared_ptr<DeviceModel> model_;
  ContextOptionsData opts_;
  pc_context* ctx_ = nullptr;
  std::vector<double> uniform_;
  std::vector<int32_t> errors_;
  std::vector<int32_t> maskRows_, masks_;  // the plan's mask rows and masks with suppressed tokens
  std::vector<float> logits_;
};

}  // namespace prism::cuda
