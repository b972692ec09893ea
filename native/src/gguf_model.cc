// GGUF → ModelConfig + TensorSet. Hyperparameters come from `<arch>.*` keys; tensors keep
// their GGUF names (the model builder's vocabulary).
#include <cmath>
#include <cstring>

#include "format_error.h"
#include "gguf.h"
#include "model.h"

namespace prism {
namespace {

const GgufValue* need(const GgufFile& g, const std::string& key) {
  const GgufValue* v = g.find(key);
  if (!v) throw FormatError(g.file->path(), "", "missing metadata key '" + key + "'");
  return v;
}

int64_t intKey(const GgufFile& g, const std::string& key, int64_t min, int64_t max) {
  const GgufValue* v = need(g, key);
  if (!v->isInteger()) throw FormatError(g.file->path(), "", "metadata '" + key + "' must be an integer");
  double d = v->asDouble();
  if (d < static_cast<double>(min) || d > static_cast<double>(max))
    throw FormatError(g.file->path(), "", "metadata '" + key + "' = " + std::to_string(static_cast<long long>(d)) +
                                              " is outside " + std::to_string(min) + ".." + std::to_string(max));
  return static_cast<int64_t>(d);
}

double numKey(const GgufFile& g, const std::string& key, double fallback, double min, double max) {
  const GgufValue* v = g.find(key);
  if (!v) return fallback;
  if (!v->isNumber()) throw FormatError(g.file->path(), "", "metadata '" + key + "' must be a number");
  double d = v->asDouble();
  if (!std::isfinite(d) || d < min || d > max)
    throw FormatError(g.file->path(), "", "metadata '" + key + "' = " + std::to_string(d) + " is out of range");
  return d;
}

}  // namespace

void readGgufModel(const std::string& path, ModelConfig& cfg, TensorSet& set) {
  GgufFile g = readGguf(path, true);
  const GgufValue* archV = need(g, "general.architecture");
  if (archV->type != GgufType::STRING) throw FormatError(path, "", "general.architecture must be a string");
  const std::string& a = archV->s;
  if (a == "llama") cfg.arch = Arch::Llama;
  else if (a == "qwen2") cfg.arch = Arch::Qwen2;
  else if (a == "qwen3") cfg.arch = Arch::Qwen3;
  else throw FormatError(path, "", "unsupported architecture '" + a + "' (supported: llama, qwen2, qwen3)");

  cfg.format = "gguf";
  cfg.path = path;
  if (const GgufValue* n = g.find("general.name"); n && n->type == GgufType::STRING) cfg.name = n->s;
  const std::string p = a + ".";
  cfg.layers = intKey(g, p + "block_count", 1, 1024);
  cfg.hidden = intKey(g, p + "embedding_length", 1, 1 << 16);
  cfg.intermediate = intKey(g, p + "feed_forward_length", 1, 1 << 18);
  cfg.heads = intKey(g, p + "attention.head_count", 1, 1024);
  cfg.kvHeads = g.find(p + "attention.head_count_kv") ? intKey(g, p + "attention.head_count_kv", 1, 1024) : cfg.heads;
  cfg.headDim = g.find(p + "attention.key_length") ? intKey(g, p + "attention.key_length", 1, 1024)
                                                    : cfg.hidden / cfg.heads;
  if (g.find(p + "attention.value_length") && intKey(g, p + "attention.value_length", 1, 1024) != cfg.headDim)
    throw FormatError(path, "", "attention.value_length differs from key_length (unsupported)");
  if (g.find(p + "rope.dimension_count") && intKey(g, p + "rope.dimension_count", 1, 1024) != cfg.headDim)
    throw FormatError(path, "", "partial rotary embeddings (rope.dimension_count != head dim) are unsupported");
  cfg.contextLength = g.find(p + "context_length") ? intKey(g, p + "context_length", 1, 1ll << 24) : 4096;
  cfg.ropeTheta = numKey(g, p + "rope.freq_base", 10000.0, 1.0, 1e12);
  cfg.eps = numKey(g, p + "attention.layer_norm_rms_epsilon", 1e-5, 0.0, 1.0);
  // llama.cpp's llama GGUFs have Q/K rows permuted for adjacent-pair RoPE; qwen2/qwen3 use NeoX.
  cfg.ropeNeox = cfg.arch != Arch::Llama;

  if (const GgufValue* st = g.find(p + "rope.scaling.type")) {
    if (st->type != GgufType::STRING) throw FormatError(path, "", "rope.scaling.type must be a string");
    if (st->s == "linear") {
      double f = numKey(g, p + "rope.scaling.factor", 1.0, 1e-6, 1e6);
      cfg.ropeFreqFactors.assign(cfg.headDim / 2, static_cast<float>(f));
    } else if (st->s != "none") {
      throw FormatError(path, "", "unsupported rope scaling type '" + st->s + "' (supported: none, linear, llama3)");
    }
  }

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
  if (auto it = set.tensors.find("rope_freqs.weight"); it != set.tensors.end()) {
    const SourceTensor& t = it->second;
    if (t.type != 0 || t.dims.size() != 1 || t.dims[0] != cfg.headDim / 2)
      throw FormatError(path, "rope_freqs.weight", "expected F32 [" + std::to_string(cfg.headDim / 2) + "]");
    cfg.ropeFreqFactors.resize(cfg.headDim / 2);
    const float* f = reinterpret_cast<const float*>(t.data);
    for (int64_t i = 0; i < cfg.headDim / 2; i++) {
      float v;
      std::memcpy(&v, f + i, 4);
      if (!std::isfinite(v) || v <= 0) throw FormatError(path, "rope_freqs.weight", "factors must be finite and positive");
      cfg.ropeFreqFactors[i] = v;
    }
  }
}

}  // namespace prism
