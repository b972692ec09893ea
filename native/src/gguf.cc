#include "gguf.h"

#include <algorithm>
#include <cstring>

#include "format_error.h"
#include "kernels/kernels.h"

namespace prism {
namespace {

// GGML's type table for the types we can size (block values, block bytes). Types outside
// it are reported by name when we know it, so the error says what the file holds.
struct GgmlTypeInfo {
  const char* name;
  int64_t blockValues;
  size_t blockBytes;
};

const GgmlTypeInfo* ggmlTypeInfo(uint32_t t) {
  static const GgmlTypeInfo table[] = {
      {"F32", 1, 4},       {"F16", 1, 2},       {"Q4_0", 32, 18},    {"Q4_1", 32, 20},
      {"Q4_2", 0, 0},      {"Q4_3", 0, 0},      {"Q5_0", 32, 22},    {"Q5_1", 32, 24},
      {"Q8_0", 32, 34},    {"Q8_1", 32, 36},    {"Q2_K", 256, 84},   {"Q3_K", 256, 110},
      {"Q4_K", 256, 144},  {"Q5_K", 256, 176},  {"Q6_K", 256, 210},  {"Q8_K", 256, 292},
      {"IQ2_XXS", 0, 0},   {"IQ2_XS", 0, 0},    {"IQ3_XXS", 0, 0},   {"IQ1_S", 0, 0},
      {"IQ4_NL", 32, 18},  {"IQ3_S", 0, 0},     {"IQ2_S", 0, 0},     {"IQ4_XS", 256, 136},
      {"I8", 1, 1},        {"I16", 1, 2},       {"I32", 1, 4},       {"I64", 1, 8},
      {"F64", 1, 8},       {"IQ1_M", 0, 0},     {"BF16", 1, 2},
  };
  if (t < sizeof(table) / sizeof(table[0])) return &table[t];
  return nullptr;
}

class Reader {
 public:
  Reader(const MappedFile& f) : f_(f) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return f_.size() - pos_; }

  void need(size_t n, const char* what) {
    if (n > remaining())
      fail("truncated file: " + std::string(what) + " needs " + std::to_string(n) + " bytes at offset " +
           std::to_string(pos_) + ", only " + std::to_string(remaining()) + " left");
  }
  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, f_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string readString(const char* what) {
    uint64_t len = read<uint64_t>(what);
    if (len > remaining())
      fail("string length " + std::to_string(len) + " for " + what + " at offset " + std::to_string(pos_ - 8) +
           " runs past the end of the file");
    std::string s(reinterpret_cast<const char*>(f_.data() + pos_), len);
    pos_ += len;
    return s;
  }
  [[noreturn]] void fail(const std::string& reason, const std::string& tensor = "") {
    throw FormatError(f_.path(), tensor, reason);
  }

 private:
  const MappedFile& f_;
  size_t pos_ = 0;
};

size_t scalarSize(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    default: return 0;
  }
}

