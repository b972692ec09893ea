// GGUF (v2/v3) reader over a memory-mapped file. Every byte read is bounds-checked; any
// inconsistency throws FormatError naming the file, the tensor (if any) and the reason.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mapped_file.h"

namespace prism {

enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};

// One metadata value. Scalars live in the numeric fields; arrays in `items`.
struct GgufValue {
  GgufType type = GgufType::U8;
  uint64_t u = 0;  // unsigned integers and bool
  int64_t i = 0;   // signed integers
  double f = 0;    // floats
  std::string s;
  GgufType itemType = GgufType::U8;  // for arrays
  std::vector<GgufValue> items;

  bool isInteger() const;
  bool isNumber() const { return isInteger() || type == GgufType::F32 || type == GgufType::F64; }
  double asDouble() const;  // any numeric type
};

struct GgufTensor {
  std::string name;
  uint32_t type = 0;              // GGML type id as stored
  std::vector<int64_t> dims;      // ne[0] (innermost) first
  uint64_t offset = 0;            // relative to the data section
  const uint8_t* data = nullptr;  // into the map
  size_t bytes = 0;
  int64_t elements() const;
};

struct GgufFile {
  std::shared_ptr<MappedFile> file;
  uint32_t version = 0;
  uint64_t alignment = 32;
  std::vector<std::pair<std::string, GgufValue>> kvs;  // file order
  std::vector<GgufTensor> tensors;
  std::map<std::string, size_t> tensorIndex;

  const GgufValue* find(const std::string& key) const;
  const GgufTensor* tensor(const std::string& name) const;
};

// Name of a GGML type id ("Q4_K", ...), or "type#N" when unknown.
std::string ggmlTypeName(uint32_t type);

// Parses the header and metadata; with `withTensors` also the tensor infos, checking that
// every tensor's type is known, its data lies inside the file, is aligned and overlaps no
// other tensor.
GgufFile readGguf(const std::string& path, bool withTensors);

// Typed metadata reads whose errors name the key and the rule (gguf_model.cc):
// the key or FormatError; an integer in [min, max]; a number in [min, max] or fallback.
const GgufValue* ggufNeed(const GgufFile& g, const std::string& key);
int64_t ggufInt(const GgufFile& g, const std::string& key, int64_t min, int64_t max);
double ggufNum(const GgufFile& g, const std::string& key, double fallback, double min, double max);

}  // namespace prism
