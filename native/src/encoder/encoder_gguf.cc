// llama.cpp's GGUF embedding files -> EncoderConfig + TensorSet. Architectures `bert` (BERT,
// MiniLM, and XLM-RoBERTa, whose position rows the converter already cut to start at 0) and
// `nomic-bert`; hyperparameters from `<arch>.*`, the pooling from `<arch>.pooling_type`, a
// cross-encoder's labels from `<arch>.classifier.output_labels`.
#include "encoder/encoder_model.h"
#include "format_error.h"
#include "gguf.h"

namespace prism {

void readEncoderGguf(const std::string& path, EncoderConfig& cfg, TensorSet& set) {
  GgufFile g = readGguf(path, true);
  const GgufValue* archV = ggufNeed(g, "general.architecture");
  if (archV->type != GgufType::STRING) throw FormatError(path, "", "general.architecture must be a string");
  const std::string a = archV->s;
  if (a == "bert") cfg.arch = EncoderArch::Bert, cfg.family = "bert";
  else if (a == "nomic-bert") cfg.arch = EncoderArch::NomicBert, cfg.family = "nomic-bert";
  else throw FormatError(path, "", "encoder architecture '" + a + "' is unsupported (bert, nomic-bert are)");
  const std::string p = a + ".";
  cfg.format = "gguf";
  cfg.path = path;
  if (const GgufValue* n = g.find("general.name"); n && n->type == GgufType::STRING) cfg.name = n->s;
  cfg.layers = ggufInt(g, p + "block_count", 1, 1024);
  cfg.hidden = ggufInt(g, p + "embedding_length", 8, 1 << 16);
  cfg.intermediate = ggufInt(g, p + "feed_forward_length", 1, 1 << 18);
  cfg.heads = ggufInt(g, p + "attention.head_count", 1, 1024);
  if (g.find(p + "attention.head_count_kv") && ggufInt(g, p + "attention.head_count_kv", 1, 1024) != cfg.heads)
    throw FormatError(path, "", "attention.head_count_kv differs from head_count (unsupported for an encoder)");
  if (cfg.hidden % cfg.heads != 0) throw FormatError(path, "", "embedding_length is not a multiple of the head count");
  cfg.headDim = cfg.hidden / cfg.heads;
  cfg.maxPositions = ggufInt(g, p + "context_length", 1, 1 << 20);
  cfg.eps = ggufNum(g, p + "attention.layer_norm_epsilon", 1e-12, 0, 1);
  if (const GgufValue* causal = g.find(p + "attention.causal"); causal && causal->type == GgufType::BOOL && causal->u != 0)
    throw FormatError(path, "", p + "attention.causal is true: not a bidirectional encoder");
  // GGUF does not store the activation: BERT's is exact GELU (hidden_act "gelu"); llama.cpp
  // runs its tanh approximation instead.
  cfg.ffn = cfg.arch == EncoderArch::NomicBert ? EncoderFfn::SwiGlu : EncoderFfn::GeluErf;
  cfg.ropeTheta = ggufNum(g, p + "rope.freq_base", 10000.0, 1.0, 1e12);
  cfg.pooling = g.find(p + "pooling_type") ? ggufPooling(ggufInt(g, p + "pooling_type", 0, 1 << 16), path) : PoolingSpec{};
  if (const GgufValue* labels = g.find(p + "classifier.output_labels")) {
    if (labels->type != GgufType::ARRAY || labels->itemType != GgufType::STRING)
      throw FormatError(path, "", p + "classifier.output_labels must be an array of strings");
    for (const GgufValue& v : labels->items) cfg.labels.push_back(v.s);
  }
  set.file = path;
  set.maps.push_back(g.file);
  for (const GgufTensor& t : g.tensors) set.tensors[t.name] = SourceTensor{t.type, t.dims, t.data, t.bytes};
  // A rank model's head: cls.output rows are its labels (one score when none are named).
  if (auto it = set.tensors.find("cls.output.weight"); it != set.tensors.end() && it->second.dims.size() == 2) {
    cfg.numLabels = it->second.dims[1];
    if (cfg.labels.size() != static_cast<size_t>(cfg.numLabels)) {
      cfg.labels.clear();
      for (int64_t k = 0; k < cfg.numLabels; k++) cfg.labels.push_back("LABEL_" + std::to_string(k));
    }
  }
  if (cfg.pooling.rank && cfg.numLabels == 0)
    throw FormatError(path, "cls.output.weight", "pooling_type rank needs a classifier head");
  if (const GgufTensor* types = g.tensor("token_types.weight"); types && types->dims.size() == 2) cfg.typeVocab = types->dims[1];
}

}  // namespace prism
