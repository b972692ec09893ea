// Hugging Face encoder directory (config.json + *.safetensors, and sentence-transformers'
// files) -> EncoderConfig + TensorSet under llama.cpp's tensor names, the way its
// convert_hf_to_gguf.py names them (conversion/bert.py), so both formats reach one builder.
// BERT / MiniLM (`bert`), XLM-RoBERTa / RoBERTa (`xlm-roberta`, `roberta`; BGE-M3 and the
// bge-reranker cross-encoders) and NomicBERT (`nomic_bert`, nomic-ai's own config keys).
#include <filesystem>
#include <map>
#include <regex>

#include "encoder/encoder_model.h"
#include "format_error.h"
#include "gguf.h"
#include "hf_files.h"

namespace fs = std::filesystem;

namespace prism {
namespace {

// BERT-family names (after the model's prefix, "bert." / "roberta.", is dropped).
std::string bertName(const std::string& hf, bool classifier, bool robertaHead) {
  static const std::regex layer(R"(^encoder\.layer\.(\d+)\.(.+)\.(weight|bias|gamma|beta)$)");
  static const std::map<std::string, std::string> perLayer = {
      {"attention.self.query", "attn_q"},        {"attention.self.key", "attn_k"},
      {"attention.self.value", "attn_v"},        {"attention.output.dense", "attn_output"},
      {"attention.output.LayerNorm", "attn_output_norm"}, {"intermediate.dense", "ffn_up"},
      {"output.dense", "ffn_down"},              {"output.LayerNorm", "layer_output_norm"},
  };
  static const std::map<std::string, std::string> whole = {
      {"embeddings.word_embeddings.weight", "token_embd.weight"},
      {"embeddings.position_embeddings.weight", "position_embd.weight"},
      {"embeddings.token_type_embeddings.weight", "token_types.weight"},
      {"embeddings.LayerNorm.weight", "token_embd_norm.weight"},
      {"embeddings.LayerNorm.bias", "token_embd_norm.bias"},
      {"embeddings.LayerNorm.gamma", "token_embd_norm.weight"},
      {"embeddings.LayerNorm.beta", "token_embd_norm.bias"},
  };
  if (auto it = whole.find(hf); it != whole.end()) return it->second;
  std::smatch m;
  if (std::regex_match(hf, m, layer)) {
    auto it = perLayer.find(m[2].str());
    if (it == perLayer.end()) return "";
    const std::string kind = m[3] == "gamma" ? "weight" : m[3] == "beta" ? "bias" : m[3].str();
    return "blk." + m[1].str() + "." + it->second + "." + kind;
  }
  if (!classifier) return "";
  // The head: BERT's pooler (dense + tanh on CLS) and classifier; RoBERTa's classifier.dense
  // (the same dense + tanh) and classifier.out_proj. llama.cpp's names: cls, cls.output.
  static const std::regex head(R"(^(pooler\.dense|classifier|classifier\.dense|classifier\.out_proj)\.(weight|bias)$)");
  if (!std::regex_match(hf, m, head)) return "";
  const std::string part = m[1].str(), kind = m[2].str();
  if (robertaHead ? part == "classifier.dense" : part == "pooler.dense") return "cls." + kind;
  if (robertaHead ? part == "classifier.out_proj" : part == "classifier") return "cls.output." + kind;
  return "";
}

// nomic-ai's NomicBertModel names.
std::string nomicName(const std::string& hf) {
  static const std::regex layer(R"(^encoder\.layers\.(\d+)\.(.+)\.(weight|bias)$)");
  static const std::map<std::string, std::string> perLayer = {
      {"attn.Wqkv", "attn_qkv"}, {"attn.out_proj", "attn_output"}, {"mlp.fc11", "ffn_up"},
      {"mlp.fc12", "ffn_gate"},  {"mlp.fc2", "ffn_down"},         {"norm1", "attn_output_norm"},
      {"norm2", "layer_output_norm"},
  };
  if (hf == "embeddings.word_embeddings.weight") return "token_embd.weight";
  if (hf == "embeddings.token_type_embeddings.weight") return "token_types.weight";
  if (hf == "emb_ln.weight") return "token_embd_norm.weight";
  if (hf == "emb_ln.bias") return "token_embd_norm.bias";
  std::smatch m;
  if (std::regex_match(hf, m, layer))
    if (auto it = perLayer.find(m[2].str()); it != perLayer.end()) return "blk." + m[1].str() + "." + it->second + "." + m[3].str();
  return "";
}

std::string stringField(const JsonValue& c, const char* key) {
  const JsonValue* v = c.get(key);
  return v && v->isString() ? v->str : "";
}

bool boolField(const JsonValue& c, const std::string& file, const char* key, bool fallback) {
  const JsonValue* v = c.get(key);
  if (!v || v->kind == JsonValue::Kind::Null) return fallback;
  if (v->kind != JsonValue::Kind::Bool) throw FormatError(file, "", std::string("'") + key + "' must be a boolean");
  return v->b;
}

// id2label in id order (transformers writes {"0": "LABEL_0", ...}).
std::vector<std::string> labelsOf(const JsonValue& c, const std::string& file) {
  const JsonValue* m = c.get("id2label");
  if (!m || !m->isObject()) return {};
  std::vector<std::string> labels(m->obj.size());
  for (const auto& [k, v] : m->obj) {
    size_t id = 0;
    try {
      id = std::stoul(k);
    } catch (const std::exception&) {
      throw FormatError(file, "", "'id2label' keys must be label ids 0..n-1");
    }
    if (id >= labels.size() || !v.isString()) throw FormatError(file, "", "'id2label' must map ids 0..n-1 to names");
    labels[id] = v.str;
  }
  return labels;
}

void readBertConfig(const JsonValue& c, const std::string& file, EncoderConfig& cfg) {
  cfg.hidden = configInt(c, file, "hidden_size", 8, 1 << 16);
  cfg.layers = configInt(c, file, "num_hidden_layers", 1, 1024);
  cfg.heads = configInt(c, file, "num_attention_heads", 1, 1024);
  cfg.intermediate = configInt(c, file, "intermediate_size", 1, 1 << 18);
  cfg.maxPositions = configInt(c, file, "max_position_embeddings", 1, 1 << 20);
  int64_t two = 2;
  cfg.typeVocab = configInt(c, file, "type_vocab_size", 0, 1 << 16, &two);
  cfg.eps = configNum(c, file, "layer_norm_eps", 1e-12, 0, 1);
  const std::string pos = stringField(c, "position_embedding_type");
  if (!pos.empty() && pos != "absolute")
    throw FormatError(file, "", "'position_embedding_type' = '" + pos + "' is unsupported (absolute is)");
  const std::string act = stringField(c, "hidden_act");
  if (act == "gelu" || act.empty()) cfg.ffn = EncoderFfn::GeluErf;
  else if (act == "gelu_new" || act == "gelu_pytorch_tanh") cfg.ffn = EncoderFfn::GeluTanh;
  else throw FormatError(file, "", "'hidden_act' = '" + act + "' is unsupported (gelu, gelu_new, gelu_pytorch_tanh are)");
}

void readNomicConfig(const JsonValue& c, const std::string& file, EncoderConfig& cfg) {
  cfg.arch = EncoderArch::NomicBert;
  cfg.family = "nomic-bert";
  cfg.hidden = configInt(c, file, "n_embd", 8, 1 << 16);
  cfg.layers = configInt(c, file, "n_layer", 1, 1024);
  cfg.heads = configInt(c, file, "n_head", 1, 1024);
  cfg.intermediate = configInt(c, file, "n_inner", 1, 1 << 18);
  cfg.maxPositions = configInt(c, file, "n_positions", 1, 1 << 20);
  int64_t two = 2;
  cfg.typeVocab = configInt(c, file, "type_vocab_size", 0, 1 << 16, &two);
  cfg.eps = configNum(c, file, "layer_norm_epsilon", 1e-12, 0, 1);
  cfg.ropeTheta = configNum(c, file, "rotary_emb_base", 10000, 1, 1e12);
  cfg.ffn = EncoderFfn::SwiGlu;
  auto refuse = [&](const std::string& why) { throw FormatError(file, "", why + " is unsupported"); };
  if (stringField(c, "activation_function") != "swiglu") refuse("'activation_function' other than swiglu");
  if (configNum(c, file, "rotary_emb_fraction", 1, 0, 1) != 1.0) refuse("'rotary_emb_fraction' below 1");
  if (boolField(c, file, "rotary_emb_interleaved", false)) refuse("'rotary_emb_interleaved': true");
  if (boolField(c, file, "prenorm", false)) refuse("'prenorm': true");
  if (boolField(c, file, "causal", false)) refuse("'causal': true");
  for (const char* key : {"qkv_proj_bias", "mlp_fc1_bias", "mlp_fc2_bias"})
    if (boolField(c, file, key, false)) refuse(std::string("'") + key + "': true");
  for (const char* key : {"rotary_scaling_factor", "rotary_emb_scale_base", "moe_every_n_layers"})
    if (const JsonValue* v = c.get(key); v && v->kind != JsonValue::Kind::Null && !(v->isNumber() && v->num == 0))
      refuse(std::string("'") + key + "'");
}

}  // namespace

void readEncoderHf(const std::string& dir, EncoderConfig& cfg, TensorSet& set) {
  const std::string file = (fs::path(dir) / "config.json").string();
  if (!fs::exists(file)) throw FormatError(dir, "", "no config.json in the model directory");
  const JsonValue c = readJsonFile(file);
  if (!c.isObject()) throw FormatError(file, "", "config.json is not a JSON object");
  const std::string type = stringField(c, "model_type");
  std::string archName;
  if (const JsonValue* a = c.get("architectures"); a && a->isArray() && !a->arr.empty() && a->arr[0].isString())
    archName = a->arr[0].str;
  const bool classifier = archName.find("ForSequenceClassification") != std::string::npos;
  if (!classifier && !archName.empty() && archName != "BertModel" && archName != "XLMRobertaModel" &&
      archName != "RobertaModel" && archName != "NomicBertModel" && archName != "BertForMaskedLM" &&
      archName != "XLMRobertaForMaskedLM")
    throw FormatError(file, "", "architecture '" + archName + "' is unsupported for an encoder (a *Model, "
                                "*ForMaskedLM or *ForSequenceClassification of bert, xlm-roberta, roberta, nomic_bert)");
  bool roberta = false;
  if (type == "bert") cfg.family = "bert";
  else if (type == "xlm-roberta" || type == "roberta") cfg.family = "xlm-roberta", roberta = true;
  else if (type == "nomic_bert") readNomicConfig(c, file, cfg);
  else throw FormatError(file, "", "encoder model_type '" + type + "' is unsupported (bert, xlm-roberta, roberta, nomic_bert are)");
  if (cfg.arch == EncoderArch::Bert) readBertConfig(c, file, cfg);
  if (roberta) {
    // transformers numbers RoBERTa positions from padding_idx + 1 (create_position_ids_from_input_ids).
    int64_t one = 1;
    cfg.positionOffset = configInt(c, file, "pad_token_id", 0, 1 << 20, &one) + 1;
  }
  if (cfg.hidden % cfg.heads != 0) throw FormatError(file, "", "hidden size is not a multiple of the head count");
  cfg.headDim = cfg.hidden / cfg.heads;
  if (classifier) {
    cfg.labels = labelsOf(c, file);
    int64_t fromLabels = static_cast<int64_t>(cfg.labels.size());
    cfg.numLabels = configInt(c, file, "num_labels", 1, 1 << 16, fromLabels > 0 ? &fromLabels : nullptr);
    if (cfg.labels.size() != static_cast<size_t>(cfg.numLabels)) cfg.labels.assign(cfg.numLabels, "");
    for (int64_t k = 0; k < cfg.numLabels; k++)
      if (cfg.labels[k].empty()) cfg.labels[k] = "LABEL_" + std::to_string(k);
  }
  cfg.format = "safetensors";
  cfg.path = dir;
  cfg.name = fs::path(dir).filename().string();
  if (cfg.name.empty()) cfg.name = fs::path(dir).parent_path().filename().string();
  cfg.pooling = readSentenceTransformersPooling(dir);

  set.file = dir;
  const bool nomic = cfg.arch == EncoderArch::NomicBert;
  const TensorRename rename = [nomic, classifier, roberta](const std::string& hf) {
    std::string name = hf;
    for (const char* prefix : {"bert.", "roberta.", "model."})
      if (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
    return nomic ? nomicName(name) : bertName(name, classifier, roberta);
  };
  for (const std::string& f : safetensorsFiles(dir)) readSafetensorsFile((fs::path(dir) / f).string(), rename, set);
}

bool isEncoderPath(const std::string& path) {
  try {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      const std::string file = (fs::path(path) / "config.json").string();
      if (!fs::exists(file)) return false;
      const std::string type = stringField(readJsonFile(file), "model_type");
      return type == "bert" || type == "xlm-roberta" || type == "roberta" || type == "nomic_bert";
    }
    const GgufFile g = readGguf(path, false);
    const GgufValue* arch = g.find("general.architecture");
    return arch && arch->type == GgufType::STRING && (arch->s == "bert" || arch->s == "nomic-bert");
  } catch (const std::exception&) {
    return false;  // the loader names what is wrong with the file
  }
}

}  // namespace prism
