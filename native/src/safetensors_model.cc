// Hugging Face directory (config.json + *.safetensors) → ModelConfig + TensorSet under
// GGUF tensor names. Safetensors stores row-major [out, in] like GGUF, so weights are used
// in place from the mmap.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "format_error.h"
#include "json.h"
#include "model.h"

namespace fs = std::filesystem;

namespace prism {
namespace {

std::string readSmallFile(const std::string& path, size_t maxBytes) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) throw FormatError(path, "", "cannot read: " + ec.message());
  if (size > maxBytes) throw FormatError(path, "", "file is larger than " + std::to_string(maxBytes) + " bytes");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError(path, "", "cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

JsonValue parseFile(const std::string& path) {
  std::string text = readSmallFile(path, 64 << 20);
  try {
    return parseJson(text);
  } catch (const std::runtime_error& e) {
    throw FormatError(path, "", std::string("invalid JSON: ") + e.what());
  }
}

int64_t cfgInt(const JsonValue& c, const std::string& path, const char* key, int64_t min, int64_t max,
               const int64_t* fallback = nullptr) {
  const JsonValue* v = c.get(key);
  if (!v || v->kind == JsonValue::Kind::Null) {
    if (fallback) return *fallback;
    throw FormatError(path, "", std::string("missing '") + key + "'");
  }
  if (!v->isNumber() || v->num != std::floor(v->num) || v->num < static_cast<double>(min) ||
      v->num > static_cast<double>(max))
    throw FormatError(path, "", std::string("'") + key + "' must be an integer in " + std::to_string(min) + ".." +
                                    std::to_string(max));
  return static_cast<int64_t>(v->num);
}

double cfgNum(const JsonValue& c, const std::string& path, const char* key, double fallback, double min, double max) {
  const JsonValue* v = c.get(key);
  if (!v || v->kind == JsonValue::Kind::Null) return fallback;
  if (!v->isNumber() || !(v->num >= min && v->num <= max))
    throw FormatError(path, "", std::string("'") + key + "' must be a number in range");
  return v->num;
}

// HF tensor name → GGUF tensor name ("" = not used by the model).
std::string ggufName(const std::string& hf) {
  static const std::regex layer(R"(^model\.layers\.(\d+)\.(.+)$)");
  static const std::map<std::string, std::string> perLayer = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  std::smatch m;
  if (std::regex_match(hf, m, layer)) {
    auto it = perLayer.find(m[2].str());
    if (it != perLayer.end()) return "blk." + m[1].str() + "." + it->second;
  }
  return "";
}

void readSafetensorsFile(const std::string& path, TensorSet& set) {
  auto map = std::make_shared<MappedFile>(path);
  const size_t size = map->size();
  if (size < 8) throw FormatError(path, "", "truncated file: no header length");
  uint64_t headerLen;
  std::memcpy(&headerLen, map->data(), 8);
  if (headerLen > size - 8 || headerLen > (100u << 20))
    throw FormatError(path, "", "header length " + std::to_string(headerLen) + " runs past the end of the file (" +
                                    std::to_string(size) + " bytes)");
  JsonValue header;
  try {
    header = parseJson(std::string_view(reinterpret_cast<const char*>(map->data()) + 8, headerLen));
  } catch (const std::runtime_error& e) {
    throw FormatError(path, "", std::string("invalid header JSON: ") + e.what());
  }
  if (!header.isObject()) throw FormatError(path, "", "header is not a JSON object");
  const uint8_t* dataStart = map->data() + 8 + headerLen;
  const size_t dataSize = size - 8 - headerLen;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, info] : header.obj) {
    if (name == "__metadata__") continue;
    const JsonValue* dtype = info.get("dtype");
    const JsonValue* shape = info.get("shape");
    const JsonValue* offs = info.get("data_offsets");
    if (!dtype || !dtype->isString() || !shape || !shape->isArray() || !offs || !offs->isArray() ||
        offs->arr.size() != 2 || !offs->arr[0].isNumber() || !offs->arr[1].isNumber())
      throw FormatError(path, name, "header entry needs dtype, shape and data_offsets [begin, end]");
    uint32_t type;
    size_t elemBytes;
    if (dtype->str == "F32") type = 0, elemBytes = 4;
    else if (dtype->str == "F16") type = 1, elemBytes = 2;
    else if (dtype->str == "BF16") type = 30, elemBytes = 2;
    else type = UINT32_MAX, elemBytes = 0;  // only an error if the model uses the tensor
    if (shape->arr.empty() || shape->arr.size() > 4) throw FormatError(path, name, "shape must have 1..4 dimensions");
    uint64_t elements = 1;
    std::vector<int64_t> dims;
    for (const JsonValue& d : shape->arr) {
      if (!d.isNumber() || d.num < 1 || d.num > 1e12 || d.num != std::floor(d.num))
        throw FormatError(path, name, "shape entries must be positive integers");
      if (elements > (1ull << 42) / static_cast<uint64_t>(d.num)) throw FormatError(path, name, "element count overflows");
      elements *= static_cast<uint64_t>(d.num);
      dims.insert(dims.begin(), static_cast<int64_t>(d.num));  // innermost first, as GGUF
    }
    double b = offs->arr[0].num, e = offs->arr[1].num;
    if (b < 0 || e < b || e > static_cast<double>(dataSize) || b != std::floor(b) || e != std::floor(e))
      throw FormatError(path, name, "data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                                        "] lie outside the data section (" + std::to_string(dataSize) +
                                        " bytes): truncated or corrupt");
    uint64_t begin = static_cast<uint64_t>(b), end = static_cast<uint64_t>(e);
    ranges.emplace_back(begin, end);
    std::string gname = ggufName(name);
    if (gname.empty()) continue;
    if (elemBytes == 0) throw FormatError(path, name, "unsupported dtype '" + dtype->str + "' (F32, F16, BF16 are supported)");
    if (end - begin != elements * elemBytes)
      throw FormatError(path, name, "data_offsets span " + std::to_string(end - begin) + " bytes but shape and dtype need " +
                                        std::to_string(elements * elemBytes));
    if (set.tensors.count(gname)) throw FormatError(path, name, "tensor appears twice in the model files");
    SourceTensor t;
    t.type = type;
    t.dims = dims;
    t.data = dataStart + begin;
    t.bytes = end - begin;
    set.tensors[gname] = t;
    set.originalNames[gname] = name;
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t k = 1; k < ranges.size(); k++)
    if (ranges[k].first < ranges[k - 1].second) throw FormatError(path, "", "tensor data ranges overlap");
  set.maps.push_back(map);
}

}  // namespace

