// GGUF → ModelConfig + TensorSet. Hyperparameters come from `<arch>.*` keys; tensors keep
// their GGUF names (the model builder's vocabulary).
#include <cmath>
#include <cstring>

#include "format_error.h"
#include "gguf.h"
#include "model.h"

namespace prism {

const GgufValue* ggufNeed(const GgufFile& g, const std::string& key) {
  const GgufValue* v = g.find(key);
  if (!v) throw FormatError(g.file->path(), "", "missing metadata key '" + key + "'");
  return v;
}

int64_t ggufInt(const GgufFile& g, const std::string& key, int64_t min, int64_t max) {
  const GgufValue* v = ggufNeed(g, key);
  if (!v->isInteger()) throw FormatError(g.file->path(), "", "metadata '" + key + "' must be an integer");
  double d = v->asDouble();
  if (d < static_cast<double>(min) || d > static_cast<double>(max))
    throw FormatError(g.file->path(), "", "metadata '" + key + "' = " + std::to_string(static_cast<long long>(d)) +
                                              " is outside " + std::to_string(min) + ".." + std::to_string(max));
  return static_cast<int64_t>(d);
}

double ggufNum(const GgufFile& g, const std::string& key, double fallback, double min, double max) {
  const GgufValue* v = g.find(key);
  if (!v) return fallback;
  if (!v->isNumber()) throw FormatError(g.file->path(), "", "metadata '" + key + "' must be a number");
  double d = v->asDouble();
  if (!std::isfinite(d) || d < min || d > max)
    throw FormatError(g.file->path(), "", "metadata '" + key + "' = " + std::to_string(d) + " is out of range");
  return d;
}

namespace {

Arch archOf(const std::string& a, const std::string& path) {
  if (a == "llama") return Arch::Llama;
  if (a == "qwen2") return Arch::Qwen2;
  if (a == "qwen3") return Arch::Qwen3;
  if (a == "qwen3moe") return Arch::Qwen3Moe;
  if (a == "gemma3") return Arch::Gemma3;
  if (a == "phi3") return Arch::Phi3;
  throw FormatError(path, "", "unsupported architecture '" + a + "' (supported: llama, qwen2, qwen3, qwen3moe, gemma3, phi3)");
}

// A per-frequency factor tensor (F32 [ropeDim/2]) of the file, or empty when absent.
std::vector<float> factorTensor(const GgufFile& g, const std::string& name, int64_t n) {
  if (const GgufTensor* tp = g.tensor(name)) {
    const GgufTensor& t = *tp;
    if (t.type != 0 || t.dims.size() != 1 || t.dims[0] != n)
      throw FormatError(g.file->path(), name, "expected F32 [" + std::to_string(n) + "]");
    std::vector<float> out(n);
    std::memcpy(out.data(), t.data, n * sizeof(float));
    for (float v : out)
      if (!std::isfinite(v) || v <= 0) throw FormatError(g.file->path(), name, "factors must be finite and positive");
    return out;
  }
  return {};
}

}  // namespace

void readGgufModel(const std::string& path, ModelConfig& cfg, TensorSet& set) {
  GgufFile g = readGguf(path, true);
  const GgufValue* archV = ggufNeed(g, "general.architecture");
  if (archV->type != GgufType::STRING) throw FormatError(path, "", "general.architecture must be a string");
  const std::string& a = archV->s;
  cfg.arch = archOf(a, path);

  cfg.format = "gguf";
  cfg.path = path;
  if (const GgufValue* n = g.find("general.name"); n && n->type == GgufType::STRING) cfg.name = n->s;
  const std::string p = a + ".";
  cfg.layers = ggufInt(g, p + "block_count", 1, 1024);
  cfg.hidden = ggufInt(g, p + "embedding_length", 1, 1 << 16);
  cfg.intermediate = ggufInt(g, p + "feed_forward_length", 1, 1 << 18);
  cfg.heads = ggufInt(g, p + "attention.head_count", 1, 1024);
  cfg.kvHeads = g.find(p + "attention.head_count_kv") ? ggufInt(g, p + "attention.head_count_kv", 1, 1024) : cfg.heads;
  cfg.headDim = g.find(p + "attention.key_length") ? ggufInt(g, p + "attention.key_length", 1, 1024)
                                                    : cfg.hidden / cfg.heads;
  if (g.find(p + "attention.value_length") && ggufInt(g, p + "attention.value_length", 1, 1024) != cfg.headDim)
    throw FormatError(path, "", "attention.value_length differs from key_length (unsupported)");
  cfg.ropeDim = g.find(p + "rope.dimension_count") ? ggufInt(g, p + "rope.dimension_count", 2, 1024) : cfg.headDim;
  cfg.contextLength = g.find(p + "context_length") ? ggufInt(g, p + "context_length", 1, 1ll << 24) : 4096;
  cfg.ropeTheta = ggufNum(g, p + "rope.freq_base", 10000.0, 1.0, 1e12);
  cfg.eps = ggufNum(g, p + "attention.layer_norm_rms_epsilon", 1e-5, 0.0, 1.0);
  // llama.cpp's llama GGUFs have Q/K rows permuted for adjacent-pair RoPE; the others use NeoX.
  cfg.ropeNeox = cfg.arch != Arch::Llama;
  if (g.find(p + "final_logit_softcapping") && ggufNum(g, p + "final_logit_softcapping", 0, 0, 1e6) != 0)
    throw FormatError(path, "", "final logit soft-capping is unsupported");
  if (g.find(p + "attn_logit_softcapping") && ggufNum(g, p + "attn_logit_softcapping", 0, 0, 1e6) != 0)
    throw FormatError(path, "", "attention logit soft-capping is unsupported");

  if (const GgufValue* st = g.find(p + "rope.scaling.type")) {
    if (st->type != GgufType::STRING) throw FormatError(path, "", "rope.scaling.type must be a string");
    if (st->s == "linear") {
      double f = ggufNum(g, p + "rope.scaling.factor", 1.0, 1e-6, 1e6);
      cfg.ropeFreqFactors.assign(cfg.ropeDim / 2, static_cast<float>(f));
    } else if (st->s != "none" && !(cfg.arch == Arch::Phi3 && st->s == "longrope")) {
      throw FormatError(path, "", "unsupported rope scaling type '" + st->s + "' (supported: none, linear, llama3)");
    }
  }

  // Sliding windows. Gemma 3: five local layers, then one global, repeating (llama.cpp's
  // and transformers' pattern), the local ones with their own RoPE base (10000, unscaled).
  // Others: the file's window applies to every layer.
  const int64_t window = g.find(p + "attention.sliding_window") ? ggufInt(g, p + "attention.sliding_window", 0, 1ll << 24) : 0;
  cfg.layerWindow.assign(cfg.layers, 0);
  if (cfg.arch == Arch::Gemma3) {
    for (int64_t l = 0; l < cfg.layers; l++) cfg.layerWindow[l] = (l + 1) % 6 != 0 ? window : 0;
    cfg.localRope = true;
    cfg.localRopeSpec.theta = 10000.0;
    cfg.embedScale = std::sqrt(static_cast<double>(cfg.hidden));
    cfg.postNorms = true;
    cfg.activation = Activation::GeluTanh;
    // The query scale is query_pre_attn_scalar^-1/2, which GGUF does not store; llama.cpp
    // (this file's runtime) takes hidden/heads for the 62-layer 27B and the head dim otherwise.
    cfg.queryScale = 1.0 / std::sqrt(static_cast<double>(cfg.layers == 62 ? cfg.hidden / cfg.heads : cfg.headDim));
  } else {
    for (int64_t l = 0; l < cfg.layers; l++) cfg.layerWindow[l] = window;
  }

  if (cfg.arch == Arch::Qwen3Moe || g.find(p + "expert_count")) {
    cfg.experts = ggufInt(g, p + "expert_count", 1, 1024);
    cfg.expertsUsed = ggufInt(g, p + "expert_used_count", 1, 1024);
    cfg.expertIntermediate = cfg.arch == Arch::Qwen3Moe ? ggufInt(g, p + "expert_feed_forward_length", 1, 1 << 18)
                                                        : cfg.intermediate;
    if (const GgufValue* n = g.find(p + "expert_weights_norm")) cfg.normTopK = n->type == GgufType::BOOL ? n->u != 0 : true;
  }
  if (g.find(p + "expert_shared_count") && ggufInt(g, p + "expert_shared_count", 0, 1024) > 0)
    throw FormatError(path, "", "shared experts are unsupported for " + a);

  set.file = path;
  set.maps.push_back(g.file);
  for (const GgufTensor& t : g.tensors) {
    SourceTensor s;
    s.type = t.type;
    s.dims = t.dims;
    s.data = t.data;
    s.bytes = t.bytes;
    set.tensors[t.name] = s;
  }
  // llama3 rope scaling is stored as a tensor of per-frequency divisors.
  if (auto f = factorTensor(g, "rope_freqs.weight", cfg.ropeDim / 2); !f.empty()) cfg.ropeFreqFactors = f;
  // Phi-3 LongRoPE: long factors when the context served exceeds the original one (what
  // llama.cpp does at its default context, the trained length), with the magnitude factor.
  if (cfg.arch == Arch::Phi3) {
    auto longF = factorTensor(g, "rope_factors_long.weight", cfg.ropeDim / 2);
    auto shortF = factorTensor(g, "rope_factors_short.weight", cfg.ropeDim / 2);
    const int64_t original = g.find(p + "rope.scaling.original_context_length")
                                 ? ggufInt(g, p + "rope.scaling.original_context_length", 1, 1ll << 24)
                                 : cfg.contextLength;
    if (!longF.empty() || !shortF.empty()) {
      cfg.ropeFreqFactors = cfg.contextLength > original ? longF : shortF;
      if (cfg.ropeFreqFactors.empty()) throw FormatError(path, "", "LongRoPE needs both rope_factors_long and rope_factors_short");
    }
    cfg.ropeAttnFactor = ggufNum(g, p + "rope.scaling.attn_factor", 1.0, 1e-3, 1e3);
  }
}

}  // namespace prism