GgufValue readValue(Reader& r, GgufType type, const std::string& key, int depth) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::U8: v.u = r.read<uint8_t>("u8 value"); break;
    case GgufType::I8: v.i = r.read<int8_t>("i8 value"); break;
    case GgufType::U16: v.u = r.read<uint16_t>("u16 value"); break;
    case GgufType::I16: v.i = r.read<int16_t>("i16 value"); break;
    case GgufType::U32: v.u = r.read<uint32_t>("u32 value"); break;
    case GgufType::I32: v.i = r.read<int32_t>("i32 value"); break;
    case GgufType::U64: v.u = r.read<uint64_t>("u64 value"); break;
    case GgufType::I64: v.i = r.read<int64_t>("i64 value"); break;
    case GgufType::F32: v.f = r.read<float>("f32 value"); break;
    case GgufType::F64: v.f = r.read<double>("f64 value"); break;
    case GgufType::BOOL: {
      uint8_t b = r.read<uint8_t>("bool value");
      if (b > 1) r.fail("metadata '" + key + "': bool value " + std::to_string(b) + " is neither 0 nor 1");
      v.u = b;
      break;
    }
    case GgufType::STRING: v.s = r.readString("string value"); break;
    case GgufType::ARRAY: {
      if (depth >= 2) r.fail("metadata '" + key + "': arrays nested deeper than 2 levels");
      uint32_t it = r.read<uint32_t>("array item type");
      if (it > static_cast<uint32_t>(GgufType::F64))
        r.fail("metadata '" + key + "': unknown array item type " + std::to_string(it));
      uint64_t count = r.read<uint64_t>("array length");
      // Every item takes at least one byte (strings and arrays at least 8), so a count
      // larger than what is left of the file is corrupt; checked before reserving memory.
      size_t minItem = scalarSize(static_cast<GgufType>(it));
      if (minItem == 0) minItem = 8;
      if (count > r.remaining() / minItem)
        r.fail("metadata '" + key + "': array length " + std::to_string(count) + " runs past the end of the file");
      v.itemType = static_cast<GgufType>(it);
      v.items.reserve(count);
      for (uint64_t k = 0; k < count; k++) v.items.push_back(readValue(r, v.itemType, key, depth + 1));
      break;
    }
    default:
      r.fail("metadata '" + key + "': unknown value type " + std::to_string(static_cast<uint32_t>(type)));
  }
  return v;
}

}  // namespace

bool GgufValue::isInteger() const {
  switch (type) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16: case GgufType::U32:
    case GgufType::I32: case GgufType::U64: case GgufType::I64: return true;
    default: return false;
  }
}

double GgufValue::asDouble() const {
  switch (type) {
    case GgufType::U8: case GgufType::U16: case GgufType::U32: case GgufType::U64: case GgufType::BOOL:
      return static_cast<double>(u);
    case GgufType::I8: case GgufType::I16: case GgufType::I32: case GgufType::I64: return static_cast<double>(i);
    case GgufType::F32: case GgufType::F64: return f;
    default: return 0;
  }
}

int64_t GgufTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  for (const auto& [k, v] : kvs)
    if (k == key) return &v;
  return nullptr;
}

const GgufTensor* GgufFile::tensor(const std::string& name) const {
  auto it = tensorIndex.find(name);
  return it == tensorIndex.end() ? nullptr : &tensors[it->second];
}

std::string ggmlTypeName(uint32_t type) {
  const GgmlTypeInfo* info = ggmlTypeInfo(type);
  return info ? info->name : "type#" + std::to_string(type);
}

