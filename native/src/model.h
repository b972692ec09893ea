// The in-memory model: hyperparameters plus weights ready for the kernels. GGUF files and
// Hugging Face safetensors directories are both read into a TensorSet under GGUF tensor
// names, then one builder (model.cc) checks shapes against the architecture and prepares
// the weights, so the forward pass knows only this structure.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/weight_memory.h"
#include "mapped_file.h"
#include "switches.h"

namespace prism {

// Llama covers Mistral (a sliding window) and Mixtral (experts); the other names are the
// GGUF architectures. What each one varies is listed in docs/models.md.
enum class Arch { Llama, Qwen2, Qwen3, Qwen3Moe, Gemma3, Phi3 };
const char* archName(Arch a);

// The FFN's gate activation: SwiGLU (silu(gate) * up) or GeGLU with tanh GELU (Gemma).
enum class Activation { Silu, GeluTanh };

// One rotary embedding: inverse frequency i = 1 / (theta^(2i/ropeDim) * freqFactors[i]),
// cos/sin multiplied by attnFactor (LongRoPE's magnitude correction; 1 elsewhere).
struct RopeSpec {
  double theta = 10000.0;
  std::vector<float> freqFactors;  // [ropeDim/2]; empty means 1
  double attnFactor = 1.0;
};

struct ModelConfig {
  Arch arch = Arch::Llama;
  std::string name;
  std::string path;
  std::string format;  // "gguf" | "safetensors"
  // The vision-language family whose text model this is ("idefics3", "llava"), "" for a text-only
  // checkpoint: its image encoder is loaded apart (loadVisionModel).
  std::string vision;
  int64_t vocab = 0, hidden = 0, intermediate = 0, layers = 0, heads = 0, kvHeads = 0, headDim = 0;
  int64_t contextLength = 0;
  double ropeTheta = 10000.0;
  double eps = 1e-5;
  // RoPE pairing: NeoX/rotate_half pairs (i, i + d/2); otherwise adjacent pairs (2i, 2i+1)
  // as llama.cpp's GGUF llama files expect (their Q/K rows were permuted at conversion).
  bool ropeNeox = false;
  // Scaling of the rotary frequencies: inverse frequency i is divided by ropeFreqFactors[i]
  // (llama3 / linear / LongRoPE scaling); empty means 1.
  std::vector<float> ropeFreqFactors;
  double ropeAttnFactor = 1.0;  // LongRoPE: cos/sin scaled by this
  // Rotated dimensions of each head, from the front (partial rotary: Phi-4-mini rotates 3/4).
  int64_t ropeDim = 0;
  bool tiedEmbeddings = false;

  // Sliding-window attention: a layer with window W > 0 lets the token at position p attend
  // to positions p-W+1 .. p only (transformers' and llama.cpp's convention); 0 = the whole
  // context. One entry per layer.
  std::vector<int64_t> layerWindow;
  // The RoPE of the sliding layers when it differs from the global one (Gemma 3: theta
  // 10000 and no scaling); unset = the same as the others.
  bool localRope = false;
  RopeSpec localRopeSpec;

  // Gemma 3: embeddings scaled by sqrt(hidden), norms after attention and after the FFN as
  // well as before them, GeGLU, and its own query scale.
  double embedScale = 1.0;
  bool postNorms = false;
  Activation activation = Activation::Silu;
  double queryScale = 0;  // 0 = 1/sqrt(headDim)
  // Added to every RMSNorm weight at load: Gemma's HF checkpoints store w for a (1 + w)
  // norm; llama.cpp's converter already added the 1 to its GGUF files.
  float normOffset = 0;

  // Mixture of experts: `experts` FFNs of width expertIntermediate per layer, of which the
  // router picks expertsUsed per token; weights are the softmax over all experts of the
  // router logits, renormalised over the chosen ones when normTopK (Mixtral, Qwen3-MoE).
  int64_t experts = 0, expertsUsed = 0, expertIntermediate = 0;
  bool normTopK = true;

