// The config readers' shared field accessors for a vision folder's JSON files (vision_hf.cc,
// clip_hf.cc): each names the file and the key in its error.
#pragma once
#include <cmath>
#include <filesystem>
#include <string>

#include "format_error.h"
#include "hf_files.h"

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
