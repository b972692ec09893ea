// An mmproj GGUF of LLaVA-1.5 as llama.cpp writes it (its legacy image-encoder converter:
// general.architecture "clip", clip.projector_type "mlp") -> VisionModel: the clip.vision.*
// hyperparameters, the mean / std, clip.vision.feature_layer, the v.* CLIP tensors and the
// projector's mm.0.* / mm.2.*, renamed to the folder reader's names so that one builder
// (clip_build.cc) checks and prepares both. What the file means is what llama.cpp's mtmd does
// with it: without feature_layer the encoder runs all stored blocks but the last (the converter
// stores the layers up to the feature layer), the class token's row is dropped, clip.use_gelu
// false is quick_gelu, and the projector's GELU is ggml's (the tanh form). Images are
// preprocessed as the folder's CLIPImageProcessor does (resize the shortest edge to
// image_size, bicubic, center crop), so the pair gives the folder's features. The token ids come
// from the text GGUF's vocabulary (only <image>).
#include <regex>

#include "format_error.h"
#include "gguf.h"
#include "vision/gguf_keys.h"
#include "vision/vision_model.h"

namespace prism {
namespace {
using namespace vision_keys;

void readLlavaClipConfig(const GgufFile& g, VisionConfig& cfg, ImageProcessorConfig& p) {
  const std::string& path = g.file->path();
  const std::string v = "clip.vision.";
  if (!boolKey(g, "clip.has_vision_encoder", false)) throw FormatError(path, "", "clip.has_vision_encoder must be true");
  for (const char* key : {"clip.vision.image_grid_pinpoints", "clip.vision.image_crop_resolution"})
    if (g.find(key)) throw FormatError(path, "", std::string("metadata '") + key + "' (LLaVA-1.6 anyres tiling) is unsupported; LLaVA-1.5 is");
  if (const std::string merge = stringKey(g, v + "mm_patch_merge_type"); !merge.empty() && merge != "flat")
    throw FormatError(path, "", "clip.vision.mm_patch_merge_type '" + merge + "' is unsupported (flat is)");
  cfg.family = VisionFamily::Llava;
  cfg.modelType = "llava";
  cfg.hidden = ggufInt(g, v + "embedding_length", 8, 1 << 14);
  cfg.layers = ggufInt(g, v + "block_count", 1, 256);
  cfg.heads = ggufInt(g, v + "attention.head_count", 1, 256);
  cfg.intermediate = ggufInt(g, v + "feed_forward_length", 1, 1 << 17);
  cfg.patch = ggufInt(g, v + "patch_size", 1, 64);
  cfg.tile = ggufInt(g, v + "image_size", 1, 4096);
  cfg.eps = ggufNum(g, v + "attention.layer_norm_epsilon", 1e-5, 0, 1);
  if (boolKey(g, "clip.use_silu", false)) throw FormatError(path, "", "clip.use_silu is unsupported for a CLIP encoder");
  if (boolKey(g, "clip.use_gelu", false)) cfg.ffn = EncoderFfn::GeluTanh;  // ggml's GELU
  else cfg.quickGelu = true;
  if (cfg.hidden % cfg.heads != 0) throw FormatError(path, "", "embedding_length is not a multiple of attention.head_count");
  cfg.headDim = cfg.hidden / cfg.heads;
  if (cfg.headDim % 8 != 0 || cfg.headDim > 512)
    throw FormatError(path, "", "the vision head dim " + std::to_string(cfg.headDim) + " must be a multiple of 8 and at most 512");
  if (cfg.tile % cfg.patch != 0) throw FormatError(path, "", "clip.vision.image_size is not a multiple of patch_size");
  cfg.featureLayers = cfg.layers - 1;
  if (const GgufValue* fl = g.find(v + "feature_layer")) {
    if (fl->type != GgufType::ARRAY || fl->items.size() != 1 || !fl->items[0].isNumber())
      throw FormatError(path, "", "clip.vision.feature_layer must hold one layer (several, stacked, are unsupported)");
    const double k = fl->items[0].asDouble();
    if (!(k >= 0 && k <= static_cast<double>(cfg.layers)) || k != static_cast<double>(static_cast<int64_t>(k)))
      throw FormatError(path, "", "clip.vision.feature_layer must be an integer in [0, block_count " + std::to_string(cfg.layers) + "]");
    cfg.featureLayers = static_cast<int64_t>(k);
  }
  cfg.keepClassToken = false;
  cfg.projectorFfn = EncoderFfn::GeluTanh;
  cfg.projectorBias = true;
  cfg.path = path;
  cfg.name = stringKey(g, "general.name");
  if (cfg.name.empty()) cfg.name = path.substr(path.find_last_of('/') + 1);

  p.doImageSplitting = false;
  p.tileEdge = p.longestEdge = p.shortestEdge = p.cropHeight = p.cropWidth = cfg.tile;
  p.resample = 3;
  const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f}, stdev[3] = {0.26862954f, 0.26130258f, 0.27577711f};
  std::copy(mean, mean + 3, p.mean);
  std::copy(stdev, stdev + 3, p.std);
  channelTriple(g, v + "image_mean", p.mean, false);
  channelTriple(g, v + "image_std", p.std, true);
}

// mmproj name -> the folder reader's name ("" = none of LLaVA's). `swapFfn`: the legacy
// converter's names, where ffn_down holds fc1 and ffn_up fc2 (llama.cpp swaps them back by shape).
std::string internalName(const std::string& n, bool swapFfn) {
  static const std::regex layer(R"(^v\.blk\.(\d+)\.(attn_q|attn_k|attn_v|attn_out|ln1|ln2|ffn_up|ffn_down)\.(weight|bias)$)");
  std::smatch m;
  if (std::regex_match(n, m, layer)) {
    static const std::map<std::string, std::string> part = {
        {"attn_q", "self_attn.q_proj"}, {"attn_k", "self_attn.k_proj"}, {"attn_v", "self_attn.v_proj"},
        {"attn_out", "self_attn.out_proj"}, {"ln1", "layer_norm1"}, {"ln2", "layer_norm2"}};
    const std::string p = m[2].str();
    const std::string mapped = p == "ffn_up" ? (swapFfn ? "mlp.fc2" : "mlp.fc1")
                               : p == "ffn_down" ? (swapFfn ? "mlp.fc1" : "mlp.fc2")
                                                 : part.at(p);
    return "encoder.layers." + m[1].str() + "." + mapped + "." + m[3].str();
  }
  static const std::map<std::string, std::string> whole = {
      {"v.class_embd", "embeddings.class_embedding"},
      {"v.patch_embd.weight", "embeddings.patch_embedding.weight"},
      {"v.patch_embd.bias", "embeddings.patch_embedding.bias"},
      {"v.position_embd.weight", "embeddings.position_embedding.weight"},
      {"v.pre_ln.weight", "pre_layrnorm.weight"},
      {"v.pre_ln.bias", "pre_layrnorm.bias"},
      {"v.post_ln.weight", "post_layernorm.weight"},  // read by nothing: the features precede it
      {"v.post_ln.bias", "post_layernorm.bias"},
      {"mm.0.weight", "projector.linear_1.weight"},
      {"mm.0.bias", "projector.linear_1.bias"},
      {"mm.2.weight", "projector.linear_2.weight"},
      {"mm.2.bias", "projector.linear_2.bias"}};
  auto it = whole.find(n);
  return it == whole.end() ? "" : it->second;
}

const GgufTensor* findTensor(const GgufFile& g, const std::string& name) {
  for (const GgufTensor& t : g.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace

bool isLlavaGguf(const std::string& path) { return isClipGgufOf(path, "mlp"); }

std::shared_ptr<VisionModel> loadLlavaGguf(const std::string& path, const std::string& textModel) {
  auto m = std::make_shared<VisionModel>();
  m->weightArena = std::make_unique<WeightArena>();
  const WeightArenaScope arenaScope(m->weightArena.get());
  const GgufFile g = readGguf(path, true);
  readLlavaClipConfig(g, m->cfg, m->processor);
  // The text model's width is the projector's output: linear_2's rows.
  const GgufTensor* out = findTensor(g, "mm.2.weight");
  if (!out || out->dims.size() != 2) throw FormatError(path, "mm.2.weight", "missing, or not a matrix (the MLP projector's second linear)");
  if (out->dims[1] < 8 || out->dims[1] > (1 << 16)) throw FormatError(path, "mm.2.weight", "has an output width outside [8, 65536]");
  m->cfg.textHidden = out->dims[1];
  m->processor.imageSeqLen = m->cfg.tokensPerTile();
  // The legacy names are recognised by shape, as llama.cpp does: ffn_down whose input is the
  // embedding width is fc1.
  const GgufTensor* down = findTensor(g, "v.blk.0.ffn_down.weight");
  const bool swapFfn = down && !down->dims.empty() && down->dims[0] == m->cfg.hidden;
  m->tokens.rowColIds.assign(36, -1);
  if (!textModel.empty()) {
    forEachTextToken(textModel, [&](const std::string& s, int64_t id) {
      if (s == m->tokens.image) m->tokens.imageId = id;
    });
    if (m->tokens.imageId < 0) throw FormatError(textModel, "", "the text model's vocabulary has no '" + m->tokens.image + "' token");
    m->cfg.imageTokenId = m->tokens.imageId;
  }
  buildMmprojWeights(
      *m, g, [swapFfn](const std::string& n) { return internalName(n, swapFfn); }, "a LLaVA CLIP encoder or MLP projector",
      buildClipWeights);
  return m;
}

}  // namespace prism
