// The traits table of the weight layouts (layout.h): one row per layout, as ggml's
// type_traits has one per tensor type, with everything the rest of the kernels ask of a
// layout — its name, block and row-group shape, its row stride rule, its reference
// dequantizer and its kernels per ISA family. dispatch.cc runs a matmul by looking the
// weight's kernels up here (kernelsFor) instead of testing its layout; the file's own blocks
// (Layout::Gguf) take their kernels from a second, per-tensor-type table.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/isa_kernels.h"
#include "kernels/kernels.h"
#include "kernels/layout.h"

namespace prism::kernels {

// One family's kernel of a weight, by the weight's activation precision. Null: the family has
// none for it, and the next lower family's runs (the reference last).
struct PrecisionKernels {
  MatmulKernel int8 = nullptr;
  MatmulKernel int16 = nullptr;
  MatmulKernel of(ActivationPrecision p) const { return p == ActivationPrecision::Int16 ? int16 : int8; }
};

struct Kernels {
  PrecisionKernels avx2, avx512;
  // Int8 steps of kAmxMinTokens tokens or more on the AMX-INT8 tiles (amx/amx.h), where the
  // AVX-512 family is selected and AMX is on; null: the layout has no panel unpacker.
  MatmulKernel amx = nullptr;
};

struct LayoutTraits {
  Layout layout;
  const char* name;
  // Values per block, the reach of one scale (Layout::Gguf: 0, the tensor type's block).
  int64_t blockValues;
  // Rows stored together (1: each row's bytes are contiguous; 16: Q4XV / Q8XV records
  // interleave 16 rows, the last group padded) and the bytes of one such group of rows of
  // `cols` values: the row stride rule. Layout::Gguf's bytes are its tensor type's.
  int64_t groupRows;
  size_t (*groupBytes)(TensorType type, int64_t cols);
  // Row `row` of W as floats: the reference path (matmulReference) and the repacks' oracle.
  void (*dequantizeRow)(const LinearWeight& W, int64_t row, float* out);
  // Layout::Gguf: none here (kernelsFor takes the tensor type's).
  Kernels kernels;
};

const LayoutTraits& layoutTraits(Layout layout);

// The kernels that run W: its layout's row, or for the file's own blocks its tensor type's.
const Kernels& kernelsFor(const LinearWeight& W);

// Bytes of a rows × cols weight of `type` in `layout` by the row stride rule: what a repack
// into it makes (prepareLinear checks that it did).
size_t layoutBytes(Layout layout, TensorType type, int64_t rows, int64_t cols);

// Bytes from one row to the next, for layouts whose rows are contiguous (groupRows 1).
inline size_t layoutRowBytes(const LinearWeight& W) { return layoutTraits(W.layout).groupBytes(W.type, W.cols); }

}  // namespace prism::kernels
