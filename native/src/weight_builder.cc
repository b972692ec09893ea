#include "weight_builder.h"

#include <cmath>
#include <cstring>

#include "format_error.h"
#include "gguf.h"

namespace prism {

double linearBytes(const LinearGroup& g) {
  double n = 0;
  for (const auto& p : g.parts)
    n += p.w.bytes ? static_cast<double>(p.w.bytes) : static_cast<double>(typeRowBytes(p.w.type, g.inFeatures) * p.w.rows);
  return n;
}

std::string WeightBuilder::display(const std::string& name) const {
  auto it = set_.originalNames.find(name);
  return it == set_.originalNames.end() ? name : it->second;
}

void WeightBuilder::fail(const std::string& name, const std::string& reason) const {
  throw FormatError(set_.file, display(name), reason);
}

std::string WeightBuilder::shapeText(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t k = 0; k < d.size(); k++) s += (k ? ", " : "") + std::to_string(d[k]);
  return s + "]";
}

const SourceTensor& WeightBuilder::get(const std::string& name, const std::vector<int64_t>& dims) const {
  auto it = set_.tensors.find(name);
  if (it == set_.tensors.end()) fail(name, "missing tensor required by the " + arch_ + " architecture");
  const SourceTensor& t = it->second;
  if (t.dims != dims)
    fail(name, "shape " + shapeText(t.dims) + " does not match the architecture's " + shapeText(dims) +
                   " (innermost dimension first)");
  if (!typeSupported(t.type)) fail(name, "unsupported tensor type " + ggmlTypeName(t.type));
  return t;
}

std::vector<float> WeightBuilder::vec(const std::string& name, int64_t n) {
  const SourceTensor& t = get(name, {n});
  TensorType type = static_cast<TensorType>(t.type);
  if (type != TensorType::F32 && type != TensorType::F16 && type != TensorType::BF16)
    fail(name, "norm/bias vectors must be F32, F16 or BF16, not " + ggmlTypeName(t.type));
  std::vector<float> out(n);
  dequantizeRow(type, t.data, n, 0, out.data());
  for (float v : out)
    if (!std::isfinite(v)) fail(name, "holds a non-finite value");
  tally_.weightBytes += static_cast<double>(t.bytes);
  return out;
}

std::vector<float> WeightBuilder::table(const std::string& name, int64_t cols, int64_t rows) {
  const SourceTensor& t = get(name, {cols, rows});
  std::vector<float> out(static_cast<size_t>(cols * rows));
  for (int64_t r = 0; r < rows; r++) dequantizeRow(static_cast<TensorType>(t.type), t.data, cols, r, &out[r * cols]);
  for (float v : out)
    if (!std::isfinite(v)) fail(name, "holds a non-finite value");
  return out;
}

LinearGroup WeightBuilder::linear(const std::vector<std::pair<std::string, int64_t>>& parts, int64_t cols) {
  LinearGroup g;
  g.inFeatures = cols;
  std::vector<const SourceTensor*> ts;
  bool sameType = true;
  for (const auto& [name, rows] : parts) {
    ts.push_back(&get(name, {cols, rows}));
    sameType = sameType && ts.back()->type == ts.front()->type;
    g.outFeatures += rows;
  }
  tally_.maxLinearCols = std::max(tally_.maxLinearCols, cols);
  TensorType type = static_cast<TensorType>(ts.front()->type);
  try {
    if (prep_ == WeightPreparation::FileBytes) {
      int64_t off = 0;
      for (size_t k = 0; k < parts.size(); k++) {
        LinearWeight w;
        w.type = static_cast<TensorType>(ts[k]->type);
        w.rows = parts[k].second;
        w.cols = cols;
        w.data = ts[k]->data;
        w.bytes = typeRowBytes(w.type, cols) * static_cast<size_t>(w.rows);
        g.parts.push_back({std::move(w), off});
        off += parts[k].second;
      }
    } else if (parts.size() > 1 && sameType) {
      std::vector<uint8_t>& buf = tally_.ownedBytes.emplace_back();
      size_t total = 0;
      for (auto* t : ts) total += t->bytes;
      buf.resize(total);
      size_t at = 0;
      for (auto* t : ts) {
        std::memcpy(buf.data() + at, t->data, t->bytes);
        at += t->bytes;
      }
      // One precision for every layer and batch shape (so prefill and decode agree).
      g.parts.push_back({prepareLinear(type, buf.data(), g.outFeatures, cols, activations_), 0});
    } else {
      int64_t off = 0;
      for (size_t k = 0; k < parts.size(); k++) {
        g.parts.push_back({prepareLinear(static_cast<TensorType>(ts[k]->type), ts[k]->data, parts[k].second, cols, activations_), off});
        off += parts[k].second;
      }
    }
  } catch (const std::exception& e) {
    fail(parts.front().first, std::string("cannot prepare weights: ") + e.what());
  }
  tally_.weightBytes += linearBytes(g);
  return g;
}

}  // namespace prism
