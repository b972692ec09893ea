// A small, strict JSON reader for model metadata (config.json, safetensors headers,
// safetensors index files). Inputs come from files, so it bounds every read, limits the
// nesting depth and reports the byte offset of the first error.
#pragma once
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace prism {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<JsonValue> arr;
  std::vector<std::pair<std::string, JsonValue>> obj;  // file order

  const JsonValue* get(const std::string& key) const;  // objects only; nullptr if absent
  bool isNumber() const { return kind == Kind::Number; }
  bool isString() const { return kind == Kind::String; }
  bool isObject() const { return kind == Kind::Object; }
  bool isArray() const { return kind == Kind::Array; }
};

// Throws std::runtime_error("<reason> at byte N").
JsonValue parseJson(std::string_view text);

}  // namespace prism