  bool sliding(int64_t layer) const { return layerWindow[layer] > 0; }
  RopeSpec globalRope() const { return {ropeTheta, ropeFreqFactors, ropeAttnFactor}; }
};

// A tensor as stored in a file, under its GGUF name, dims innermost first.
struct SourceTensor {
  uint32_t type = 0;  // GGML type id
  std::vector<int64_t> dims;
  const uint8_t* data = nullptr;
  size_t bytes = 0;
};

struct TensorSet {
  std::string file;  // for error messages: the model file or directory
  std::map<std::string, SourceTensor> tensors;
  std::vector<std::shared_ptr<MappedFile>> maps;  // keep the mmaps alive
  // Tensor names that the file actually used (e.g. HF names), for error messages.
  std::map<std::string, std::string> originalNames;
};

// A linear layer made of one or more weights whose outputs land side by side in one output
// row (fused QKV / gate-up when the parts share a storage type: one kernel call).
struct LinearGroup {
  struct Part {
    LinearWeight w;
    int64_t outOffset = 0;
  };
  std::vector<Part> parts;
  int64_t outFeatures = 0;
  int64_t inFeatures = 0;
};

// A mixture-of-experts FFN: the router [experts × hidden] and each expert's gate/up and down.
struct ExpertWeights {
  LinearGroup router;
  std::vector<LinearGroup> gateUp;  // per expert, out: [gate (I) | up (I)]
  std::vector<LinearGroup> down;    // per expert
};

struct LayerWeights {
  std::vector<float> attnNorm, ffnNorm;
  std::vector<float> postAttnNorm, postFfnNorm;  // Gemma 3 only
  std::vector<float> qNorm, kNorm;  // qwen3: per-head RMSNorm weights [headDim]
  std::vector<float> qkvBias;       // qwen2: [q | k | v] bias, empty when absent
  LinearGroup qkv;                  // out: [q (heads*hd) | k (kvHeads*hd) | v (kvHeads*hd)]
  LinearGroup o;
  LinearGroup gateUp;  // out: [gate (I) | up (I)]
  LinearGroup down;
  ExpertWeights moe;  // MoE models: used instead of gateUp/down
};

struct Model {
  // The chunks the repacked small weights live in (kernels/weight_memory.h). First, so that it
  // is destroyed last: every LinearWeight below holds buffers in it.
  std::unique_ptr<WeightArena> weightArena;
  ModelConfig cfg;
  std::vector<std::shared_ptr<MappedFile>> maps;
  std::deque<std::vector<uint8_t>> ownedBytes;  // fused weight copies (stable addresses)
  TensorType embedType = TensorType::F32;
  const uint8_t* embedData = nullptr;
  std::vector<float> outputNorm;
  LinearGroup output;
  std::vector<LayerWeights> layers;
  std::map<std::string, int> tensorTypes;
  // Weight bytes one decoded token reads (the roofline's unit; of a mixture of experts only
  // the experts a token uses), and every weight byte the model holds (what memory must fit).
  double weightBytes = 0;
  double residentWeightBytes = 0;
  int64_t maxLinearCols = 0;
  // Activation rounding of every quantized linear layer (chooseActivations, model.cc).
  ActivationPrecision activations = ActivationPrecision::Int16;
  // The run-time switches as they stood at the load (switches.h): what modelInfo reports.
  std::vector<SwitchValue> switches;
};

using ProgressFn = std::function<void(double)>;

// What becomes of the linear weights at load: prepared for the CPU kernels (repacked, Q/K/V
// and gate/up fused into one matrix), or left as the file's bytes, one part per tensor (an
// accelerator backend uploads those and lays them out its own way: native/cuda/host/).
enum class WeightPreparation { Cpu, FileBytes };

// Reads a GGUF file or a safetensors directory (chosen by what `path` is). Throws FormatError.
std::shared_ptr<Model> loadModelFromPath(const std::string& path, const ProgressFn& progress,
                                         WeightPreparation prep = WeightPreparation::Cpu);

// The activation rounding of a model's quantized matmuls by its hidden size (model.cc says
// why; PRISM_ACTIVATIONS overrides, and a malformed value throws FormatError on `file`).
ActivationPrecision chooseActivations(int64_t hidden, const std::string& file);

// Format readers (gguf_model.cc, safetensors_model.cc): config + tensors under GGUF names.
void readGgufModel(const std::string& path, ModelConfig& cfg, TensorSet& set);
void readSafetensorsModel(const std::string& dir, ModelConfig& cfg, TensorSet& set);

// llama3-style frequency factors from HF rope_scaling (shared by both readers' tests).
std::vector<float> llama3FreqFactors(int64_t headDim, double theta, double factor, double lowFreqFactor,
                                     double highFreqFactor, double originalContext);

}  // namespace prism
