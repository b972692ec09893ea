// Builds the Model from a format reader's ModelConfig + TensorSet: checks every tensor's
// presence, shape and type against the architecture, converts norm/bias vectors to f32,
// and prepares linear weights for the kernels (fusing Q/K/V and gate/up when they share a
// storage type, so a layer makes 4 matmul calls instead of 7).
#include <cmath>
#include <cstring>
#include <filesystem>

#include "format_error.h"
#include "gguf.h"
#include "model.h"

namespace prism {

const char* archName(Arch a) {
  switch (a) {
    case Arch::Llama: return "llama";
    case Arch::Qwen2: return "qwen2";
    case Arch::Qwen3: return "qwen3";
    case Arch::Qwen3Moe: return "qwen3moe";
    case Arch::Gemma3: return "gemma3";
    case Arch::Phi3: return "phi3";
  }
  return "?";
}

namespace {

// Weight bytes one use of a linear layer reads (the roofline's unit).
double bytesOf(const LinearGroup& g) {
  double n = 0;
  for (const auto& p : g.parts)
    n += p.w.bytes ? static_cast<double>(p.w.bytes) : static_cast<double>(typeRowBytes(p.w.type, g.inFeatures) * p.w.rows);
  return n;
}

class Builder {
 public:
  Builder(Model& m, TensorSet& set, WeightPreparation prep) : m_(m), set_(set), prep_(prep) {}

  std::string display(const std::string& name) const {
    auto it = set_.originalNames.find(name);
    return it == set_.originalNames.end() ? name : it->second;
  }
  [[noreturn]] void fail(const std::string& name, const std::string& reason) const {
    throw FormatError(set_.file, display(name), reason);
  }
  static std::string shapeText(const std::vector<int64_t>& d) {
    std::string s = "[";
    for (size_t k = 0; k < d.size(); k++) s += (k ? ", " : "") + std::to_string(d[k]);
    return s + "]";
  }

  const SourceTensor& get(const std::string& name, std::vector<int64_t> dims) const {
    auto it = set_.tensors.find(name);
    if (it == set_.tensors.end()) fail(name, "missing tensor required by the " + std::string(archName(m_.cfg.arch)) + " architecture");
    const SourceTensor& t = it->second;
    if (t.dims != dims)
      fail(name, "shape " + shapeText(t.dims) + " does not match the architecture's " + shapeText(dims) +
                     " (innermost dimension first)");
    if (!typeSupported(t.type)) fail(name, "unsupported tensor type " + ggmlTypeName(t.type));
    return t;
  }
  bool has(const std::string& name) const { return set_.tensors.count(name) != 0; }

  // An RMSNorm weight, with the format's offset added (Gemma's HF (1 + w) norms).
  std::vector<float> norm(const std::string& name, int64_t n) {
    std::vector<float> v = vec(name, n);
    for (float& x : v) x += m_.cfg.normOffset;
    return v;
  }

  // GGUF stores a layer's experts as one 3-D tensor [cols, rows, experts] (innermost first);
  // each expert's [rows × cols] matrix is a contiguous slice of it. The slices join the set
  // as `<base>.<e>.weight`, the names Hugging Face per-expert tensors are read under.
  void splitExperts(const std::string& base, int64_t rows, int64_t cols, int64_t experts) {
    const std::string name = base + "_exps.weight";
    auto it = set_.tensors.find(name);
    if (it == set_.tensors.end()) return;  // per-expert tensors (safetensors), or missing
    const SourceTensor& t = get(name, {cols, rows, experts});
    const size_t per = typeRowBytes(static_cast<TensorType>(t.type), cols) * static_cast<size_t>(rows);
    if (per * static_cast<size_t>(experts) != t.bytes) fail(name, "byte size does not match its shape and type");
    for (int64_t e = 0; e < experts; e++) {
      SourceTensor s = t;
      s.dims = {cols, rows};
      s.data = t.data + per * e;
      s.bytes = per;
      const std::string sliceName = base + "." + std::to_string(e) + ".weight";
      set_.tensors[sliceName] = s;
      set_.originalNames[sliceName] = display(name) + "[expert " + std::to_string(e) + "]";
    }
  }

