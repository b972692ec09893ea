// sentence-transformers' files as sentence-transformers 6 reads them: modules.json lists the
// modules in order; the Transformer module's sentence_bert_config.json gives max_seq_length and
// do_lower_case; the Pooling module's config.json gives the mode(s), either as the legacy
// `pooling_mode_*` booleans (every one that is true, in the library's order; none true means
// mean) or as `pooling_mode` (a name or a list, in its order); a Normalize module L2-normalises.
#include "encoder/pooling_spec.h"

#include <filesystem>

#include "format_error.h"
#include "gguf.h"
#include "hf_files.h"

namespace fs = std::filesystem;

namespace prism {

const char* poolingModeName(PoolingMode m) {
  switch (m) {
    case PoolingMode::Cls: return "cls";
    case PoolingMode::Max: return "max";
    case PoolingMode::Mean: return "mean";
    case PoolingMode::MeanSqrtLen: return "mean_sqrt_len_tokens";
    case PoolingMode::WeightedMean: return "weightedmean";
    case PoolingMode::LastToken: return "lasttoken";
  }
  return "?";
}

namespace {

// The legacy booleans, in the order sentence-transformers concatenates them.
const std::pair<const char*, PoolingMode> kLegacyKeys[] = {
    {"pooling_mode_cls_token", PoolingMode::Cls},
    {"pooling_mode_max_tokens", PoolingMode::Max},
    {"pooling_mode_mean_tokens", PoolingMode::Mean},
    {"pooling_mode_mean_sqrt_len_tokens", PoolingMode::MeanSqrtLen},
    {"pooling_mode_weightedmean_tokens", PoolingMode::WeightedMean},
    {"pooling_mode_lasttoken", PoolingMode::LastToken},
};

bool modeFromName(const std::string& name, PoolingMode* out) {
  for (PoolingMode m : {PoolingMode::Cls, PoolingMode::Max, PoolingMode::Mean, PoolingMode::MeanSqrtLen,
                        PoolingMode::WeightedMean, PoolingMode::LastToken})
    if (name == poolingModeName(m)) {
      *out = m;
      return true;
    }
  return false;
}

bool flag(const JsonValue& c, const std::string& file, const char* key, bool fallback) {
  const JsonValue* v = c.get(key);
  if (!v || v->kind == JsonValue::Kind::Null) return fallback;
  if (v->kind != JsonValue::Kind::Bool) throw FormatError(file, "", std::string("'") + key + "' must be a boolean");
  return v->b;
}

void readPooling(const std::string& file, PoolingSpec& spec) {
  const JsonValue c = readJsonFile(file);
  if (!c.isObject()) throw FormatError(file, "", "the Pooling config is not a JSON object");
  if (const JsonValue* mode = c.get("pooling_mode"); mode && mode->kind != JsonValue::Kind::Null) {
    std::vector<const JsonValue*> names;
    if (mode->isString()) names.push_back(mode);
    else if (mode->isArray())
      for (const JsonValue& v : mode->arr) names.push_back(&v);
    for (const JsonValue* v : names) {
      PoolingMode m;
      if (!v->isString() || !modeFromName(v->str, &m))
        throw FormatError(file, "", "'pooling_mode' entries must be one of cls, max, mean, mean_sqrt_len_tokens, "
                                    "weightedmean, lasttoken");
      spec.modes.push_back(m);
    }
    if (spec.modes.empty()) throw FormatError(file, "", "'pooling_mode' must name at least one mode");
  } else {
    for (const auto& [key, m] : kLegacyKeys)
      if (flag(c, file, key, false)) spec.modes.push_back(m);
    if (spec.modes.empty()) spec.modes.push_back(PoolingMode::Mean);  // the library's default
  }
  if (!flag(c, file, "include_prompt", true))
    throw FormatError(file, "", "'include_prompt': false (pooling without the prompt's tokens) is unsupported");
}

void readTransformer(const std::string& dir, PoolingSpec& spec) {
  const std::string file = (fs::path(dir) / "sentence_bert_config.json").string();
  if (!fs::exists(file)) return;
  const JsonValue c = readJsonFile(file);
  if (!c.isObject()) throw FormatError(file, "", "not a JSON object");
  spec.maxSeqLength = configInt(c, file, "max_seq_length", 1, 1 << 24, &spec.maxSeqLength);
  spec.doLowerCase = flag(c, file, "do_lower_case", false);
}

// The class name at the end of a modules.json type ("sentence_transformers.models.Pooling").
std::string className(const std::string& type) {
  const size_t dot = type.rfind('.');
  return dot == std::string::npos ? type : type.substr(dot + 1);
}

}  // namespace

PoolingSpec readSentenceTransformersPooling(const std::string& dir) {
  PoolingSpec spec;
  const std::string modulesFile = (fs::path(dir) / "modules.json").string();
  if (!fs::exists(modulesFile)) return spec;
  const JsonValue modules = readJsonFile(modulesFile);
  if (!modules.isArray()) throw FormatError(modulesFile, "", "modules.json must be a list of modules");
  spec.source = "sentence-transformers";
  for (const JsonValue& m : modules.arr) {
    const JsonValue* type = m.get("type");
    const JsonValue* path = m.get("path");
    if (!m.isObject() || !type || !type->isString() || !path || !path->isString())
      throw FormatError(modulesFile, "", "every module needs a 'type' and a 'path' string");
    if (path->str.find("..") != std::string::npos || (!path->str.empty() && path->str[0] == '/'))
      throw FormatError(modulesFile, "", "module path '" + path->str + "' must lie inside the model directory");
    const std::string cls = className(type->str), where = (fs::path(dir) / path->str).string();
    if (cls == "Transformer") readTransformer(where, spec);
    else if (cls == "Pooling") readPooling((fs::path(where) / "config.json").string(), spec);
    else if (cls == "Normalize") spec.normalize = true;
    else
      throw FormatError(modulesFile, "", "module '" + type->str +
                                             "' is unsupported (Transformer, Pooling and Normalize are supported)");
  }
  return spec;
}

PoolingSpec ggufPooling(int64_t type, const std::string& file) {
  PoolingSpec spec;
  spec.source = "gguf";
  switch (type) {
    case 0: break;
    case 1: spec.modes = {PoolingMode::Mean}; break;
    case 2: spec.modes = {PoolingMode::Cls}; break;
    case 3: spec.modes = {PoolingMode::LastToken}; break;
    case 4: spec.rank = true; break;
    default:
      throw FormatError(file, "", "pooling_type " + std::to_string(type) + " is unsupported (0 none, 1 mean, 2 cls, 3 last, 4 rank)");
  }
  // llama.cpp normalises embeddings (Euclidean) unless told otherwise; a GGUF cannot say.
  spec.normalize = type >= 1 && type <= 3;
  return spec;
}

PoolingSpec readPoolingSpec(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return readSentenceTransformersPooling(path);
  const GgufFile g = readGguf(path, false);
  const GgufValue* arch = ggufNeed(g, "general.architecture");
  if (arch->type != GgufType::STRING) throw FormatError(path, "", "general.architecture must be a string");
  const std::string key = arch->s + ".pooling_type";
  if (!g.find(key)) return {};
  return ggufPooling(ggufInt(g, key, 0, 1 << 16), path);
}

}  // namespace prism
