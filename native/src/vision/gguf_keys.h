// The mmproj readers' shared metadata accessors (vision_gguf.cc, clip_gguf.cc): each names the
// file and the key in its error.
#pragma once
#include <cmath>
#include <exception>
#include <string>

#include "format_error.h"
#include "gguf.h"

namespace prism::vision_keys {

inline std::string stringKey(const GgufFile& g, const std::string& key) {
  const GgufValue* v = g.find(key);
  return v && v->type == GgufType::STRING ? v->s : "";
}

inline bool boolKey(const GgufFile& g, const std::string& key, bool fallback) {
  const GgufValue* v = g.find(key);
  if (!v) return fallback;
  if (v->type != GgufType::BOOL) throw FormatError(g.file->path(), "", "metadata '" + key + "' must be a boolean");
  return v->u != 0;
}

inline void channelTriple(const GgufFile& g, const std::string& key, float* out, bool positive) {
  const GgufValue* v = g.find(key);
  if (!v) return;
  if (v->type != GgufType::ARRAY || v->items.size() != 3)
    throw FormatError(g.file->path(), "", "metadata '" + key + "' must be an array of 3 numbers");
  for (int i = 0; i < 3; i++) {
    const GgufValue& x = v->items[i];
    if (!x.isNumber() || !std::isfinite(x.asDouble()) || (positive && !(x.asDouble() > 0)))
      throw FormatError(g.file->path(), "", "metadata '" + key + "' must hold " + (positive ? "positive" : "finite") + " numbers");
    out[i] = static_cast<float>(x.asDouble());
  }
}

// Whether `path` is an mmproj GGUF (general.architecture 'clip') of clip.projector_type
// `projector`; never throws (the loader names what is wrong with a file).
inline bool isClipGgufOf(const std::string& path, const char* projector) {
  try {
    const GgufFile g = readGguf(path, false);
    return stringKey(g, "general.architecture") == "clip" && stringKey(g, "clip.projector_type") == projector;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace prism::vision_keys
