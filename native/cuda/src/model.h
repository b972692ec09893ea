// A model's weights on one device, built weight by weight through the C interface
// (pc_model_set_matrix / pc_model_set_vector), then checked by finish().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "../prism_cuda.h"
#include "kernels.h"

namespace pc {

// A linear layer: one matrix, or side-by-side parts when its pieces have different types.
struct DeviceLinear {
  struct Part {
    WeightStorage w;
    int64_t outOffset = 0;
    int64_t filled = 0;  // rows uploaded so far
  };
  std::vector<Part> parts;
  int64_t outFeatures = 0, inFeatures = 0;
  int64_t filledRows() const;
  size_t bytes() const;
};

struct DeviceLayer {
  DeviceBuffer attnNorm, ffnNorm, qNorm, kNorm, qkvBias;
  DeviceLinear qkv, o, gateUp, down;
};

class DeviceModel {
 public:
  DeviceModel(int device, const pc_model_config& cfg);

  void setMatrix(int role, int64_t layer, int type, const void* bytes, int64_t rows, int64_t cols, int64_t rowOffset,
                 int64_t totalRows);
  void setVector(int role, int64_t layer, const float* values, int64_t n);
  void finish();

  int device() const { return device_; }
  const pc_model_config& config() const { return cfg_; }
  int64_t qDim() const { return cfg_.heads * cfg_.head_dim; }
  int64_t kvDim() const { return cfg_.kv_heads * cfg_.head_dim; }
  size_t deviceBytes() const { return deviceBytes_; }
  size_t readBytes() const;

  const DeviceWeight& embedding() const { return embed_.parts.front().w.view; }
  // The output head: its own matrix, or the embedding's (tied).
  const DeviceLinear& output() const { return output_.parts.empty() ? embed_ : output_; }
  const float* outputNorm() const { return outputNorm_.get<float>(); }
  const float* invFreq() const { return invFreq_.get<float>(); }
  const DeviceLayer& layer(int64_t l) const { return layers_[static_cast<size_t>(l)]; }
  // The widest matrix input and the most rows × cols of any matrix (scratch sizes).
  int64_t maxCols() const { return maxCols_; }
  int64_t maxMatrixElems() const { return maxMatrixElems_; }

 private:
  DeviceLinear& linearFor(int role, int64_t layer, int64_t* rows, int64_t* cols);
  DeviceBuffer& vectorFor(int role, int64_t layer, int64_t* n);

  int device_;
  pc_model_config cfg_;
  std::vector<float> freqFactors_;
  Stream stream_;
  DeviceBuffer staging_;
  DeviceLinear embed_;  // one part: a lookup table, and the output head when tied
  DeviceLinear output_;
  DeviceBuffer outputNorm_, invFreq_;
  std::vector<DeviceLayer> layers_;
  size_t deviceBytes_ = 0;
  int64_t maxCols_ = 0, maxMatrixElems_ = 0;
  bool finished_ = false;
};

}  // namespace pc
