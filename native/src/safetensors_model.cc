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
#include "hf_files.h"
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

}  // namespace

JsonValue readJsonFile(const std::string& path) {
  std::string text = readSmallFile(path, 64 << 20);
  try {
    return parseJson(text);
  } catch (const std::runtime_error& e) {
    throw FormatError(path, "", std::string("invalid JSON: ") + e.what());
  }
}

int64_t configInt(const JsonValue& c, const std::string& path, const char* key, int64_t min, int64_t max,
                  const int64_t* fallback) {
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

double configNum(const JsonValue& c, const std::string& path, const char* key, double fallback, double min, double max) {
  const JsonValue* v = c.get(key);
  if (!v || v->kind == JsonValue::Kind::Null) return fallback;
  if (!v->isNumber() || !(v->num >= min && v->num <= max))
    throw FormatError(path, "", std::string("'") + key + "' must be a number in range");
  return v->num;
}

namespace {

// HF tensor name → GGUF tensor name ("" = not used by the model). Per-expert tensors keep
// their expert number: `blk.N.ffn_gate.E.weight` (the names model.cc slices GGUF's 3-D
// expert tensors into).
std::string ggufName(const std::string& hf, Arch arch) {
  static const std::regex layer(R"(^model\.layers\.(\d+)\.(.+)$)");
  static const std::regex expert(R"(^(?:mlp|block_sparse_moe)\.experts\.(\d+)\.(\w+)\.weight$)");
  static const std::map<std::string, std::string> perLayer = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.qkv_proj.weight", "attn_qkv.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.gate_up_proj.weight", "ffn_up.weight"},  // Phi-3: [gate | up] in one matrix
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"mlp.gate.weight", "ffn_gate_inp.weight"},              // Qwen3-MoE router
      {"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"},  // Mixtral router
  };
  // Gemma 3 has four norms a layer, and its post_attention_layernorm is not the FFN's input norm.
  static const std::map<std::string, std::string> gemmaNorms = {
      {"post_attention_layernorm.weight", "post_attention_norm.weight"},
      {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
      {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
  };
  static const std::map<std::string, std::string> expertParts = {
      {"gate_proj", "ffn_gate"}, {"up_proj", "ffn_up"}, {"down_proj", "ffn_down"},  // Qwen3-MoE
      {"w1", "ffn_gate"},        {"w3", "ffn_up"},      {"w2", "ffn_down"},         // Mixtral
  };
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  std::smatch m;
  if (std::regex_match(hf, m, layer)) {
    const std::string blk = "blk." + m[1].str() + ".", rest = m[2].str();
    if (arch == Arch::Gemma3)
      if (auto it = gemmaNorms.find(rest); it != gemmaNorms.end()) return blk + it->second;
    if (auto it = perLayer.find(rest); it != perLayer.end()) return blk + it->second;
    std::smatch e;
    if (std::regex_match(rest, e, expert))
      if (auto it = expertParts.find(e[2].str()); it != expertParts.end())
        return blk + it->second + "." + e[1].str() + ".weight";
  }
  return "";
}

// An Idefics3 checkpoint's tensor name as its text model alone would have it: the decoder's
// `model.text_model.X` is `model.X`, `lm_head` stays, the vision tower's and connector's are
// not the decoder's ("").
std::string textModelName(const std::string& hf) {
  static const std::string prefix = "model.text_model.";
  if (hf.rfind(prefix, 0) == 0) return "model." + hf.substr(prefix.size());
  return hf.rfind("lm_head.", 0) == 0 ? hf : "";
}

// LLaVA's text model: transformers 5's model.language_model.* / lm_head.*, or the older
// language_model.model.* / language_model.lm_head.*; the vision tower's are the vision loader's.
std::string llavaTextName(const std::string& hf) {
  for (const char* prefix : {"model.language_model.", "language_model.model."})
    if (hf.rfind(prefix, 0) == 0) return "model." + hf.substr(std::string(prefix).size());
  if (hf.rfind("language_model.lm_head.", 0) == 0) return hf.substr(std::string("language_model.").size());
  return hf.rfind("lm_head.", 0) == 0 ? hf : "";
}

// config.json's model_type, else its first architecture ("" when neither is there).
std::string modelType(const JsonValue& c) {
  if (const JsonValue* mt = c.get("model_type"); mt && mt->isString()) return mt->str;
  if (const JsonValue* archs = c.get("architectures"); archs && archs->isArray() && !archs->arr.empty() &&
                                                        archs->arr[0].isString())
    return archs->arr[0].str;
  return "";
}

}  // namespace

void readSafetensorsFile(const std::string& path, const TensorRename& rename, TensorSet& set) {
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
    std::string gname = rename(name);
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

std::set<std::string> safetensorsFiles(const std::string& dir) {
  std::set<std::string> files;
  const std::string indexPath = (fs::path(dir) / "model.safetensors.index.json").string();
  if (fs::exists(indexPath)) {
    JsonValue idx = readJsonFile(indexPath);
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
  return files;
}

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

// One rotary embedding's scaling from a rope_parameters / rope_scaling object (null: none).
static RopeSpec readRope(const JsonValue* rs, const JsonValue& c, const ModelConfig& cfg, double theta, const std::string& path) {
  RopeSpec r;
  r.theta = theta;
  if (!rs || rs->kind == JsonValue::Kind::Null) return r;
  if (!rs->isObject()) throw FormatError(path, "", "'rope_scaling' must be an object or null");
  const JsonValue* rt = rs->get("rope_type");
  if (!rt) rt = rs->get("type");
  std::string kind = rt && rt->isString() ? rt->str : "default";
  double factor = configNum(*rs, path, "factor", 1.0, 1e-6, 1e6);
  if (kind == "llama3") {
    r.freqFactors = llama3FreqFactors(cfg.ropeDim, theta, factor, configNum(*rs, path, "low_freq_factor", 1.0, 1e-6, 1e6),
                                      configNum(*rs, path, "high_freq_factor", 4.0, 1e-6, 1e6),
                                      configNum(*rs, path, "original_max_position_embeddings", 8192, 1, 1e9));
  } else if (kind == "linear") {
    r.freqFactors.assign(cfg.ropeDim / 2, static_cast<float>(factor));
  } else if (kind == "longrope") {
    // LongRoPE (Phi-3): per-frequency factors, long ones past the original context (chosen
    // here for the served context: the trained length, as llama.cpp does by default), and
    // cos/sin scaled by sqrt(1 + ln(s)/ln(original)), s = trained / original length.
    const double original = configNum(*rs, path, "original_max_position_embeddings",
                                   configNum(c, path, "original_max_position_embeddings", static_cast<double>(cfg.contextLength), 1, 1e9), 1, 1e9);
    const JsonValue* f = rs->get(static_cast<double>(cfg.contextLength) > original ? "long_factor" : "short_factor");
    if (!f || !f->isArray() || static_cast<int64_t>(f->arr.size()) != cfg.ropeDim / 2)
      throw FormatError(path, "", "LongRoPE needs long_factor and short_factor with " + std::to_string(cfg.ropeDim / 2) + " numbers");
    for (const JsonValue& v : f->arr) {
      if (!v.isNumber() || !(v.num > 0) || !std::isfinite(v.num)) throw FormatError(path, "", "LongRoPE factors must be positive numbers");
      r.freqFactors.push_back(static_cast<float>(v.num));
    }
    const double s = rs->get("factor") ? factor : static_cast<double>(cfg.contextLength) / original;
    r.attnFactor = rs->get("attention_factor") ? configNum(*rs, path, "attention_factor", 1, 1e-3, 1e3)
                   : s <= 1.0                   ? 1.0
                                                : std::sqrt(1 + std::log(s) / std::log(original));
  } else if (kind != "default") {
    throw FormatError(path, "", "unsupported rope scaling type '" + kind + "' (supported: default, linear, llama3, longrope)");
  }
  return r;
}

void readSafetensorsModel(const std::string& dir, ModelConfig& cfg, TensorSet& set) {
  const std::string configPath = (fs::path(dir) / "config.json").string();
  if (!fs::exists(configPath)) throw FormatError(dir, "", "no config.json in the model directory");
  JsonValue c = readJsonFile(configPath);
  if (!c.isObject()) throw FormatError(configPath, "", "config.json is not a JSON object");

  std::string type = modelType(c);
  // Idefics3 and SmolVLM (its renamed successor): the text model is a Llama under
  // `model.text_model.*`, configured by `text_config`; the vision tower and connector beside
  // it are the vision loader's (loadVisionModel).
  const bool idefics3 = type == "idefics3" || type == "Idefics3ForConditionalGeneration" || type == "smolvlm" ||
                        type == "SmolVLMForConditionalGeneration";
  // LLaVA-1.5 (LlavaForConditionalGeneration): the same shape, its text model under
  // model.language_model.* (llavaTextName).
  const bool llava = type == "llava" || type == "LlavaForConditionalGeneration";
  // LLaVA-1.6 (LlavaNextForConditionalGeneration): LLaVA's names; its text model a Llama
  // (LlavaNextConfig's default, the Vicuna checkpoints) or a Mistral (llava-v1.6-mistral).
  const bool llavaNext = type == "llava_next" || type == "LlavaNextForConditionalGeneration";
  // Gemma 3 with its vision tower (Gemma3ForConditionalGeneration): a gemma3_text model under
  // the same names as LLaVA's (llavaTextName).
  const bool gemma3 = type == "gemma3" || type == "Gemma3ForConditionalGeneration";
  const JsonValue* outerTie = c.get("tie_word_embeddings");
  if (idefics3 || llava || llavaNext || gemma3) {
    const char* family = llava ? "LLaVA" : llavaNext ? "LLaVA-1.6" : gemma3 ? "Gemma 3" : "Idefics3";
    const JsonValue* tc = c.get("text_config");
    if (!tc || !tc->isObject()) throw FormatError(configPath, "", std::string("a ") + family + " config needs a 'text_config' object");
    JsonValue text = *tc;
    if (!text.get("tie_word_embeddings") && outerTie) text.obj.emplace_back("tie_word_embeddings", *outerTie);
    c = std::move(text);
    type = modelType(c);
    // The text config's default class: Idefics3Config's and LlavaConfig's Llama, Gemma3Config's gemma3_text.
    if (type.empty()) type = gemma3 ? "gemma3_text" : "llama";
    const std::string wanted = gemma3 ? "gemma3_text" : "llama";
    const bool mistral = llavaNext && (type == "mistral" || type == "MistralForCausalLM");
    if (type != wanted && type != (gemma3 ? "Gemma3ForCausalLM" : "LlamaForCausalLM") && !mistral)
      throw FormatError(configPath, "", std::string(family) + " text_config.model_type '" + type + "' is unsupported (" + wanted +
                                            (llavaNext ? ", mistral are)" : " is)"));
    cfg.vision = llava ? "llava" : llavaNext ? "llava_next" : gemma3 ? "gemma3" : "idefics3";
    // llava-hf's folders write only what differs from LlamaConfig's defaults (LLaVA-1.5-7B's
    // text_config has no hidden_size): those defaults, as transformers fills them.
    // llava-v1.6-mistral's text_config does the same against MistralConfig's (its sliding window
    // included: absent means 4096 there, explicit null means none).
    using Default = std::pair<const char*, double>;
    const std::vector<Default> llamaDefaults = {{"hidden_size", 4096}, {"intermediate_size", 11008}, {"num_hidden_layers", 32},
                                                {"num_attention_heads", 32}};
    const std::vector<Default> mistralDefaults = {{"hidden_size", 4096},       {"intermediate_size", 14336},
                                                  {"num_hidden_layers", 32},   {"num_attention_heads", 32},
                                                  {"num_key_value_heads", 8},  {"max_position_embeddings", 131072},
                                                  {"sliding_window", 4096}};
    if (llava || llavaNext)
      for (const auto& [key, value] : mistral ? mistralDefaults : llamaDefaults)
        if (!c.get(key)) {
          JsonValue v;
          v.kind = JsonValue::Kind::Number;
          v.num = value;
          c.obj.emplace_back(key, v);
        }
  }
  bool slidingAll = false;  // the config's sliding_window applies to every layer
  if (type == "llama" || type == "LlamaForCausalLM") cfg.arch = Arch::Llama;
  else if (type == "mistral" || type == "MistralForCausalLM" || type == "mixtral" || type == "MixtralForCausalLM")
    cfg.arch = Arch::Llama, slidingAll = true;
  else if (type == "qwen2" || type == "Qwen2ForCausalLM") cfg.arch = Arch::Qwen2;
  else if (type == "qwen3" || type == "Qwen3ForCausalLM") cfg.arch = Arch::Qwen3;
  else if (type == "qwen3_moe" || type == "Qwen3MoeForCausalLM") cfg.arch = Arch::Qwen3Moe;
  else if (type == "gemma3_text" || type == "Gemma3ForCausalLM") cfg.arch = Arch::Gemma3;
  else if (type == "phi3" || type == "Phi3ForCausalLM") cfg.arch = Arch::Phi3, slidingAll = true;
  else
    throw FormatError(configPath, "", "unsupported architecture '" + type +
                                          "' (supported: llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, gemma3_text, gemma3, phi3, idefics3, llava, llava_next)");

  cfg.format = "safetensors";
  cfg.path = dir;
  cfg.name = fs::path(dir).filename().string();
  if (cfg.name.empty()) cfg.name = fs::path(dir).parent_path().filename().string();
  cfg.hidden = configInt(c, configPath, "hidden_size", 1, 1 << 16);
  cfg.layers = configInt(c, configPath, "num_hidden_layers", 1, 1024);
  cfg.heads = configInt(c, configPath, "num_attention_heads", 1, 1024);
  cfg.kvHeads = configInt(c, configPath, "num_key_value_heads", 1, 1024, &cfg.heads);
  int64_t defHead = cfg.hidden / cfg.heads;
  cfg.headDim = configInt(c, configPath, "head_dim", 1, 1024, &defHead);
  cfg.intermediate = configInt(c, configPath, "intermediate_size", 1, 1 << 18);
  int64_t defCtx = 4096;
  cfg.contextLength = configInt(c, configPath, "max_position_embeddings", 1, 1ll << 24, &defCtx);
  cfg.eps = configNum(c, configPath, "rms_norm_eps", 1e-6, 0, 1);
  cfg.ropeNeox = true;  // HF checkpoints use rotate_half for every supported architecture
  const JsonValue* tie = c.get("tie_word_embeddings");
  if (tie && tie->kind != JsonValue::Kind::Bool && tie->kind != JsonValue::Kind::Null)
    throw FormatError(configPath, "", "'tie_word_embeddings' must be a boolean");
  // Gemma ties its head by default (the config class's default, which save_pretrained omits).
  bool tied = tie && tie->kind == JsonValue::Kind::Bool ? tie->b : cfg.arch == Arch::Gemma3;
  for (const char* key : {"attention_chunk_size", "final_logit_softcapping", "attn_logit_softcapping"})
    if (const JsonValue* v = c.get(key); v && v->kind != JsonValue::Kind::Null)
      throw FormatError(configPath, "", std::string("'") + key + "' is unsupported (it must be null or absent)");
  const char* act = cfg.arch == Arch::Gemma3 ? "hidden_activation" : "hidden_act";
  const std::string wantAct = cfg.arch == Arch::Gemma3 ? "gelu_pytorch_tanh" : "silu";
  if (const JsonValue* v = c.get(act); v && v->isString() && v->str != wantAct)
    throw FormatError(configPath, "", std::string("'") + act + "' = '" + v->str + "' is unsupported (expected '" + wantAct + "')");

  // Rotary settings: transformers < 5 writes `rope_theta` + `rope_scaling`; transformers 5
  // writes one `rope_parameters` object holding rope_theta, rope_type and the scaling keys,
  // or (Gemma 3) one such object per layer type.
  const JsonValue* ropeParams = c.get("rope_parameters");
  if (ropeParams && ropeParams->kind != JsonValue::Kind::Null && !ropeParams->isObject())
    throw FormatError(configPath, "", "'rope_parameters' must be an object or null");
  if (ropeParams && !ropeParams->isObject()) ropeParams = nullptr;
  const double partial = configNum(ropeParams && ropeParams->get("partial_rotary_factor") ? *ropeParams : c, configPath,
                                "partial_rotary_factor", 1.0, 1e-3, 1.0);
  cfg.ropeDim = static_cast<int64_t>(static_cast<double>(cfg.headDim) * partial);
  const JsonValue* globalParams = ropeParams;
  const JsonValue* localParams = nullptr;
  if (ropeParams && ropeParams->get("full_attention")) {
    globalParams = ropeParams->get("full_attention");
    localParams = ropeParams->get("sliding_attention");
  }
  const JsonValue* legacyScaling = c.get("rope_scaling");
  cfg.ropeTheta = configNum(globalParams ? *globalParams : c, configPath, "rope_theta",
                         configNum(c, configPath, "rope_theta", 10000.0, 1, 1e12), 1, 1e12);
  RopeSpec global = readRope(globalParams ? globalParams : legacyScaling, c, cfg, cfg.ropeTheta, configPath);
  cfg.ropeFreqFactors = global.freqFactors;
  cfg.ropeAttnFactor = global.attnFactor;

  // Which layers slide: transformers 5 lists `layer_types`; older configs say it per model.
  const JsonValue* window = c.get("sliding_window");
  int64_t W = 0;
  if (window && window->kind != JsonValue::Kind::Null) W = configInt(c, configPath, "sliding_window", 1, 1ll << 24);
  cfg.layerWindow.assign(cfg.layers, 0);
  if (const JsonValue* types = c.get("layer_types"); types && types->kind != JsonValue::Kind::Null) {
    if (!types->isArray() || static_cast<int64_t>(types->arr.size()) != cfg.layers)
      throw FormatError(configPath, "", "'layer_types' must list one type per layer");
    for (int64_t l = 0; l < cfg.layers; l++) {
      const JsonValue& t = types->arr[l];
      if (t.isString() && t.str == "full_attention") continue;
      if (!(t.isString() && t.str == "sliding_attention"))
        throw FormatError(configPath, "", "layer_types[" + std::to_string(l) + "] = '" + (t.isString() ? t.str : "?") +
                                              "' is unsupported (full_attention, sliding_attention are)");
      if (W == 0) throw FormatError(configPath, "", "a sliding_attention layer needs 'sliding_window'");
      cfg.layerWindow[l] = W;
    }
  } else if (cfg.arch == Arch::Gemma3) {
    int64_t six = 6;
    const int64_t pattern = c.get("sliding_window_pattern") ? configInt(c, configPath, "sliding_window_pattern", 1, 1024)
                                                            : configInt(c, configPath, "_sliding_window_pattern", 1, 1024, &six);
    for (int64_t l = 0; l < cfg.layers; l++) cfg.layerWindow[l] = (l + 1) % pattern != 0 ? W : 0;
  } else if (slidingAll) {
    cfg.layerWindow.assign(cfg.layers, W);
  } else if (const JsonValue* use = c.get("use_sliding_window"); use && use->kind == JsonValue::Kind::Bool && use->b) {
    // Qwen2/Qwen3 (transformers' rule): layers from max_window_layers on slide.
    const int64_t from = configInt(c, configPath, "max_window_layers", 0, 1024, &cfg.layers);
    if (W == 0) throw FormatError(configPath, "", "use_sliding_window needs 'sliding_window'");
    for (int64_t l = from; l < cfg.layers; l++) cfg.layerWindow[l] = W;
  }

  if (cfg.arch == Arch::Gemma3) {
    cfg.localRope = true;
    cfg.localRopeSpec = localParams ? readRope(localParams, c, cfg, configNum(*localParams, configPath, "rope_theta", 10000, 1, 1e12), configPath)
                                    : RopeSpec{configNum(c, configPath, "rope_local_base_freq", 10000.0, 1, 1e12), {}, 1.0};
    cfg.embedScale = std::sqrt(static_cast<double>(cfg.hidden));
    cfg.postNorms = true;
    cfg.activation = Activation::GeluTanh;
    cfg.normOffset = 1.0f;
    cfg.queryScale = 1.0 / std::sqrt(configNum(c, configPath, "query_pre_attn_scalar", 256, 1, 1e6));
  }

  // Mixture of experts.
  if (const char* key = c.get("num_local_experts") ? "num_local_experts" : c.get("num_experts") ? "num_experts" : nullptr) {
    cfg.experts = configInt(c, configPath, key, 1, 1024);
    cfg.expertsUsed = configInt(c, configPath, "num_experts_per_tok", 1, 1024);
    cfg.expertIntermediate = cfg.arch == Arch::Qwen3Moe ? configInt(c, configPath, "moe_intermediate_size", 1, 1 << 18)
                                                        : cfg.intermediate;
    // Mixtral always renormalises the chosen experts' weights; Qwen3-MoE says so in its config.
    if (const JsonValue* n = c.get("norm_topk_prob"); n && n->kind == JsonValue::Kind::Bool) cfg.normTopK = n->b;
    if (const JsonValue* dense = c.get("mlp_only_layers"); dense && dense->isArray() && !dense->arr.empty())
      throw FormatError(configPath, "", "'mlp_only_layers' (dense layers among expert layers) is unsupported");
    int64_t one = 1;
    if (configInt(c, configPath, "decoder_sparse_step", 1, 1024, &one) != 1)
      throw FormatError(configPath, "", "'decoder_sparse_step' other than 1 is unsupported");
    if (const JsonValue* sh = c.get("shared_expert_intermediate_size"); sh && sh->isNumber() && sh->num > 0)
      throw FormatError(configPath, "", "shared experts are unsupported");
  } else if (cfg.arch == Arch::Qwen3Moe) {
    throw FormatError(configPath, "", "missing 'num_experts'");
  }

  const std::set<std::string> files = safetensorsFiles(dir);
  set.file = dir;
  const Arch arch = cfg.arch;
  for (const std::string& f : files)
    readSafetensorsFile((fs::path(dir) / f).string(),
                        [arch, idefics3, llava = llava || llavaNext, gemma3](const std::string& hf) {
                          return ggufName(idefics3 ? textModelName(hf) : llava || gemma3 ? llavaTextName(hf) : hf, arch);
                        },
                        set);

  if (!set.tensors.count("output.weight") && !tied && set.tensors.count("token_embd.weight"))
    throw FormatError(dir, "lm_head.weight", "missing, and tie_word_embeddings is false");
  if (tied) set.tensors.erase("output.weight");
}

}  // namespace prism