  std::vector<float> vec(const std::string& name, int64_t n) {
    const SourceTensor& t = get(name, {n});
    TensorType type = static_cast<TensorType>(t.type);
    if (type != TensorType::F32 && type != TensorType::F16 && type != TensorType::BF16)
      fail(name, "norm/bias vectors must be F32, F16 or BF16, not " + ggmlTypeName(t.type));
    std::vector<float> out(n);
    dequantizeRow(type, t.data, n, 0, out.data());
    for (float v : out)
      if (!std::isfinite(v)) fail(name, "holds a non-finite value");
    m_.weightBytes += static_cast<double>(t.bytes);
    return out;
  }

  // One linear layer from several tensors [rows_i × cols], outputs side by side.
  LinearGroup linear(const std::vector<std::pair<std::string, int64_t>>& parts, int64_t cols) {
    LinearGroup g;
    g.inFeatures = cols;
    std::vector<const SourceTensor*> ts;
    bool sameType = true;
    for (const auto& [name, rows] : parts) {
      ts.push_back(&get(name, {cols, rows}));
      sameType = sameType && ts.back()->type == ts.front()->type;
      g.outFeatures += rows;
    }
    m_.maxLinearCols = std::max(m_.maxLinearCols, cols);
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
        std::vector<uint8_t>& buf = m_.ownedBytes.emplace_back();
        size_t total = 0;
        for (auto* t : ts) total += t->bytes;
        buf.resize(total);
        size_t at = 0;
        for (auto* t : ts) {
          std::memcpy(buf.data() + at, t->data, t->bytes);
          at += t->bytes;
        }
        // One precision for every layer and batch shape (so prefill and decode agree).
        g.parts.push_back({prepareLinear(type, buf.data(), g.outFeatures, cols, m_.activations), 0});
      } else {
        int64_t off = 0;
        for (size_t k = 0; k < parts.size(); k++) {
          g.parts.push_back({prepareLinear(static_cast<TensorType>(ts[k]->type), ts[k]->data, parts[k].second, cols, m_.activations), off});
          off += parts[k].second;
        }
      }
    } catch (const std::exception& e) {
      fail(parts.front().first, std::string("cannot prepare weights: ") + e.what());
    }
    m_.weightBytes += bytesOf(g);
    return g;
  }

 private:
  Model& m_;
  TensorSet& set_;
  WeightPreparation prep_;
};

// The activation rounding of the quantized matmuls (kernels.h, ActivationPrecision), per
// model. Int16 below hidden 1024: there a step is dominated by per-token overhead, not the
// matmuls, so the 2x integer work of int16 costs little, and int8 flips ~3% of SmolLM2-135M's
// top-1 picks against the float reference (int16: none; test/numerics.test.ts shows both).
// Int8 from hidden 1024 up (1B and larger): the matmuls are the step, and int8 with per-32
// scales (llama.cpp's own scheme) decodes ~2x and prefills ~3.5x faster than int16 at 1B
// shapes (docs/benchmarks.md, size suite). The switch PRISM_ACTIVATIONS=int8|int16 overrides
// the rule (switches.h, read at each load: the numerics test measures both paths on the same
// models in one process).
ActivationPrecision chooseActivations(const ModelConfig& c, const std::string& file) {
  std::string error;
  switch (switchChoice(Switch::Activations, 2, &error)) {  // int8|int16|auto
    case 0:
      return ActivationPrecision::Int8;
    case 1:
      return ActivationPrecision::Int16;
    default:
      if (!error.empty()) throw FormatError(file, "", error);
      return c.hidden >= 1024 ? ActivationPrecision::Int8 : ActivationPrecision::Int16;
  }
}

