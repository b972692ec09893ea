// Builds the EncoderModel from a reader's EncoderConfig + TensorSet: every tensor's presence,
// shape and type checked against the architecture (weight_builder.h), embedding tables and
// norm/bias vectors as f32, Q/K/V (and SwiGLU's gate/up) fused into one matrix each.
#include <cmath>
#include <filesystem>

#include "encoder/encoder_model.h"
#include "format_error.h"
#include "gguf.h"
#include "weight_builder.h"

namespace prism {
namespace {

void checkConfig(const EncoderConfig& c, const std::string& file) {
  auto bad = [&](const std::string& why) { throw FormatError(file, "", why); };
  if (c.headDim % 8 != 0 || c.headDim > 512)
    bad("head dim " + std::to_string(c.headDim) + " must be a multiple of 8 and at most 512");
  if (c.maxTokens() < 1) bad("the position table has no row past the position offset");
  if (c.numLabels > 0 && !c.pooling.modes.empty() && c.pooling.source == "sentence-transformers")
    bad("a sequence classifier with a sentence-transformers Pooling module is unsupported");
}

std::vector<int64_t> dimsOf(const TensorSet& set, const std::string& name) {
  auto it = set.tensors.find(name);
  return it == set.tensors.end() ? std::vector<int64_t>{} : it->second.dims;
}

void build(EncoderModel& m, TensorSet& set, const ProgressFn& progress) {
  EncoderConfig& c = m.cfg;
  checkConfig(c, set.file);
  m.activations = chooseActivations(c.hidden, set.file);
  WeightBuilder b(set, c.family, WeightPreparation::Cpu, m.activations, {m.weightBytes, m.maxLinearCols, m.ownedBytes});
  const int64_t D = c.hidden, I = c.intermediate;

  const std::vector<int64_t> emb = dimsOf(set, "token_embd.weight");
  if (emb.size() != 2 || emb[0] != D) b.get("token_embd.weight", {D, c.vocab > 0 ? c.vocab : 1});  // names the problem
  c.vocab = emb[1];
  const SourceTensor& e = b.get("token_embd.weight", {D, c.vocab});
  m.embedType = static_cast<TensorType>(e.type);
  m.embedData = e.data;
  for (const auto& [name, t] : set.tensors) m.tensorTypes[ggmlTypeName(t.type)]++;

  if (c.arch == EncoderArch::Bert) {
    const std::vector<int64_t> pos = dimsOf(set, "position_embd.weight");
    if (pos.size() == 2 && pos[0] == D && pos[1] < c.maxPositions) c.maxPositions = pos[1];  // a GGUF cut to its context
    m.positions = b.table("position_embd.weight", D, c.maxPositions);
  }
  if (b.has("token_types.weight")) {
    const std::vector<int64_t> tt = dimsOf(set, "token_types.weight");
    if (tt.size() == 2) c.typeVocab = tt[1];
    m.tokenTypes = b.table("token_types.weight", D, c.typeVocab);
  } else {
    c.typeVocab = 0;
  }
  m.embNormW = b.vec("token_embd_norm.weight", D);
  m.embNormB = b.vec("token_embd_norm.bias", D);

  m.layers.resize(c.layers);
  for (int64_t l = 0; l < c.layers; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    EncoderLayer& L = m.layers[l];
    auto bias = [&](const std::string& name, int64_t n) { return b.has(name) ? b.vec(name, n) : std::vector<float>{}; };
    if (b.has(p + "attn_qkv.weight")) {
      L.qkv = b.linear({{p + "attn_qkv.weight", 3 * D}}, D);
      L.qkvBias = bias(p + "attn_qkv.bias", 3 * D);
    } else {
      L.qkv = b.linear({{p + "attn_q.weight", D}, {p + "attn_k.weight", D}, {p + "attn_v.weight", D}}, D);
      if (b.has(p + "attn_q.bias")) {
        L.qkvBias = b.vec(p + "attn_q.bias", D);
        for (const char* part : {"attn_k.bias", "attn_v.bias"}) {
          const std::vector<float> v = b.vec(p + part, D);
          L.qkvBias.insert(L.qkvBias.end(), v.begin(), v.end());
        }
      }
    }
    L.o = b.linear({{p + "attn_output.weight", D}}, D);
    L.oBias = bias(p + "attn_output.bias", D);
    L.attnNormW = b.vec(p + "attn_output_norm.weight", D);
    L.attnNormB = b.vec(p + "attn_output_norm.bias", D);
    if (c.ffn == EncoderFfn::SwiGlu) {
      L.up = b.linear({{p + "ffn_gate.weight", I}, {p + "ffn_up.weight", I}}, D);
    } else {
      L.up = b.linear({{p + "ffn_up.weight", I}}, D);
      L.upBias = bias(p + "ffn_up.bias", I);
    }
    L.down = b.linear({{p + "ffn_down.weight", D}}, I);
    L.downBias = bias(p + "ffn_down.bias", D);
    L.outNormW = b.vec(p + "layer_output_norm.weight", D);
    L.outNormB = b.vec(p + "layer_output_norm.bias", D);
    if (progress) progress(static_cast<double>(l + 1) / static_cast<double>(c.layers + 1));
  }
  if (c.numLabels > 0) {
    if (b.has("cls.weight")) {
      m.clsDense = b.linear({{"cls.weight", D}}, D);
      m.clsDenseBias = b.vec("cls.bias", D);
    }
    m.clsOut = b.linear({{"cls.output.weight", c.numLabels}}, D);
    m.clsOutBias = b.has("cls.output.bias") ? b.vec("cls.output.bias", c.numLabels) : std::vector<float>(c.numLabels, 0.0f);
  }
  if (progress) progress(1.0);
}

}  // namespace

std::shared_ptr<EncoderModel> loadEncoderFromPath(const std::string& path, const ProgressFn& progress) {
  auto m = std::make_shared<EncoderModel>();
  m->weightArena = std::make_unique<WeightArena>();
  const WeightArenaScope arenaScope(m->weightArena.get());
  TensorSet set;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) readEncoderHf(path, m->cfg, set);
  else readEncoderGguf(path, m->cfg, set);
  m->maps = set.maps;
  build(*m, set, progress);
  for (const auto& map : m->maps) map->releaseResidentPages();
  return m;
}

}  // namespace prism
