// A bidirectional encoder (BERT, MiniLM, XLM-RoBERTa, NomicBERT): hyperparameters, the
// pooling its files ask for, and the weights ready for the kernels. Hugging Face directories
// (encoder_hf.cc) and llama.cpp's GGUF embedding files (encoder_gguf.cc) are both read into a
// TensorSet under llama.cpp's tensor names, then one builder (encoder_build.cc) checks every
// shape and prepares the weights, so the forward pass (encoder_forward.cc) knows only this.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "encoder/pooling_spec.h"
#include "kernels/kernels.h"
#include "kernels/weight_memory.h"
#include "model.h"

namespace prism {

// Bert: learned absolute positions, GELU FFN (BERT, MiniLM, XLM-RoBERTa: the latter with its
// position table offset). NomicBert: rotary positions, SwiGLU FFN, no position table.
enum class EncoderArch { Bert, NomicBert };
enum class EncoderFfn { GeluErf, GeluTanh, SwiGlu };

struct EncoderConfig {
  EncoderArch arch = EncoderArch::Bert;
  // What the files call it: "bert", "xlm-roberta", "nomic-bert" (info and errors).
  std::string family;
  std::string name, path, format;  // format: "gguf" | "safetensors"
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, headDim = 0, intermediate = 0;
  // Rows of the position table (Bert) or the trained context (NomicBert).
  int64_t maxPositions = 0;
  int64_t typeVocab = 0;  // rows of the token-type table; 0 = none
  // Position of a sequence's first token in the table: XLM-RoBERTa's Hugging Face files number
  // positions from padding_idx + 1 (llama.cpp's converter cuts those rows off instead).
  int64_t positionOffset = 0;
  double eps = 1e-12;
  EncoderFfn ffn = EncoderFfn::GeluErf;
  double ropeTheta = 10000.0;  // NomicBert: rotate_half pairs (i, i + d/2) over the whole head
  // Sequence classification (cross-encoders): CLS -> [dense + tanh] -> out_proj -> numLabels
  // logits. 0 labels: an embedder.
  int64_t numLabels = 0;
  std::vector<std::string> labels;
  PoolingSpec pooling;

  // Longest input the position table or trained context allows.
  int64_t maxTokens() const { return maxPositions - positionOffset; }
};

struct EncoderLayer {
  LinearGroup qkv;  // out: [q (D) | k (D) | v (D)]
  std::vector<float> qkvBias;
  LinearGroup o;
  std::vector<float> oBias;
  std::vector<float> attnNormW, attnNormB;  // after attention + residual
  LinearGroup up;                           // Gelu: [I]; SwiGlu: [gate (I) | up (I)]
  std::vector<float> upBias;
  LinearGroup down;
  std::vector<float> downBias;
  std::vector<float> outNormW, outNormB;  // after the FFN + residual
};

struct EncoderModel {
  // First, so that it is destroyed last: the LinearWeights below hold buffers in it.
  std::unique_ptr<WeightArena> weightArena;
  EncoderConfig cfg;
  std::vector<std::shared_ptr<MappedFile>> maps;
  std::deque<std::vector<uint8_t>> ownedBytes;
  TensorType embedType = TensorType::F32;
  const uint8_t* embedData = nullptr;
  std::vector<float> positions;   // [maxPositions × D]; empty for NomicBert
  std::vector<float> tokenTypes;  // [typeVocab × D]
  std::vector<float> embNormW, embNormB;
  std::vector<EncoderLayer> layers;
  // Classifier head (numLabels > 0): the dense layer is absent in files that have none.
  LinearGroup clsDense;
  std::vector<float> clsDenseBias;
  LinearGroup clsOut;
  std::vector<float> clsOutBias;
  std::map<std::string, int> tensorTypes;
  double weightBytes = 0;
  int64_t maxLinearCols = 0;
  ActivationPrecision activations = ActivationPrecision::Int16;
};

// Format readers: config + tensors under llama.cpp's names.
void readEncoderHf(const std::string& dir, EncoderConfig& cfg, TensorSet& set);
void readEncoderGguf(const std::string& path, EncoderConfig& cfg, TensorSet& set);

// Whether `path` holds an encoder (a GGUF of architecture bert / nomic-bert, or a directory
// whose config.json names a BERT-family model); false for everything else, never throws.
bool isEncoderPath(const std::string& path);

// Reads a GGUF file or a Hugging Face directory. Throws FormatError.
std::shared_ptr<EncoderModel> loadEncoderFromPath(const std::string& path, const ProgressFn& progress);

}  // namespace prism