// Checks the architecture-level settings the readers filled in (windows, rotary, experts).
void checkConfig(ModelConfig& c, const std::string& file) {
  auto bad = [&](const std::string& why) { throw FormatError(file, "", why); };
  if (c.headDim % 8 != 0 || c.headDim > 512)
    bad("head dim " + std::to_string(c.headDim) + " must be a multiple of 8 and at most 512");
  if (c.heads % c.kvHeads != 0)
    bad("attention head count " + std::to_string(c.heads) + " is not a multiple of the KV head count " +
        std::to_string(c.kvHeads));
  if (c.ropeDim == 0) c.ropeDim = c.headDim;
  if (c.ropeDim % 2 != 0 || c.ropeDim > c.headDim)
    bad("rotary dimension count " + std::to_string(c.ropeDim) + " must be even and at most the head dim " +
        std::to_string(c.headDim));
  for (const std::vector<float>* f : {&c.ropeFreqFactors, &c.localRopeSpec.freqFactors})
    if (!f->empty() && static_cast<int64_t>(f->size()) != c.ropeDim / 2)
      bad("rotary frequency factors: " + std::to_string(f->size()) + " given, the rotary dimension needs " +
          std::to_string(c.ropeDim / 2));
  if (c.layerWindow.empty()) c.layerWindow.assign(c.layers, 0);
  if (static_cast<int64_t>(c.layerWindow.size()) != c.layers)
    bad("sliding-window layer pattern has " + std::to_string(c.layerWindow.size()) + " entries for " +
        std::to_string(c.layers) + " layers");
  for (int64_t w : c.layerWindow)
    if (w < 0) bad("sliding window " + std::to_string(w) + " must be positive");
  if (c.experts > 0) {
    if (c.expertsUsed < 1 || c.expertsUsed > c.experts)
      bad("experts used per token (" + std::to_string(c.expertsUsed) + ") must be in 1.." + std::to_string(c.experts));
    if (c.expertIntermediate < 1) bad("expert FFN width must be positive");
  }
}

