// The config readers' shared field accessors for a vision folder's JSON files (vision_hf.cc,
// clip_hf.cc): each names the file and the key in its error.
#pragma once
#include <cmath>
#include <filesystem>
#include <string>

#include "format_error.h"
#include "hf_files.h"
#include "vision/vision_model.h"

namespace prism::vision_keys {

inline std::string stringField(const JsonValue& c, const char* key) {
  const JsonValue* v = c.get(key);
  return v && v->isString() ? v->str : "";
}

inline const JsonValue& objectField(const JsonValue& c, const std::string& file, const char* key) {
  const JsonValue* v = c.get(key);
  if (!v || !v->isObject()) throw FormatError(file, "", std::string("'") + key + "' must be an object");
  return *v;
}

inline bool boolField(const JsonValue& c, const std::string& file, const char* key, bool fallback) {
  const JsonValue* v = c.get(key);
  if (!v || v->kind == JsonValue::Kind::Null) return fallback;
  if (v->kind != JsonValue::Kind::Bool) throw FormatError(file, "", std::string("'") + key + "' must be a boolean");
  return v->b;
}

inline void channelTriple(const JsonValue& c, const std::string& file, const char* key, float* out) {
  const JsonValue* v = c.get(key);
  if (!v || v->kind == JsonValue::Kind::Null) return;
  if (v->isNumber()) {
    for (int i = 0; i < 3; i++) out[i] = static_cast<float>(v->num);
  } else if (v->isArray() && v->arr.size() == 3) {
    for (int i = 0; i < 3; i++) {
      if (!v->arr[i].isNumber()) throw FormatError(file, "", std::string("'") + key + "' must hold numbers");
      out[i] = static_cast<float>(v->arr[i].num);
    }
  } else {
    throw FormatError(file, "", std::string("'") + key + "' must be a number or 3 numbers");
  }
  if (std::string(key) == "image_std")
    for (int i = 0; i < 3; i++)
      if (!(out[i] > 0) || !std::isfinite(out[i])) throw FormatError(file, "", "'image_std' values must be positive");
}

// A SigLIP vision_config's shape (vision_hf.cc, gemma3_hf.cc), each bound checked; `d`: the
// defaults where a key is absent (nullptr: every key required).
struct SiglipDefaults {
  int64_t hidden, layers, heads, intermediate, patch, image;
};
inline void readSiglipShape(const JsonValue& v, const std::string& file, VisionConfig& cfg, const SiglipDefaults* d) {
  cfg.hidden = configInt(v, file, "hidden_size", 8, 1 << 14, d ? &d->hidden : nullptr);
  cfg.layers = configInt(v, file, "num_hidden_layers", 1, 256, d ? &d->layers : nullptr);
  cfg.heads = configInt(v, file, "num_attention_heads", 1, 256, d ? &d->heads : nullptr);
  cfg.intermediate = configInt(v, file, "intermediate_size", 1, 1 << 17, d ? &d->intermediate : nullptr);
  cfg.patch = configInt(v, file, "patch_size", 1, 64, d ? &d->patch : nullptr);
  cfg.tile = configInt(v, file, "image_size", 1, 4096, d ? &d->image : nullptr);
  int64_t three = 3;
  if (configInt(v, file, "num_channels", 1, 16, &three) != 3) throw FormatError(file, "", "vision_config.num_channels must be 3");
  cfg.eps = configNum(v, file, "layer_norm_eps", 1e-6, 0, 1);
  const std::string act = stringField(v, "hidden_act");
  if (act == "gelu_pytorch_tanh" || act == "gelu_new" || act.empty()) cfg.ffn = EncoderFfn::GeluTanh;
  else if (act == "gelu") cfg.ffn = EncoderFfn::GeluErf;
  else throw FormatError(file, "", "vision_config.hidden_act '" + act + "' is unsupported (gelu_pytorch_tanh, gelu are)");
  if (cfg.hidden % cfg.heads != 0) throw FormatError(file, "", "vision_config.hidden_size is not a multiple of num_attention_heads");
  cfg.headDim = cfg.hidden / cfg.heads;
  if (cfg.headDim % 8 != 0 || cfg.headDim > 512)
    throw FormatError(file, "", "the vision head dim " + std::to_string(cfg.headDim) + " must be a multiple of 8 and at most 512");
  if (cfg.tile % cfg.patch != 0) throw FormatError(file, "", "vision_config.image_size is not a multiple of patch_size");
}

// A folder's image-processor settings: preprocessor_config.json, or processor_config.json's
// 'image_processor' where the folder has only that. `processor` is processor_config.json
// (null where absent, at `processorFile`); `file` is where `settings` came from, for errors.
struct ProcessorFiles {
  std::string processorFile, file;
  JsonValue processor, settings;
};

inline ProcessorFiles readProcessorFiles(const std::string& dir) {
  ProcessorFiles f;
  f.processorFile = (std::filesystem::path(dir) / "processor_config.json").string();
  f.file = (std::filesystem::path(dir) / "preprocessor_config.json").string();
  if (std::filesystem::exists(f.processorFile)) f.processor = readJsonFile(f.processorFile);
  if (std::filesystem::exists(f.file)) {
    f.settings = readJsonFile(f.file);
  } else if (f.processor.isObject() && f.processor.get("image_processor")) {
    f.file = f.processorFile;
    f.settings = *f.processor.get("image_processor");
  } else {
    throw FormatError(dir, "", "no preprocessor_config.json (nor processor_config.json with 'image_processor')");
  }
  if (!f.settings.isObject()) throw FormatError(f.file, "", "the image processor's config is not a JSON object");
  return f;
}

}  // namespace prism::vision_keys
