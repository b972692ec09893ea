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

// The types whose fast GEMV stages x as int8 with a scale per 32 values (dp4a).
bool int8Activations(TensorType t) {
  return t == TensorType::Q8_0 || t == TensorType::Q4_0 || t == TensorType::Q4_1 || t == TensorType::Q4_K;
}

// ‖y − ref‖ over √Σ ‖W_r‖²·‖x_t‖²: the error against the products' size rather than the
// outputs' (random rows and x are nearly orthogonal, so an output is ~1/√cols of its product
// of norms and the outputs' own norm magnifies any rounding of x that much).
double scaledError(const std::vector<float>& y, const std::vector<double>& ref, const Matrix& w, const std::vector<float>& x,
                   int64_t rows, int64_t cols, int64_t n) {
  double num = 0, den = 0;
  for (int64_t t = 0; t < n; t++) {
    double xx = 0;
    for (int64_t c = 0; c < cols; c++) xx += static_cast<double>(x[static_cast<size_t>(t * cols + c)]) * x[static_cast<size_t>(t * cols + c)];
    for (int64_t r = 0; r < rows; r++) {
      double ww = 0;
      for (int64_t c = 0; c < cols; c++) ww += static_cast<double>(w.values[static_cast<size_t>(r * cols + c)]) * w.values[static_cast<size_t>(r * cols + c)];
      const size_t i = static_cast<size_t>(t * rows + r);
      num += (y[i] - ref[i]) * (y[i] - ref[i]);
      den += ww * xx;
    }
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// `scaled`: the bound holds scaledError, else ‖y − ref‖ / ‖ref‖.
Result checkMatmul(const Options& o, const char* name, const std::vector<int64_t>& ns, int path, double bound,
                   bool (*takes)(TensorType) = nullptr, bool scaled = false) {
  Result r{name, 0, 0, bound, ""};
  std::mt19937_64 rng(o.seed * 7919 + static_cast<uint64_t>(path));
  for (TensorType type : kTypes) {
    if (takes && !takes(type)) continue;
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
        r.observe(scaled ? scaledError(y, ref, w, x, s.rows, s.cols, n) : relError(y, ref), label(type, s, n));
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

// The fast GEMV (paths 3: its own split choice, 4: three splits along K, each launched twice
// so the split counters are seen reset), by scaledError: with f32 activations it is the
// GEMV's arithmetic in another order (f32 rounding, ~1e-7); with int8 activations (a scale
// per 32 values, max/127) their rounding, ~0.6% of an activation's size, sets the bound.
std::vector<Result> checkMatmulFast(const Options& o) {
  const std::vector<int64_t> ns{1, 2, 5, 8};
  auto floats = [](TensorType t) { return !int8Activations(t); };
  return {checkMatmul(o, "matmul fast GEMV (f32 x)", ns, 3, 1e-6, floats, true),
          checkMatmul(o, "matmul fast GEMV split-K (f32 x)", ns, 4, 1e-6, floats, true),
          checkMatmul(o, "matmul fast GEMV (int8 x, dp4a)", ns, 3, 3e-3, int8Activations, true),
          checkMatmul(o, "matmul fast GEMV split-K (int8 x, dp4a)", ns, 4, 3e-3, int8Activations, true)};
}

// bf16 operands (activations and weights rounded to 8 bits of mantissa), f32 accumulation;
// the weights decoded in three bands of rows, as prefill decodes a large matrix.
Result checkMatmulGemm(const Options& o) {
  return checkMatmul(o, "matmul GEMM (prefill, bf16, row bands)", o.quick ? std::vector<int64_t>{9} : std::vector<int64_t>{9, 64, 333},
                     2, 1.5e-2);
}

}  // namespace prism::cudacheck
