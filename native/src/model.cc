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
#include "weight_builder.h"

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

// The decoder's tensors: the shared fetching (weight_builder.h) plus what only decoders have,
// RMSNorm weights with the format's offset and GGUF's stacked expert tensors.
class Builder : public WeightBuilder {
 public:
  Builder(Model& m, TensorSet& set, WeightPreparation prep)
      : WeightBuilder(set, archName(m.cfg.arch), prep, m.activations, {m.weightBytes, m.maxLinearCols, m.ownedBytes}),
        m_(m) {}

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

 private:
  Model& m_;
};

}  // namespace

// The activation rounding of the quantized matmuls (kernels.h, ActivationPrecision), per
// model. Int16 below hidden 1024: there a step is dominated by per-token overhead, not the
// matmuls, so the 2x integer work of int16 costs little, and int8 flips ~3% of SmolLM2-135M's
// top-1 picks against the float reference (int16: none; test/numerics.test.ts shows both).
// Int8 from hidden 1024 up (1B and larger): the matmuls are the step, and int8 with per-32
// scales (llama.cpp's own scheme) decodes ~2x and prefills ~3.5x faster than int16 at 1B
// shapes (docs/benchmarks.md, size suite). The switch PRISM_ACTIVATIONS=int8|int16 overrides
// the rule (switches.h, read at each load: the numerics test measures both paths on the same
// models in one process).
ActivationPrecision chooseActivations(int64_t hidden, const std::string& file) {
  std::string error;
  switch (switchChoice(Switch::Activations, 2, &error)) {  // int8|int16|auto
    case 0:
      return ActivationPrecision::Int8;
    case 1:
      return ActivationPrecision::Int16;
    default:
      if (!error.empty()) throw FormatError(file, "", error);
      return hidden >= 1024 ? ActivationPrecision::Int8 : ActivationPrecision::Int16;
  }
}

namespace {

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
  m.activations = chooseActivations(c.hidden, set.file);
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
    const double perExpert = linearBytes(L.moe.gateUp[0]) + linearBytes(L.moe.down[0]);
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