std::vector<float> llama3FreqFactors(int64_t headDim, double theta, double factor, double lowFreqFactor,
                                     double highFreqFactor, double originalContext) {
  std::vector<float> out(headDim / 2);
  const double lowWavelen = originalContext / lowFreqFactor;
  const double highWavelen = originalContext / highFreqFactor;
  for (int64_t i = 0; i < headDim / 2; i++) {
    double invFreq = 1.0 / std::pow(theta, 2.0 * i / headDim);
    double wavelen = 2 * M_PI / invFreq;
    double scaled;
    if (wavelen < highWavelen) scaled = invFreq;
    else if (wavelen > lowWavelen) scaled = invFreq / factor;
    else {
      double smooth = (originalContext / wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
      scaled = (1 - smooth) * invFreq / factor + smooth * invFreq;
    }
    out[i] = static_cast<float>(invFreq / scaled);
  }
  return out;
}

void readSafetensorsModel(const std::string& dir, ModelConfig& cfg, TensorSet& set) {
  const std::string configPath = (fs::path(dir) / "config.json").string();
  if (!fs::exists(configPath)) throw FormatError(dir, "", "no config.json in the model directory");
  JsonValue c = parseFile(configPath);
  if (!c.isObject()) throw FormatError(configPath, "", "config.json is not a JSON object");

  std::string type;
  if (const JsonValue* mt = c.get("model_type"); mt && mt->isString()) type = mt->str;
  if (type.empty())
    if (const JsonValue* archs = c.get("architectures"); archs && archs->isArray() && !archs->arr.empty() &&
                                                          archs->arr[0].isString())
      type = archs->arr[0].str;
  if (type == "llama" || type == "mistral" || type == "LlamaForCausalLM" || type == "MistralForCausalLM")
    cfg.arch = Arch::Llama;
  else if (type == "qwen2" || type == "Qwen2ForCausalLM") cfg.arch = Arch::Qwen2;
  else if (type == "qwen3" || type == "Qwen3ForCausalLM") cfg.arch = Arch::Qwen3;
  else throw FormatError(configPath, "", "unsupported architecture '" + type + "' (supported: llama, mistral, qwen2, qwen3)");

  cfg.format = "safetensors";
  cfg.path = dir;
  cfg.name = fs::path(dir).filename().string();
  if (cfg.name.empty()) cfg.name = fs::path(dir).parent_path().filename().string();
  cfg.hidden = cfgInt(c, configPath, "hidden_size", 1, 1 << 16);
  cfg.layers = cfgInt(c, configPath, "num_hidden_layers", 1, 1024);
  cfg.heads = cfgInt(c, configPath, "num_attention_heads", 1, 1024);
  cfg.kvHeads = cfgInt(c, configPath, "num_key_value_heads", 1, 1024, &cfg.heads);
  int64_t defHead = cfg.hidden / cfg.heads;
  cfg.headDim = cfgInt(c, configPath, "head_dim", 1, 1024, &defHead);
  cfg.intermediate = cfgInt(c, configPath, "intermediate_size", 1, 1 << 18);
  int64_t defCtx = 4096;
  cfg.contextLength = cfgInt(c, configPath, "max_position_embeddings", 1, 1ll << 24, &defCtx);
  cfg.eps = cfgNum(c, configPath, "rms_norm_eps", 1e-6, 0, 1);
  // Rotary settings: transformers < 5 writes `rope_theta` + `rope_scaling`; transformers 5
  // writes one `rope_parameters` object holding rope_theta, rope_type and the scaling keys.
  const JsonValue* ropeParams = c.get("rope_parameters");
  if (ropeParams && ropeParams->kind != JsonValue::Kind::Null && !ropeParams->isObject())
    throw FormatError(configPath, "", "'rope_parameters' must be an object or null");
  if (ropeParams && !ropeParams->isObject()) ropeParams = nullptr;
  cfg.ropeTheta = cfgNum(ropeParams ? *ropeParams : c, configPath, "rope_theta",
                         cfgNum(c, configPath, "rope_theta", 10000.0, 1, 1e12), 1, 1e12);
  cfg.ropeNeox = true;  // HF checkpoints use rotate_half for every supported architecture
  const JsonValue* tie = c.get("tie_word_embeddings");
  if (tie && tie->kind != JsonValue::Kind::Bool && tie->kind != JsonValue::Kind::Null)
    throw FormatError(configPath, "", "'tie_word_embeddings' must be a boolean");
  bool tied = tie && tie->kind == JsonValue::Kind::Bool && tie->b;

  const JsonValue* rs = ropeParams ? ropeParams : c.get("rope_scaling");
  if (rs && rs->kind != JsonValue::Kind::Null) {
    if (!rs->isObject()) throw FormatError(configPath, "", "'rope_scaling' must be an object or null");
    const JsonValue* rt = rs->get("rope_type");
    if (!rt) rt = rs->get("type");
    std::string kind = rt && rt->isString() ? rt->str : "default";
    double factor = cfgNum(*rs, configPath, "factor", 1.0, 1e-6, 1e6);
    if (kind == "llama3") {
      cfg.ropeFreqFactors = llama3FreqFactors(
          cfg.headDim, cfg.ropeTheta, factor, cfgNum(*rs, configPath, "low_freq_factor", 1.0, 1e-6, 1e6),
          cfgNum(*rs, configPath, "high_freq_factor", 4.0, 1e-6, 1e6),
          cfgNum(*rs, configPath, "original_max_position_embeddings", 8192, 1, 1e9));
    } else if (kind == "linear") {
      cfg.ropeFreqFactors.assign(cfg.headDim / 2, static_cast<float>(factor));
    } else if (kind != "default") {
      throw FormatError(configPath, "", "unsupported rope scaling type '" + kind + "' (supported: default, linear, llama3)");
    }
  }

  // Which files: the index's weight_map, else every *.safetensors in the directory.
  std::set<std::string> files;
  const std::string indexPath = (fs::path(dir) / "model.safetensors.index.json").string();
  if (fs::exists(indexPath)) {
    JsonValue idx = parseFile(indexPath);
    const JsonValue* wm = idx.get("weight_map");
    if (!wm || !wm->isObject()) throw FormatError(indexPath, "", "missing 'weight_map' object");
    for (const auto& [k, v] : wm->obj) {
      if (!v.isString() || v.str.find('/') != std::string::npos || v.str.find("..") != std::string::npos)
        throw FormatError(indexPath, "", "weight_map entry '" + k + "' must name a file in the directory");
      files.insert(v.str);
    }
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") files.insert(e.path().filename().string());
  }
  if (files.empty()) throw FormatError(dir, "", "no *.safetensors files in the model directory");
  set.file = dir;
  for (const std::string& f : files) readSafetensorsFile((fs::path(dir) / f).string(), set);

  if (!set.tensors.count("output.weight") && !tied && set.tensors.count("token_embd.weight"))
    throw FormatError(dir, "lm_head.weight", "missing, and tie_word_embeddings is false");
  if (tied) set.tensors.erase("output.weight");
}

}  // namespace prism
