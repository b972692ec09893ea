#include "model.h"

#include <cmath>

namespace pc {

int64_t DeviceLinear::filledRows() const {
  int64_t n = 0;
  for (const Part& p : parts) n += p.filled;
  return n;
}

size_t DeviceLinear::bytes() const {
  size_t n = 0;
  for (const Part& p : parts) n += p.w.rowBytes * static_cast<size_t>(p.filled);
  return n;
}

DeviceModel::DeviceModel(int device, const pc_model_config& cfg) : device_(device), cfg_(cfg) {
  if (cfg.arch < PC_ARCH_LLAMA || cfg.arch > PC_ARCH_QWEN3) throw Error("unsupported architecture " + std::to_string(cfg.arch));
  if (cfg.vocab < 1 || cfg.hidden < 32 || cfg.intermediate < 32 || cfg.layers < 1 || cfg.heads < 1 || cfg.kv_heads < 1 ||
      cfg.head_dim < 8)
    throw Error("model dimensions out of range");
  if (cfg.hidden % 32 != 0 || cfg.intermediate % 32 != 0 || (cfg.heads * cfg.head_dim) % 32 != 0)
    throw Error("the CUDA backend needs hidden, intermediate and heads × head_dim to be multiples of 32");
  if (cfg.head_dim % 8 != 0 || cfg.head_dim > 256)
    throw Error("head dim " + std::to_string(cfg.head_dim) + ": the CUDA backend takes multiples of 8 up to 256");
  if (cfg.sliding_window < 0 || cfg.sliding_window > (1 << 30)) throw Error("sliding window out of range");
  if (cfg.kernels != PC_KERNELS_LEGACY && cfg.kernels != PC_KERNELS_FAST)
    throw Error("kernels must be PC_KERNELS_LEGACY (0) or PC_KERNELS_FAST (1), got " + std::to_string(cfg.kernels));
  if (cfg.heads % cfg.kv_heads != 0 || cfg.heads / cfg.kv_heads > 32)
    throw Error("heads must be a multiple of the KV heads, at most 32 per KV head");
  if (cfg.rope_freq_factors) freqFactors_.assign(cfg.rope_freq_factors, cfg.rope_freq_factors + cfg.head_dim / 2);
  cfg_.rope_freq_factors = nullptr;  // the caller's array is not kept
  layers_.resize(static_cast<size_t>(cfg.layers));
  const int64_t D = cfg.hidden, qkv = qDim() + 2 * kvDim();
  auto shape = [](DeviceLinear& L, int64_t out, int64_t in) {
    L.outFeatures = out;
    L.inFeatures = in;
  };
  shape(embed_, cfg.vocab, D);
  shape(output_, cfg.vocab, D);
  for (DeviceLayer& L : layers_) {
    shape(L.qkv, qkv, D);
    shape(L.o, D, qDim());
    shape(L.gateUp, 2 * cfg.intermediate, D);
    shape(L.down, D, cfg.intermediate);
  }
}

DeviceLinear& DeviceModel::linearFor(int role, int64_t layer, int64_t* rows, int64_t* cols) {
  DeviceLinear* L = nullptr;
  if (role == PC_W_EMBED) L = &embed_;
  else if (role == PC_W_OUTPUT) L = &output_;
  else {
    if (layer < 0 || layer >= cfg_.layers) throw Error("layer " + std::to_string(layer) + " out of range");
    DeviceLayer& ly = layers_[static_cast<size_t>(layer)];
    switch (role) {
      case PC_W_QKV: L = &ly.qkv; break;
      case PC_W_O: L = &ly.o; break;
      case PC_W_GATE_UP: L = &ly.gateUp; break;
      case PC_W_DOWN: L = &ly.down; break;
      default: throw Error("unknown matrix role " + std::to_string(role));
    }
  }
  *rows = L->outFeatures;
  *cols = L->inFeatures;
  return *L;
}

void DeviceModel::setMatrix(int role, int64_t layer, int type, const void* bytes, int64_t rows, int64_t cols,
                            int64_t rowOffset, int64_t totalRows) {
  if (finished_) throw Error("the model is finished");
  int64_t wantRows = 0, wantCols = 0;
  DeviceLinear& L = linearFor(role, layer, &wantRows, &wantCols);
  const std::string where = "matrix role " + std::to_string(role) + " layer " + std::to_string(layer);
  if (cols != wantCols || totalRows != wantRows)
    throw Error(where + ": " + std::to_string(totalRows) + " x " + std::to_string(cols) + " does not match the model's " +
                std::to_string(wantRows) + " x " + std::to_string(wantCols));
  if (rows < 1 || rowOffset != L.filledRows() || rowOffset + rows > totalRows)
    throw Error(where + ": parts must come in row order without gaps");
  if (!weightTypeSupported(type))
    throw Error(where + ": tensor type " + weightTypeName(type) + " (GGML type " + std::to_string(type) +
                ") is not supported on the CUDA device");
  if (role == PC_W_EMBED && type != (L.parts.empty() ? type : L.parts.front().w.view.type))
    throw Error(where + ": the embedding must have one type");
  useDevice(device_);
  DeviceLinear::Part* part = L.parts.empty() ? nullptr : &L.parts.back();
  if (part == nullptr || part->w.view.type != type) {
    if (part) part->w.view.rows = part->filled;  // the rest of the matrix comes in another type
    DeviceLinear::Part fresh;
    allocateWeight(type, totalRows - rowOffset, cols, fresh.w);
    fresh.outOffset = rowOffset;
    deviceBytes_ += fresh.w.q.bytes() + fresh.w.s.bytes() + fresh.w.qh.bytes() + fresh.w.sd.bytes();
    L.parts.push_back(std::move(fresh));
    part = &L.parts.back();
  }
  uploadWeightRows(part->w, part->filled, bytes, rows, staging_, stream_);
  part->filled += rows;
  stream_.synchronize();  // the caller's bytes may go once this returns
  maxCols_ = std::max(maxCols_, cols);
  maxMatrixElems_ = std::max(maxMatrixElems_, totalRows * cols);
}

DeviceBuffer& DeviceModel::vectorFor(int role, int64_t layer, int64_t* n) {
  if (role == PC_V_OUTPUT_NORM) {
    *n = cfg_.hidden;
    return outputNorm_;
  }
  if (layer < 0 || layer >= cfg_.layers) throw Error("layer " + std::to_string(layer) + " out of range");
  DeviceLayer& ly = layers_[static_cast<size_t>(layer)];
  switch (role) {
    case PC_V_ATTN_NORM: *n = cfg_.hidden; return ly.attnNorm;
    case PC_V_FFN_NORM: *n = cfg_.hidden; return ly.ffnNorm;
    case PC_V_QKV_BIAS: *n = qDim() + 2 * kvDim(); return ly.qkvBias;
    case PC_V_Q_NORM: *n = cfg_.head_dim; return ly.qNorm;
    case PC_V_K_NORM: *n = cfg_.head_dim; return ly.kNorm;
  }
  throw Error("unknown vector role " + std::to_string(role));
}

void DeviceModel::setVector(int role, int64_t layer, const float* values, int64_t n) {
  if (finished_) throw Error("the model is finished");
  int64_t want = 0;
  DeviceBuffer& b = vectorFor(role, layer, &want);
  if (n != want) throw Error("vector role " + std::to_string(role) + ": length " + std::to_string(n) + ", expected " + std::to_string(want));
  useDevice(device_);
  b.allocate(static_cast<size_t>(n) * sizeof(float));
  deviceBytes_ += b.bytes();
  copyToDevice(b.get(), values, b.bytes(), stream_);
  stream_.synchronize();
}

void DeviceModel::finish() {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw Error("the model lacks " + what);
  };
  const bool qwen2 = cfg_.arch == PC_ARCH_QWEN2, qwen3 = cfg_.arch == PC_ARCH_QWEN3;
  need(embed_.filledRows() == embed_.outFeatures, "its token embedding");
  need(output_.parts.empty() || output_.filledRows() == output_.outFeatures, "part of its output head");
  need(outputNorm_.bytes() > 0, "its output norm");
  for (int64_t l = 0; l < cfg_.layers; l++) {
    const DeviceLayer& L = layers_[static_cast<size_t>(l)];
    const std::string at = " of layer " + std::to_string(l);
    need(L.attnNorm.bytes() > 0 && L.ffnNorm.bytes() > 0, "a norm" + at);
    for (const DeviceLinear* lin : {&L.qkv, &L.o, &L.gateUp, &L.down})
      need(lin->filledRows() == lin->outFeatures, "a matrix" + at);
    need(!qwen2 || L.qkvBias.bytes() > 0, "the q/k/v bias" + at);
    need(!qwen3 || (L.qNorm.bytes() > 0 && L.kNorm.bytes() > 0), "the q/k norms" + at);
  }
  const int64_t half = cfg_.head_dim / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; i++) {
    double f = 1.0 / std::pow(cfg_.rope_theta, 2.0 * static_cast<double>(i) / static_cast<double>(cfg_.head_dim));
    if (!freqFactors_.empty()) f /= freqFactors_[static_cast<size_t>(i)];
    inv[static_cast<size_t>(i)] = static_cast<float>(f);
  }
  useDevice(device_);
  invFreq_.allocate(inv.size() * sizeof(float));
  copyToDevice(invFreq_.get(), inv.data(), invFreq_.bytes(), stream_);
  stream_.synchronize();
  staging_.release();
  finished_ = true;
}

size_t DeviceModel::readBytes() const {
  size_t n = output().bytes() + outputNorm_.bytes();
  for (const DeviceLayer& L : layers_)
    n += L.qkv.bytes() + L.o.bytes() + L.gateUp.bytes() + L.down.bytes() + L.attnNorm.bytes() + L.ffnNorm.bytes() +
         L.qkvBias.bytes() + L.qNorm.bytes() + L.kNorm.bytes();
  return n;
}

}  // namespace pc
