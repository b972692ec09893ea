// An mmproj GGUF as llama.cpp's converter writes SmolVLM / Idefics3 (convert_hf_to_gguf.py
// --mmproj: general.architecture "clip", clip.projector_type "idefics3") -> VisionModel: the
// clip.vision.* hyperparameters, the image processor's mean / std / longest edge, the v.*
// encoder tensors and mm.model.fc.weight, renamed to the folder reader's names so that one
// builder (vision_build.cc) checks and prepares both. The file carries no token ids: they come
// from the text GGUF's vocabulary when the caller names it (llama.cpp takes both files too).
#include <cmath>
#include <regex>

#include "format_error.h"
#include "gguf.h"
#include "vision/gguf_keys.h"
#include "vision/vision_model.h"

namespace prism {
namespace {
using namespace vision_keys;

void readClipConfig(const GgufFile& g, VisionConfig& cfg, ImageProcessorConfig& p) {
  const std::string& path = g.file->path();
  const std::string arch = stringKey(g, "general.architecture");
  if (arch != "clip") throw FormatError(path, "", "general.architecture '" + arch + "' is not an mmproj file's 'clip'");
  const std::string proj = stringKey(g, "clip.projector_type");
  if (proj != "idefics3")
    throw FormatError(path, "", "clip.projector_type '" + proj + "' is not a projector Prism reads (idefics3, mlp, gemma3 are)");
  if (!boolKey(g, "clip.has_vision_encoder", false)) throw FormatError(path, "", "clip.has_vision_encoder must be true");
  const std::string v = "clip.vision.";
  readSiglipShape(g, cfg);
  cfg.scaleFactor = g.find(v + "projector.scale_factor") ? ggufInt(g, v + "projector.scale_factor", 1, 16) : 2;
  if (cfg.patchesPerSide() % cfg.scaleFactor != 0)
    throw FormatError(path, "", "projector.scale_factor " + std::to_string(cfg.scaleFactor) + " does not divide the " +
                                    std::to_string(cfg.patchesPerSide()) + " patches per side");
  cfg.textHidden = ggufInt(g, v + "projection_dim", 8, 1 << 16);
  cfg.modelType = "idefics3";
  cfg.path = path;
  cfg.name = stringKey(g, "general.name");
  if (cfg.name.empty()) cfg.name = path.substr(path.find_last_of('/') + 1);

  // Idefics3ImageProcessor as llama.cpp runs it for this projector: LANCZOS, split into tiles,
  // rescale by 1/255, the file's mean / std; the longest edge from preproc_image_size.
  p.tileEdge = cfg.tile;
  p.longestEdge = g.find(v + "preproc_image_size") ? ggufInt(g, v + "preproc_image_size", 1, 1 << 14) : 4 * cfg.tile;
  p.resample = 1;
  channelTriple(g, v + "image_mean", p.mean, false);
  channelTriple(g, v + "image_std", p.std, true);
  p.imageSeqLen = cfg.tokensPerTile();
}

// mmproj name -> the folder reader's name ("" = none of Idefics3's).
std::string internalName(const std::string& n) {
  if (n == "mm.model.fc.weight") return "connector.modality_projection.proj.weight";
  return siglipTensorName(n);
}

// The image tokens' ids in the text GGUF's vocabulary (tokenizer.ggml.tokens).
void readTextTokenIds(const std::string& textModel, VisionConfig& cfg, VisionTokens& t) {
  forEachTextToken(textModel, [&](const std::string& s, int64_t id) { noteVisionToken(t, s, id); });
  if (t.imageId < 0) throw FormatError(textModel, "", "the text model's vocabulary has no '" + t.image + "' token");
  cfg.imageTokenId = t.imageId;
}

}  // namespace

std::string siglipTensorName(const std::string& n) {
  static const std::regex layer(R"(^v\.blk\.(\d+)\.(attn_q|attn_k|attn_v|attn_out|ln1|ln2|ffn_up|ffn_down)\.(weight|bias)$)");
  std::smatch m;
  if (std::regex_match(n, m, layer)) {
    static const std::map<std::string, std::string> part = {
        {"attn_q", "self_attn.q_proj"}, {"attn_k", "self_attn.k_proj"}, {"attn_v", "self_attn.v_proj"},
        {"attn_out", "self_attn.out_proj"}, {"ln1", "layer_norm1"}, {"ln2", "layer_norm2"},
        {"ffn_up", "mlp.fc1"}, {"ffn_down", "mlp.fc2"}};
    return "encoder.layers." + m[1].str() + "." + part.at(m[2].str()) + "." + m[3].str();
  }
  static const std::map<std::string, std::string> whole = {
      {"v.patch_embd.weight", "embeddings.patch_embedding.weight"},
      {"v.patch_embd.bias", "embeddings.patch_embedding.bias"},
      {"v.position_embd.weight", "embeddings.position_embedding.weight"},
      {"v.post_ln.weight", "post_layernorm.weight"},
      {"v.post_ln.bias", "post_layernorm.bias"}};
  auto it = whole.find(n);
  return it == whole.end() ? "" : it->second;
}

bool isVisionGguf(const std::string& path) { return isClipGgufOf(path, "idefics3"); }

std::shared_ptr<VisionModel> loadVisionGguf(const std::string& path, const std::string& textModel) {
  auto m = std::make_shared<VisionModel>();
  m->weightArena = std::make_unique<WeightArena>();
  const WeightArenaScope arenaScope(m->weightArena.get());
  const GgufFile g = readGguf(path, true);
  readClipConfig(g, m->cfg, m->processor);
  m->tokens.rowColIds.assign(36, -1);
  if (!textModel.empty()) readTextTokenIds(textModel, m->cfg, m->tokens);
  buildMmprojWeights(*m, g, internalName, "an idefics3 encoder or projector", buildVisionWeights);
  return m;
}

}  // namespace prism