void build(Model& m, TensorSet& set, const ProgressFn& progress, WeightPreparation prep) {
  ModelConfig& c = m.cfg;
  checkConfig(c, set.file);
  m.activations = chooseActivations(c, set.file);
  Builder b(m, set, prep);
  auto emb = set.tensors.find("token_embd.weight");
  if (emb == set.tensors.end()) b.fail("token_embd.weight", "missing token embedding");
  if (emb->second.dims.size() != 2 || emb->second.dims[0] != c.hidden)
    b.fail("token_embd.weight", "shape " + Builder::shapeText(emb->second.dims) + " does not match hidden size " +
                                    std::to_string(c.hidden));
  c.vocab = emb->second.dims[1];
  b.get("token_embd.weight", {c.hidden, c.vocab});
  m.embedType = static_cast<TensorType>(emb->second.type);
  m.embedData = emb->second.data;

  for (const auto& [name, t] : set.tensors) m.tensorTypes[ggmlTypeName(t.type)]++;

  const int64_t D = c.hidden, hd = c.headDim, qDim = c.heads * hd, kvDim = c.kvHeads * hd;
  m.layers.resize(c.layers);
  for (int64_t l = 0; l < c.layers; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& L = m.layers[l];
    L.attnNorm = b.norm(p + "attn_norm.weight", D);
    L.ffnNorm = b.norm(p + "ffn_norm.weight", D);
    if (c.postNorms) {
      L.postAttnNorm = b.norm(p + "post_attention_norm.weight", D);
      L.postFfnNorm = b.norm(p + "post_ffw_norm.weight", D);
    }
    // Phi-3 stores Q, K and V as one fused matrix; the others as three.
    if (c.arch == Arch::Phi3) L.qkv = b.linear({{p + "attn_qkv.weight", qDim + 2 * kvDim}}, D);
    else L.qkv = b.linear({{p + "attn_q.weight", qDim}, {p + "attn_k.weight", kvDim}, {p + "attn_v.weight", kvDim}}, D);
    if (c.arch == Arch::Qwen2) {
      auto q = b.vec(p + "attn_q.bias", qDim), k = b.vec(p + "attn_k.bias", kvDim), v = b.vec(p + "attn_v.bias", kvDim);
      L.qkvBias = q;
      L.qkvBias.insert(L.qkvBias.end(), k.begin(), k.end());
      L.qkvBias.insert(L.qkvBias.end(), v.begin(), v.end());
    } else if (b.has(p + "attn_q.bias")) {
      b.fail(p + "attn_q.bias", std::string("unexpected bias for the ") + archName(c.arch) + " architecture");
    }
    if (c.arch == Arch::Qwen3 || c.arch == Arch::Qwen3Moe || c.arch == Arch::Gemma3) {
      L.qNorm = b.norm(p + "attn_q_norm.weight", hd);
      L.kNorm = b.norm(p + "attn_k_norm.weight", hd);
    }
    L.o = b.linear({{p + "attn_output.weight", D}}, qDim);
    if (c.experts > 0) {
      const int64_t E = c.experts, I = c.expertIntermediate;
      L.moe.router = b.linear({{p + "ffn_gate_inp.weight", E}}, D);
      b.splitExperts(p + "ffn_gate", I, D, E);
      b.splitExperts(p + "ffn_up", I, D, E);
      b.splitExperts(p + "ffn_down", D, I, E);
      for (int64_t e = 0; e < E; e++) {
        const std::string x = "." + std::to_string(e) + ".weight";
        L.moe.gateUp.push_back(b.linear({{p + "ffn_gate" + x, I}, {p + "ffn_up" + x, I}}, D));
        L.moe.down.push_back(b.linear({{p + "ffn_down" + x, D}}, I));
      }
    } else if (c.arch == Arch::Phi3) {
      // Phi-3's fused gate-up: one [2I × D] matrix, gate rows first.
      L.gateUp = b.linear({{p + "ffn_up.weight", 2 * c.intermediate}}, D);
      L.down = b.linear({{p + "ffn_down.weight", D}}, c.intermediate);
    } else {
      L.gateUp = b.linear({{p + "ffn_gate.weight", c.intermediate}, {p + "ffn_up.weight", c.intermediate}}, D);
      L.down = b.linear({{p + "ffn_down.weight", D}}, c.intermediate);
    }
    if (progress) progress(static_cast<double>(l + 1) / static_cast<double>(c.layers + 1));
  }
  m.outputNorm = b.norm("output_norm.weight", D);
  c.tiedEmbeddings = !b.has("output.weight");
  m.output = b.linear({{c.tiedEmbeddings ? "token_embd.weight" : "output.weight", c.vocab}}, D);
  m.residentWeightBytes = m.weightBytes;
  // The roofline's bytes per token: only the experts a token uses are read (plus the router).
  // Each layer counts its own expert size: a Q4_K_M file keeps some layers' down experts in
  // Q6_K (llama.cpp's use_more_bits), so layer 0's size is not every layer's.
  for (const LayerWeights& L : m.layers) {
    if (L.moe.gateUp.empty() || L.moe.down.empty()) continue;
    const double perExpert = bytesOf(L.moe.gateUp[0]) + bytesOf(L.moe.down[0]);
    m.weightBytes -= perExpert * static_cast<double>(c.experts - c.expertsUsed);
  }
  if (progress) progress(1.0);
}

}  // namespace

std::shared_ptr<Model> loadModelFromPath(const std::string& path, const ProgressFn& progress, WeightPreparation prep) {
  auto m = std::make_shared<Model>();
  m->switches = switchReport();
  m->weightArena = std::make_unique<WeightArena>();
  const WeightArenaScope arenaScope(m->weightArena.get());
  TensorSet set;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) readSafetensorsModel(path, m->cfg, set);
  else readGgufModel(path, m->cfg, set);
  m->maps = set.maps;
  build(*m, set, progress, prep);
  for (const auto& map : m->maps) map->releaseResidentPages();
  return m;
}

}  // namespace prism
