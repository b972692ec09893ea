#include "device_model.h"

#include <cmath>
#include <stdexcept>

#include "sampler.h"

namespace prism::cuda {

int parseCudaDevice(const std::string& device) {
  if (device == "cuda") return 0;
  if (device.rfind("cuda:", 0) == 0 && device.size() > 5 && device.size() <= 8 &&
      device.find_first_not_of("0123456789", 5) == std::string::npos)
    return std::stoi(device.substr(5));
  throw std::invalid_argument("device '" + device + "' must be 'cpu', 'cuda' or 'cuda:N'");
}

const BackendCapabilities& deviceCapabilities() {
  static const BackendCapabilities c = [] {
    BackendCapabilities b;
    b.minTokens = true;  // the suppressed tokens become mask rows of their own (DeviceContext::step)
    b.architectures = {Arch::Llama, Arch::Qwen2, Arch::Qwen3};  // the device's layer (archOf)
    b.tensorTypes = loadableTensorTypes();  // every type the loaders read, as the device's weights.h
    return b;
  }();
  return c;
}

DeviceModel::~DeviceModel() {
  if (handle) lib->pc_model_destroy(handle);
}

namespace {

int archOf(Arch a) {
  switch (a) {
    case Arch::Llama: return PC_ARCH_LLAMA;
    case Arch::Qwen2: return PC_ARCH_QWEN2;
    case Arch::Qwen3: return PC_ARCH_QWEN3;
    default: break;
  }
  throw std::runtime_error(std::string("the CUDA backend does not run the ") + archName(a) + " architecture yet");
}

// The window every layer shares (0: none), or -1 when the layers differ.
int64_t slidingWindow(const ModelConfig& c) {
  const int64_t w = c.layerWindow.empty() ? 0 : c.layerWindow.front();
  for (int64_t x : c.layerWindow)
    if (x != w) return -1;
  return w;
}

// What the device's forward pass implements of ModelConfig: the Llama / Qwen2 / Qwen3 layer.
// Variations the CPU runs and the device does not yet are refused by name.
void checkSupported(const ModelConfig& c) {
  auto refuse = [&](const std::string& what) {
    throw std::runtime_error("the CUDA backend does not run " + what + " yet (" + archName(c.arch) +
                             " model): serve it on the CPU");
  };
  const BackendCapabilities& can = deviceCapabilities();
  archOf(c.arch);
  if (!can.experts && c.experts > 0) refuse("mixture-of-experts layers");
  // One window on every layer (Mistral) runs; a mix of sliding and global layers (Qwen2's
  // max_window_layers; Gemma 3) needs the KV layer groups of kv_layout.h, which the device's
  // cache does not have.
  if (!can.mixedWindows && slidingWindow(c) < 0) refuse("a mix of sliding-window and global attention layers");
  if (c.localRope) refuse("a second RoPE for the sliding layers");
  if (c.ropeDim != 0 && c.ropeDim != c.headDim) refuse("partial rotary embeddings");
  if (c.ropeAttnFactor != 1.0) refuse("LongRoPE attention scaling");
  if (c.postNorms || c.activation != Activation::Silu || c.embedScale != 1.0) refuse("Gemma-style layers");
  if (c.queryScale != 0 && c.queryScale != 1.0 / std::sqrt(static_cast<double>(c.headDim)))
    refuse("a query scale other than 1/sqrt(head dim)");
}

void uploadLinear(const DeviceModel& d, int role, int64_t layer, const LinearGroup& g) {
  for (const LinearGroup::Part& p : g.parts)
    d.lib->check(d.lib->pc_model_set_matrix(d.handle, role, layer, static_cast<int32_t>(p.w.type), p.w.data, p.w.rows,
                                            p.w.cols, p.outOffset, g.outFeatures),
                 "uploading a weight");
}

void uploadVector(const DeviceModel& d, int role, int64_t layer, const std::vector<float>& v) {
  if (v.empty()) return;
  d.lib->check(d.lib->pc_model_set_vector(d.handle, role, layer, v.data(), static_cast<int64_t>(v.size())),
               "uploading a norm or bias");
}

}  // namespace

std::shared_ptr<DeviceModel> loadDeviceModel(const std::string& path, int device, int kernels,
                                             const std::string& libraryPath, const ProgressFn& progress) {
  const CudaLibrary& lib = loadCudaLibrary(libraryPath);
  int32_t count = 0;
  lib.check(lib.pc_device_count(&count), "counting CUDA devices");
  if (count == 0) throw std::runtime_error("no CUDA device is visible (the driver reports none)");
  if (device < 0 || device >= count)
    throw std::runtime_error("cuda:" + std::to_string(device) + " does not exist (" + std::to_string(count) +
                             " CUDA device" + (count == 1 ? "" : "s") + ")");
  pc_device_info info{};
  lib.check(lib.pc_device_info_get(device, &info), "reading the CUDA device");

  auto d = std::make_shared<DeviceModel>();
  d->lib = &lib;
  d->device = device;
  d->kernels = kernels;
  d->deviceName = info.name;
  d->host = loadModelFromPath(
      path, [&](double f) { if (progress) progress(0.05 * f); }, WeightPreparation::FileBytes);
  const Model& m = *d->host;
  const ModelConfig& c = m.cfg;
  checkSupported(c);
  pc_model_config cfg{};
  cfg.arch = archOf(c.arch);
  cfg.vocab = c.vocab;
  cfg.hidden = c.hidden;
  cfg.intermediate = c.intermediate;
  cfg.layers = c.layers;
  cfg.heads = c.heads;
  cfg.kv_heads = c.kvHeads;
  cfg.head_dim = c.headDim;
  cfg.rope_theta = c.ropeTheta;
  cfg.eps = c.eps;
  cfg.rope_neox = c.ropeNeox ? 1 : 0;
  cfg.rope_freq_factors = c.ropeFreqFactors.empty() ? nullptr : c.ropeFreqFactors.data();
  cfg.sliding_window = slidingWindow(c);
  cfg.kernels = kernels;
  lib.check(lib.pc_model_create(device, &cfg, &d->handle), "creating the model on the CUDA device");

  lib.check(lib.pc_model_set_matrix(d->handle, PC_W_EMBED, -1, static_cast<int32_t>(m.embedType), m.embedData, c.vocab,
                                    c.hidden, 0, c.vocab),
            "uploading the token embedding");
  for (int64_t l = 0; l < c.layers; l++) {
    const LayerWeights& L = m.layers[static_cast<size_t>(l)];
    uploadVector(*d, PC_V_ATTN_NORM, l, L.attnNorm);
    uploadVector(*d, PC_V_FFN_NORM, l, L.ffnNorm);
    uploadVector(*d, PC_V_QKV_BIAS, l, L.qkvBias);
    uploadVector(*d, PC_V_Q_NORM, l, L.qNorm);
    uploadVector(*d, PC_V_K_NORM, l, L.kNorm);
    uploadLinear(*d, PC_W_QKV, l, L.qkv);
    uploadLinear(*d, PC_W_O, l, L.o);
    uploadLinear(*d, PC_W_GATE_UP, l, L.gateUp);
    uploadLinear(*d, PC_W_DOWN, l, L.down);
    if (progress) progress(0.05 + 0.95 * static_cast<double>(l + 1) / static_cast<double>(c.layers + 1));
  }
  uploadVector(*d, PC_V_OUTPUT_NORM, -1, m.outputNorm);
  if (!c.tiedEmbeddings) uploadLinear(*d, PC_W_OUTPUT, -1, m.output);
  lib.check(lib.pc_model_finish(d->handle), "finishing the model on the CUDA device");
  uint64_t readBytes = 0;
  lib.check(lib.pc_model_bytes(d->handle, &d->deviceBytes, &readBytes), "pc_model_bytes");
  for (const auto& map : m.maps) map->releaseResidentPages();
  if (progress) progress(1.0);
  return d;
}

DeviceContext::DeviceContext(std::shared_ptr<DeviceModel> model, const ContextOptionsData& opts)
    : model_(std::move(model)), opts_(opts) {
  if (!deviceCapabilities().lora && opts.maxLoras > 0) throw std::invalid_argument("LoRA adapters are not supported on a CUDA device yet (options.maxLoras must be 0)");
  pc_context_options o{opts.kvBlocks, opts.blockSize, opts.maxBatchTokens, opts.maxSeqs};
  model_->lib->check(model_->lib->pc_context_create(model_->handle, &o, &ctx_), "creating the context on the CUDA device");
  const size_t S = static_cast<size_t>(opts.maxSeqs);
  uniform_.reserve(S);
  errors_.reserve(S);
  plan.tokens.reserve(static_cast<size_t>(opts.maxBatchTokens));
  plan.positions.reserve(static_cast<size_t>(opts.maxBatchTokens));
  result.tokens.reserve(S);
  result.logprobs.reserve(S);
  result.errors.reserve(S);
}

DeviceContext::~DeviceContext() {
  if (ctx_) model_->lib->pc_context_destroy(ctx_);
}

PlanLimits DeviceContext::limits() const {
  return PlanLimits{opts_.kvBlocks, opts_.blockSize, opts_.maxBatchTokens, opts_.maxSeqs, model_->host->cfg.vocab, 1, nullptr,
                    0, model_->host->cfg.hidden};
}

uint64_t DeviceContext::kvBytes() const {
  uint64_t b = 0;
  model_->lib->check(model_->lib->pc_context_kv_bytes(ctx_, &b), "pc_context_kv_bytes");
  return b;
}

double DeviceContext::lastStepDeviceMs() const { return model_->lib->pc_step_device_ms(ctx_); }

int64_t DeviceContext::lastStepLaunches() const {
  int64_t n = -1;
  model_->lib->check(model_->lib->pc_step_launches(ctx_, &n), "pc_step_launches");
  return n;
}

void DeviceContext::step(StepPlanData& p, StepResultData& out) {
  const CudaLibrary& lib = *model_->lib;
  const int64_t S = p.S, V = model_->host->cfg.vocab, words = (V + 31) / 32;
  // What the device's step does not do yet is refused, never ignored: draft tokens would be
  // taken unverified, an early exit would run every layer.
  const BackendCapabilities& can = deviceCapabilities();
  for (int32_t k : p.draftCounts)
    if (!can.verify && k > 0)
      throw std::invalid_argument("plan.draftCounts: speculative decoding is not supported on a CUDA device yet");
  if (!can.earlyExit && p.exitLayer > 0) throw std::invalid_argument("plan.exitLayer: early exit is not supported on a CUDA device yet");
  if (!can.samplerWarpers && !p.logitBiasTokens.empty())
    throw std::invalid_argument("plan.logitBiasTokens: logit_bias is not supported on a CUDA device yet");
  for (float v : p.minP)
    if (!can.samplerWarpers && v > 0) throw std::invalid_argument("plan.minP: min_p is not supported on a CUDA device yet");
  for (float v : p.typicalP)
    if (!can.samplerWarpers && v < 1) throw std::invalid_argument("plan.typicalP: typical_p is not supported on a CUDA device yet");
  if (!can.placedEmbeddings && !p.embedOffsets.empty())
    throw std::invalid_argument("plan.embedRows: placed embeddings (image inputs) are not supported on a CUDA device yet");
  if (!p.attendEnd.empty())
    throw std::invalid_argument("plan.bidirectionalSpans: bidirectional image attention (Gemma 3) is not supported on a CUDA device yet");
  if (!p.promptTargets.empty())
    throw std::invalid_argument("plan.promptLogprobTargets: prompt logprobs are not supported on a CUDA device yet");
  // Suppressed tokens (min_tokens) become mask rows of their own after the plan's: the plan's
  // row (or every token) less the suppressed ones, as the CPU sampler applies them.
  const bool suppress = !p.suppressTokens.empty();
  const int64_t planMaskRows = p.lateMaskRows > 0 ? p.lateMaskRows : static_cast<int64_t>(p.allowedMask.size()) / words;
  if (suppress) {
    maskRows_.assign(p.allowedMaskRows.begin(), p.allowedMaskRows.end());
    int64_t next = planMaskRows;
    for (int64_t s = 0; s < S; s++)
      if (p.suppressTokenOffsets[static_cast<size_t>(s + 1)] > p.suppressTokenOffsets[static_cast<size_t>(s)])
        maskRows_[static_cast<size_t>(s)] = static_cast<int32_t>(next++);
  }
  uniform_.resize(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; s++)
    uniform_[static_cast<size_t>(s)] = uniformFromSeed(p.seeds[static_cast<size_t>(s)], static_cast<uint64_t>(p.sampleCounters[static_cast<size_t>(s)]));
  pc_step_plan cp{};
  cp.T = p.T;
  cp.S = p.S;
  cp.tokens = p.tokens.data();
  cp.positions = p.positions.data();
  cp.seq_token_offsets = p.seqTokenOffsets.data();
  cp.block_table_offsets = p.blockTableOffsets.data();
  cp.block_tables = p.blockTables.data();
  cp.n_block_tables = static_cast<int64_t>(p.blockTables.size());
  cp.block_copies = p.blockCopies.data();
  cp.n_block_copies = static_cast<int64_t>(p.blockCopies.size());
  cp.sample = p.sample.data();
  cp.temperature = p.temperature.data();
  cp.top_p = p.topP.data();
  cp.repetition_penalty = p.repetitionPenalty.data();
  cp.presence_penalty = p.presencePenalty.data();
  cp.frequency_penalty = p.frequencyPenalty.data();
  cp.top_k = p.topK.data();
  cp.penalty_token_offsets = p.penaltyTokenOffsets.data();
  cp.penalty_tokens = p.penaltyTokens.data();
  cp.n_penalty_tokens = static_cast<int64_t>(p.penaltyTokens.size());
  cp.uniform = uniform_.data();
  cp.allowed_mask_rows = suppress ? maskRows_.data() : p.allowedMaskRows.data();
  cp.top_logprobs = p.topLogprobs.data();
  cp.return_logits = static_cast<int32_t>(p.returnLogits);
  lib.check(lib.pc_step_forward(ctx_, &cp), "step on the CUDA device");
  if (failSteps.load(std::memory_order_relaxed) > 0) {
    // As the CPU context's fault hook: the forward pass has run (K/V written), then it fails.
    failSteps.fetch_sub(1, std::memory_order_relaxed);
    throw std::runtime_error("injected fault (failNextStepsForTest)");
  }
  out.lateMaskWaitMs = p.lateMaskRows > 0 ? lateMasks.wait(p.allowedMask) : 0;

  int32_t stride = 0;
  for (int64_t s = 0; s < S; s++) stride = std::max(stride, p.topLogprobs[static_cast<size_t>(s)]);
  out.topStride = stride;
  out.tokens.assign(static_cast<size_t>(S), -1);
  out.logprobs.assign(static_cast<size_t>(S), 0.0f);
  out.topIds.assign(static_cast<size_t>(S * stride), -1);
  out.topValues.assign(static_cast<size_t>(S * stride), 0.0f);
  errors_.assign(static_cast<size_t>(S), 0);
  out.logits = nullptr;
  out.logitRows = 0;
  if (p.returnLogits != ReturnLogits::None) {
    out.logitRows = p.returnLogits == ReturnLogits::All ? p.T : S;
    logits_.resize(static_cast<size_t>(out.logitRows * V));
    out.logits = logits_.data();
  }
  pc_step_result r{};
  r.tokens = out.tokens.data();
  r.logprobs = out.logprobs.data();
  r.errors = errors_.data();
  r.top_ids = out.topIds.data();
  r.top_values = out.topValues.data();
  r.logits = out.logits;
  const int32_t* masks = p.allowedMask.data();
  int64_t maskRows = static_cast<int64_t>(p.allowedMask.size()) / words;
  if (suppress) {
    masks_.assign(p.allowedMask.begin(), p.allowedMask.end());
    for (int64_t s = 0; s < S; s++) {
      const int32_t b = p.suppressTokenOffsets[static_cast<size_t>(s)], e = p.suppressTokenOffsets[static_cast<size_t>(s + 1)];
      if (b == e) continue;
      const int32_t from = p.allowedMaskRows[static_cast<size_t>(s)];
      const size_t row = masks_.size();
      masks_.resize(row + static_cast<size_t>(words), -1);
      if (from >= 0)
        for (int64_t w = 0; w < words; w++) masks_[row + static_cast<size_t>(w)] = masks_[static_cast<size_t>(from * words + w)];
      for (int32_t k = b; k < e; k++) {
        const int32_t t = p.suppressTokens[static_cast<size_t>(k)];
        masks_[row + static_cast<size_t>(t >> 5)] &= ~static_cast<int32_t>(1u << (t & 31));
      }
    }
    masks = masks_.data();
    maskRows = static_cast<int64_t>(masks_.size()) / words;
  }
  lib.check(lib.pc_step_sample(ctx_, &cp, masks, maskRows, &r), "sampling on the CUDA device");
  out.errors.resize(static_cast<size_t>(S));
  out.anyError = false;
  for (int64_t s = 0; s < S; s++) {
    std::string& e = out.errors[static_cast<size_t>(s)];
    e.clear();
    // The CPU sampler's messages (sampler.cc), so clients see one wording.
    if (errors_[static_cast<size_t>(s)] == 1) e = "the model produced NaN logits: cannot sample";
    else if (errors_[static_cast<size_t>(s)] == 2)
      e = "no token is allowed: the allowed-token mask (after penalties) excludes the whole vocabulary";
    out.anyError = out.anyError || !e.empty();
  }
}

}  // namespace prism::cuda
