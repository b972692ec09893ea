// Storage-type tables: block geometry and names of the GGML types the kernels compute with.
#include <stdexcept>
#include <string>

#include "kernels/internal.h"

namespace prism {

using namespace kernels;

namespace {

struct TypeInfo {
  TensorType type;
  const char* name;
  int64_t blockValues;
  size_t blockBytes;
};

constexpr TypeInfo kTypes[] = {
    {TensorType::F32, "F32", 1, 4},
    {TensorType::F16, "F16", 1, 2},
    {TensorType::BF16, "BF16", 1, 2},
    {TensorType::Q8_0, "Q8_0", kQK, kQ8_0Bytes},
    {TensorType::Q4_0, "Q4_0", kQK, kQ4_0Bytes},
    {TensorType::Q4_1, "Q4_1", kQK, kQ4_1Bytes},
    {TensorType::Q4_K, "Q4_K", kQKK, kQ4_KBytes},
    {TensorType::Q6_K, "Q6_K", kQKK, kQ6_KBytes},
};

static_assert(kQ4_KBytes == 144 && kQ6_KBytes == 210 && kQ4_1Bytes == 20 && kQ8_0Bytes == 34);

const TypeInfo& info(TensorType t) {
  for (const auto& i : kTypes)
    if (i.type == t) return i;
  throw std::invalid_argument("unsupported tensor type " + std::to_string(static_cast<uint32_t>(t)));
}

}  // namespace

int64_t typeBlockValues(TensorType t) { return info(t).blockValues; }
size_t typeBlockBytes(TensorType t) { return info(t).blockBytes; }
const char* typeName(TensorType t) { return info(t).name; }

size_t typeRowBytes(TensorType t, int64_t cols) {
  const TypeInfo& i = info(t);
  if (cols < 0 || cols % i.blockValues != 0) {
    throw std::invalid_argument(std::string("row of ") + i.name + " must have a multiple of " +
                                std::to_string(i.blockValues) + " values, got " + std::to_string(cols));
  }
  return static_cast<size_t>(cols / i.blockValues) * i.blockBytes;
}

bool typeFromName(const std::string& name, TensorType* out) {
  for (const auto& i : kTypes) {
    if (name == i.name) {
      *out = i.type;
      return true;
    }
  }
  return false;
}

bool typeSupported(uint32_t ggmlType) {
  for (const auto& i : kTypes)
    if (static_cast<uint32_t>(i.type) == ggmlType) return true;
  return false;
}

}  // namespace prism
