// Weight decoding and the two matmul paths of every weight type against the CPU reference
// (quantizeReference / dequantizeReference of native/src/kernels/reference.cc).
#include <string>

#include "check.h"
#include "kernels/kernels.h"

namespace prism::cudacheck {
namespace {

constexpr TensorType kTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,   TensorType::Q8_0,
                                 TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0,   TensorType::Q5_1,
                                 TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K,   TensorType::Q5_K,
                                 TensorType::Q6_K, TensorType::IQ4_NL, TensorType::IQ4_XS};

struct Shape {
  int64_t rows, cols;
};

std::vector<Shape> shapes(const Options& o) {
  if (o.quick) return {{1, 256}, {37, 512}};
  return {{1, 256}, {37, 512}, {130, 768}, {257, 2048}, {4096, 4096}};
}

// A random matrix in `type`'s file bytes, and its exact decoding by the CPU reference.
struct Matrix {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

Matrix makeMatrix(std::mt19937_64& rng, TensorType type, int64_t rows, int64_t cols) {
  std::vector<float> v = randomVector(rng, static_cast<size_t>(rows * cols), 0.05f);
  // Some rows with a larger scale and an offset, so per-block scales and mins vary.
  for (int64_t r = 0; r < rows; r += 3)
    for (int64_t c = 0; c < cols; c++) v[static_cast<size_t>(r * cols + c)] = v[static_cast<size_t>(r * cols + c)] * 7 + 0.02f;
  Matrix m;
  m.bytes.resize(typeRowBytes(type, cols) * static_cast<size_t>(rows));
  quantizeReference(type, v.data(), rows, cols, m.bytes.data());
  m.values.resize(v.size());
  dequantizeReference(type, m.bytes.data(), rows, cols, m.values.data());
  return m;
}

std::string label(TensorType type, const Shape& s, int64_t n) {
  return std::string(typeName(type)) + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols) + " n=" + std::to_string(n);
}

Result checkMatmul(const Options& o, const char* name, const std::vector<int64_t>& ns, int path, double bound) {
  Result r{name, 0, 0, bound, ""};
  std::mt19937_64 rng(o.seed * 7919 + static_cast<uint64_t>(path));
  for (TensorType type : kTypes) {
    for (const Shape& s : shapes(o)) {
      if (o.quick && type != TensorType::Q4_K && type != TensorType::Q6_K && s.rows > 100) continue;
      const Matrix w = makeMatrix(rng, type, s.rows, s.cols);
      for (int64_t n : ns) {
        if (s.rows * s.cols * n > (o.quick ? 400000 : 200000000)) continue;
        const std::vector<float> x = randomVector(rng, static_cast<size_t>(n * s.cols), 1.0f);
        std::vector<double> ref(static_cast<size_t>(n * s.rows));
        for (int64_t t = 0; t < n; t++)
          for (int64_t row = 0; row < s.rows; row++) {
            double acc = 0;
            const float* wr = &w.values[static_cast<size_t>(row * s.cols)];
            const float* xt = &x[static_cast<size_t>(t * s.cols)];
            for (int64_t c = 0; c < s.cols; c++) acc += static_cast<double>(wr[c]) * xt[c];
            ref[static_cast<size_t>(t * s.rows + row)] = acc;
          }
        std::vector<float> y(ref.size());
        o.lib->check(o.lib->pc_check_matmul(o.device, static_cast<int32_t>(type), w.bytes.data(), s.rows, s.cols,
                                            x.data(), n, y.data(), path),
                     "pc_check_matmul");
        r.observe(relError(y, ref), label(type, s, n));
      }
    }
  }
  return r;
}

}  // namespace

Result checkDequantize(const Options& o) {
  // Exact up to the rounding of a fused multiply-add (q·d + m): relative 1e-6 of the values.
  Result r{"dequantize (all types)", 0, 0, 1e-6, ""};
  std::mt19937_64 rng(o.seed * 104729);
  for (TensorType type : kTypes)
    for (const Shape& s : shapes(o)) {
      if (s.rows * s.cols > 1 << 22) continue;
      const Matrix w = makeMatrix(rng, type, s.rows, s.cols);
      std::vector<float> out(w.values.size());
      o.lib->check(o.lib->pc_check_dequantize(o.device, static_cast<int32_t>(type), w.bytes.data(), s.rows, s.cols,
                                              out.data()),
                   "pc_check_dequantize");
      std::vector<double> ref(w.values.begin(), w.values.end());
      r.observe(relError(out, ref), label(type, s, 0));
    }
  return r;
}

// f32 activations and accumulation: only the order of additions differs from the double sum.
Result checkMatmulGemv(const Options& o) { return checkMatmul(o, "matmul GEMV (decode, f32)", {1, 3, 8}, 1, 2e-5); }

// bf16 operands (activations and weights rounded to 8 bits of mantissa), f32 accumulation;
// the weights decoded in three bands of rows, as prefill decodes a large matrix.
Result checkMatmulGemm(const Options& o) {
  return checkMatmul(o, "matmul GEMM (prefill, bf16, row bands)", o.quick ? std::vector<int64_t>{9} : std::vector<int64_t>{9, 64, 333},
                     2, 1.5e-2);
}

}  // namespace prism::cudacheck
