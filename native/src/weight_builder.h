// Fetches a model's tensors from a TensorSet (GGUF names) with their expected shapes and
// turns them into what the kernels take: f32 vectors (norms, biases) and prepared linear
// weights (several tensors with one storage type fused into one matrix). A wrong file fails
// here, naming the tensor as the file spells it. The decoder builder (model.cc) and the
// encoder builder (encoder/encoder_build.cc) both use it.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernels.h"
#include "model.h"

namespace prism {

// What building adds up: the bytes of every weight read (the roofline's unit), the widest
// matmul input (sizes the kernel scratch) and the fused copies (stable addresses).
struct WeightTally {
  double& weightBytes;
  int64_t& maxLinearCols;
  std::deque<std::vector<uint8_t>>& ownedBytes;
};

class WeightBuilder {
 public:
  // `arch`: the architecture's name, for "missing tensor required by the <arch> architecture".
  WeightBuilder(TensorSet& set, std::string arch, WeightPreparation prep, ActivationPrecision activations, WeightTally tally)
      : set_(set), arch_(std::move(arch)), prep_(prep), activations_(activations), tally_(tally) {}

  std::string display(const std::string& name) const;
  [[noreturn]] void fail(const std::string& name, const std::string& reason) const;
  static std::string shapeText(const std::vector<int64_t>& d);

  // The tensor `name` of exactly `dims` (innermost first) in a supported type.
  const SourceTensor& get(const std::string& name, const std::vector<int64_t>& dims) const;
  bool has(const std::string& name) const { return set_.tensors.count(name) != 0; }
  // A norm or bias vector of n values (F32, F16 or BF16 in the file), as f32; all finite.
  std::vector<float> vec(const std::string& name, int64_t n);
  // A [rows × cols] table (position / token-type embeddings) as f32 rows; all finite.
  std::vector<float> table(const std::string& name, int64_t cols, int64_t rows);
  // One linear layer from several tensors [rows_i × cols], outputs side by side.
  LinearGroup linear(const std::vector<std::pair<std::string, int64_t>>& parts, int64_t cols);

 protected:
  TensorSet& set_;

 private:
  std::string arch_;
  WeightPreparation prep_;
  ActivationPrecision activations_;
  WeightTally tally_;
};

// Weight bytes one use of a linear layer reads (the roofline's unit).
double linearBytes(const LinearGroup& g);

}  // namespace prism
