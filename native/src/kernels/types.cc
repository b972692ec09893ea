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
    {TensorType::Q5_0, "Q5_0", kQK, kQ5_0Bytes},
    {TensorType::Q5_1, "Q5_1", kQK, kQ5_1Bytes},
    {TensorType::Q5_K, "Q5_K", kQKK, kQ5_KBytes},
    {TensorType::Q3_K, "Q3_K", kQKK, kQ3_KBytes},
    {TensorType::Q2_K, "Q2_K", kQKK, kQ2_KBytes},
    {TensorType::IQ4_NL, "IQ4_NL", kQK, kIQ4_NLBytes},
    {TensorType::IQ4_XS, "IQ4_XS", kQKK, kIQ4_XSBytes},
};

static_assert(kQ4_KBytes == 144 && kQ6_KBytes == 210 && kQ4_1Bytes == 20 && kQ8_0Bytes == 34);
// GGML's block_q5_0, q5_1, q5_K, q3_K, q2_K, iq4_nl, iq4_xs (in GGML's ggml-common.h).
static_assert(kQ5_0Bytes == 22 && kQ5_1Bytes == 24 && kQ5_KBytes == 176 && kQ3_KBytes == 110 && kQ2_KBytes == 84 &&
              kIQ4_NLBytes == 18 && kIQ4_XSBytes == 136);

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
