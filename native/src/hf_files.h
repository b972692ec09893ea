// The files of a Hugging Face model directory, read for both model kinds (decoders:
// safetensors_model.cc; encoders: encoder/encoder_hf.cc): bounded JSON files, typed config
// fields whose errors name the key and the rule, and the safetensors tensors under the
// caller's names.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "json.h"
#include "model.h"

namespace prism {

// A JSON file of at most 64 MiB; FormatError(path) when unreadable or invalid.
JsonValue readJsonFile(const std::string& path);

// An integer config field in [min, max]; absent or null: *fallback, or FormatError when none.
int64_t configInt(const JsonValue& c, const std::string& path, const char* key, int64_t min, int64_t max,
                  const int64_t* fallback = nullptr);
// A number config field in [min, max]; absent or null: fallback.
double configNum(const JsonValue& c, const std::string& path, const char* key, double fallback, double min, double max);

// HF tensor name -> the name it joins the TensorSet under ("" = not used by the model).
using TensorRename = std::function<std::string(const std::string&)>;
// Maps one .safetensors file and adds its used tensors to `set` (bounds-checked header,
// offsets, sizes and overlaps; F32, F16 and BF16).
void readSafetensorsFile(const std::string& path, const TensorRename& rename, TensorSet& set);
// The directory's weight files: the index's weight_map, else every *.safetensors in it.
std::set<std::string> safetensorsFiles(const std::string& dir);

}  // namespace prism