GgufFile readGguf(const std::string& path, bool withTensors) {
  GgufFile g;
  g.file = std::make_shared<MappedFile>(path);
  Reader r(*g.file);

  uint32_t magic = r.read<uint32_t>("magic");
  if (magic != 0x46554747u) r.fail("not a GGUF file (bad magic)");
  g.version = r.read<uint32_t>("version");
  if (g.version != 2 && g.version != 3)
    r.fail("unsupported GGUF version " + std::to_string(g.version) + " (2 and 3 are supported)");
  uint64_t tensorCount = r.read<uint64_t>("tensor count");
  uint64_t kvCount = r.read<uint64_t>("metadata count");
  // A metadata entry is at least 8 (key length) + 4 (type) + 1 bytes; a tensor info at
  // least 8 + 4 + 8 + 4 + 8.
  if (kvCount > r.remaining() / 13) r.fail("metadata count " + std::to_string(kvCount) + " exceeds the file size");
  if (tensorCount > r.remaining() / 32) r.fail("tensor count " + std::to_string(tensorCount) + " exceeds the file size");

  g.kvs.reserve(kvCount);
  for (uint64_t k = 0; k < kvCount; k++) {
    std::string key = r.readString("metadata key");
    uint32_t type = r.read<uint32_t>("metadata value type");
    if (type > static_cast<uint32_t>(GgufType::F64))
      r.fail("metadata '" + key + "': unknown value type " + std::to_string(type));
    g.kvs.emplace_back(key, readValue(r, static_cast<GgufType>(type), key, 0));
  }
  if (const GgufValue* a = g.find("general.alignment")) {
    double d = a->isInteger() ? a->asDouble() : 0;
    uint64_t al = d >= 1 && d <= 65536 ? static_cast<uint64_t>(d) : 0;
    if (al == 0 || (al & (al - 1)) != 0) r.fail("general.alignment must be a power of two between 1 and 65536");
    g.alignment = al;
  }
  if (!withTensors) return g;

  g.tensors.reserve(tensorCount);
  for (uint64_t k = 0; k < tensorCount; k++) {
    GgufTensor t;
    t.name = r.readString("tensor name");
    if (t.name.empty() || t.name.size() > 256) r.fail("tensor #" + std::to_string(k) + " has an invalid name length");
    uint32_t nd = r.read<uint32_t>("tensor dimension count");
    if (nd < 1 || nd > 4) r.fail("dimension count " + std::to_string(nd) + " is not in 1..4", t.name);
    uint64_t total = 1;
    for (uint32_t d = 0; d < nd; d++) {
      uint64_t ne = r.read<uint64_t>("tensor dimension");
      if (ne < 1 || ne > (1ull << 40)) r.fail("dimension " + std::to_string(d) + " = " + std::to_string(ne) + " is out of range", t.name);
      if (total > (1ull << 42) / ne) r.fail("element count overflows", t.name);
      total *= ne;
      t.dims.push_back(static_cast<int64_t>(ne));
    }
    t.type = r.read<uint32_t>("tensor type");
    t.offset = r.read<uint64_t>("tensor data offset");
    const GgmlTypeInfo* info = ggmlTypeInfo(t.type);
    if (!info || info->blockValues == 0) r.fail("unknown or unsupported tensor type " + ggmlTypeName(t.type), t.name);
    if (t.dims[0] % info->blockValues != 0)
      r.fail("row length " + std::to_string(t.dims[0]) + " is not a multiple of the " + info->name + " block size", t.name);
    t.bytes = static_cast<size_t>(total / info->blockValues) * info->blockBytes;
    if (g.tensorIndex.count(t.name)) r.fail("duplicate tensor name", t.name);
    g.tensorIndex[t.name] = g.tensors.size();
    g.tensors.push_back(std::move(t));
  }
  uint64_t dataStart = (r.pos() + g.alignment - 1) / g.alignment * g.alignment;
  uint64_t fileSize = g.file->size();
  if (dataStart > fileSize && !g.tensors.empty()) r.fail("truncated file: tensor data section is missing");

  // Bounds, alignment and overlap of every tensor's bytes.
  std::vector<size_t> order(g.tensors.size());
  for (size_t k = 0; k < order.size(); k++) order[k] = k;
  for (auto& t : g.tensors) {
    if (t.offset % g.alignment != 0) r.fail("data offset " + std::to_string(t.offset) + " is not aligned to " + std::to_string(g.alignment), t.name);
    if (t.offset > fileSize - dataStart || t.bytes > fileSize - dataStart - t.offset)
      r.fail("data [" + std::to_string(dataStart + t.offset) + ", +" + std::to_string(t.bytes) + ") runs past the end of the file (" +
                 std::to_string(fileSize) + " bytes): truncated or corrupt",
             t.name);
    t.data = g.file->data() + dataStart + t.offset;
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return g.tensors[a].offset < g.tensors[b].offset; });
  for (size_t k = 1; k < order.size(); k++) {
    const GgufTensor& prev = g.tensors[order[k - 1]];
    const GgufTensor& cur = g.tensors[order[k]];
    if (prev.offset + prev.bytes > cur.offset) r.fail("data overlaps tensor '" + prev.name + "'", cur.name);
  }
  return g;
}

}  // namespace prism
