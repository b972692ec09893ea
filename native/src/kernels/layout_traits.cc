// The traits tables (layout_traits.h): a row per weight layout, and the file-layout kernels
// per tensor type. Built with the baseline flags: it holds only the kernels' addresses.
#include "kernels/layout_traits.h"

#include <iterator>
#include <stdexcept>
#include <string>

#include "kernels/amx/amx.h"
#include "kernels/internal.h"
#include "kernels/planes.h"
#include "kernels/q4xv.h"
#include "kernels/q8xv.h"

namespace prism::kernels {

namespace {

using Avx2 = IsaKernels<Isa::Avx2>;
using Avx512 = IsaKernels<Isa::Avx512>;

// A row's kernels: the AVX2 family's, the AVX-512 family's (each by activation precision)
// and the AMX tiles'.
constexpr Kernels kernels(PrecisionKernels avx2, PrecisionKernels avx512, MatmulKernel amx = nullptr) {
  Kernels k;
  k.avx2 = avx2;
  k.avx512 = avx512;
  k.amx = amx;
  return k;
}
constexpr PrecisionKernels none() { return {nullptr, nullptr}; }
constexpr PrecisionKernels int8Only(MatmulKernel k) { return {k, nullptr}; }
constexpr PrecisionKernels int16Only(MatmulKernel k) { return {nullptr, k}; }
constexpr PrecisionKernels anyPrecision(MatmulKernel k) { return {k, k}; }

// The int8 group layouts (internal.h): both families' group kernels and, with a panel
// unpacker, the AMX tiles.
template <Layout L>
constexpr Kernels groupKernels(bool amx) {
  return kernels(int8Only(&Avx2::groups<L>), int8Only(&Avx512::groups<L>), amx ? &AmxKernels::int8<L> : nullptr);
}

template <Layout L>
constexpr Kernels planeKernels(bool amx) {
  return kernels(int8Only(&Avx2::planes<L>), int8Only(&Avx512::planes<L>), amx ? &AmxKernels::int8<L> : nullptr);
}

template <Layout L>
constexpr LayoutTraits q4gLayoutRow(const char* name, bool amx) {
  return {L, name, kQK, 1, [](TensorType, int64_t cols) { return q4gRowBytes(cols, L); },
          [](const LinearWeight& W, int64_t r, float* out) { dequantizeQ4GRow(weightData(W), W.cols, L, r, out); },
          groupKernels<L>(amx)};
}

template <Layout L>
constexpr LayoutTraits planeLayoutRow(const char* name, bool amx) {
  return {L, name, kQK, 1, [](TensorType, int64_t cols) { return planeRowBytes(cols, L); },
          [](const LinearWeight& W, int64_t r, float* out) { dequantizePlaneRow(weightData(W), W.cols, L, r, out); },
          planeKernels<L>(amx)};
}

// In Layout order (checked below): layoutTraits indexes it by the enumerator.
constexpr LayoutTraits kLayouts[] = {
    {Layout::Gguf, "GGUF", 0, 1, [](TensorType type, int64_t cols) { return typeRowBytes(type, cols); },
     [](const LinearWeight& W, int64_t r, float* out) { dequantizeRow(W.type, weightData(W), W.cols, r, out); },
     kernels(none(), none())},
    {Layout::Q4X, "Q4X", kQK, 1, [](TensorType, int64_t cols) { return q4xRowBytes(cols); },
     [](const LinearWeight& W, int64_t r, float* out) { dequantizeQ4XRow(weightData(W), W.cols, r, out); },
     kernels(int16Only(&Avx2::q4x16), none())},
    q4gLayoutRow<Layout::Q4G16>("Q4G16", true),
    q4gLayoutRow<Layout::Q4G32>("Q4G32", true),
    {Layout::Q6G, "Q6G", kQK, 1, [](TensorType, int64_t cols) { return q6gRowBytes(cols); },
     [](const LinearWeight& W, int64_t r, float* out) { dequantizeQ6GRow(weightData(W), W.cols, r, out); },
     groupKernels<Layout::Q6G>(true)},
    {Layout::Q8G, "Q8G", kQK, 1, [](TensorType, int64_t cols) { return q8gRowBytes(cols); },
     [](const LinearWeight& W, int64_t r, float* out) { dequantizeQ8GRow(weightData(W), W.cols, r, out); },
     groupKernels<Layout::Q8G>(true)},
    {Layout::Q4GK, "Q4GK", kQK, 1, [](TensorType, int64_t cols) { return q4gkRowBytes(cols); },
     [](const LinearWeight& W, int64_t r, float* out) { dequantizeQ4GKRow(weightData(W), W.cols, r, out); },
     groupKernels<Layout::Q4GK>(true)},
    q4gLayoutRow<Layout::Q4G0>("Q4G0", true),
    planeLayoutRow<Layout::Q5G0>("Q5G0", false),
    planeLayoutRow<Layout::Q5G1>("Q5G1", false),
    planeLayoutRow<Layout::Q5GK>("Q5GK", true),
    planeLayoutRow<Layout::IQ4G>("IQ4G", false),
    planeLayoutRow<Layout::IQ4GX>("IQ4GX", true),
    planeLayoutRow<Layout::Q3G>("Q3G", false),
    planeLayoutRow<Layout::Q2G>("Q2G", false),
    {Layout::Q4XV, "Q4XV", kQK, kQ4XVRows, [](TensorType, int64_t cols) { return q4xvGroupBytes(cols); },
     [](const LinearWeight& W, int64_t r, float* out) { dequantizeQ4XVRow(weightData(W), W.cols, r, out); },
     kernels(none(), int16Only(&Avx512::q4xv))},
    {Layout::Q8XV, "Q8XV", kQK, kQ8XVRows, [](TensorType, int64_t cols) { return q8xvGroupBytes(cols); },
     [](const LinearWeight& W, int64_t r, float* out) { dequantizeQ8XVRow(weightData(W), W.cols, r, out); },
     kernels(none(), int16Only(&Avx512::q8xv))},
};

constexpr bool inLayoutOrder() {
  int i = 0;
  for (const LayoutTraits& t : kLayouts)
    if (static_cast<int>(t.layout) != i++) return false;
  return i == kLayoutCount;
}
static_assert(inLayoutOrder(), "kLayouts must hold one row per Layout, in enumerator order");

// The file's own blocks (Layout::Gguf): float rows on both families whatever the precision
// (their activations stay f32); the other types with int16 activations on the AVX2 kernels
// (with int8 activations prepareLinear repacks every one of them, and it always repacks the
// 4-bit types, so those have none here: the reference would run them).
template <TensorType T>
constexpr Kernels floatKernels() {
  return kernels(anyPrecision(&Avx2::floats<T>), anyPrecision(&Avx512::floats<T>));
}
template <TensorType T>
constexpr Kernels int16BlockKernels() {
  return kernels(int16Only(&Avx2::blocks16<T>), none());
}

struct FileKernels {
  TensorType type;
  Kernels kernels;
};

constexpr FileKernels kFileKernels[] = {
    {TensorType::F32, floatKernels<TensorType::F32>()},
    {TensorType::F16, floatKernels<TensorType::F16>()},
    {TensorType::BF16, floatKernels<TensorType::BF16>()},
    {TensorType::Q8_0, int16BlockKernels<TensorType::Q8_0>()},
    {TensorType::Q6_K, int16BlockKernels<TensorType::Q6_K>()},
    {TensorType::Q5_0, int16BlockKernels<TensorType::Q5_0>()},
    {TensorType::Q5_1, int16BlockKernels<TensorType::Q5_1>()},
    {TensorType::Q5_K, int16BlockKernels<TensorType::Q5_K>()},
    {TensorType::Q3_K, int16BlockKernels<TensorType::Q3_K>()},
    {TensorType::Q2_K, int16BlockKernels<TensorType::Q2_K>()},
    {TensorType::IQ4_NL, int16BlockKernels<TensorType::IQ4_NL>()},
    {TensorType::IQ4_XS, int16BlockKernels<TensorType::IQ4_XS>()},
};

constexpr Kernels kNoKernels = kernels(none(), none());

}  // namespace

const LayoutTraits& layoutTraits(Layout layout) {
  const auto i = static_cast<size_t>(layout);
  if (i >= std::size(kLayouts)) throw std::invalid_argument("unknown weight layout " + std::to_string(i));
  return kLayouts[i];
}

const Kernels& kernelsFor(const LinearWeight& W) {
  if (W.layout != Layout::Gguf) return layoutTraits(W.layout).kernels;
  for (const FileKernels& f : kFileKernels)
    if (f.type == W.type) return f.kernels;
  return kNoKernels;
}

size_t layoutBytes(Layout layout, TensorType type, int64_t rows, int64_t cols) {
  const LayoutTraits& t = layoutTraits(layout);
  const int64_t groups = (rows + t.groupRows - 1) / t.groupRows;
  return t.groupBytes(type, cols) * static_cast<size_t>(groups);
}

}  // namespace prism::kernels
