// An mmproj GGUF of Gemma 3 as llama.cpp's converter writes it (convert_hf_to_gguf.py --mmproj
// on Gemma3ForConditionalGeneration: general.architecture "clip", clip.projector_type "gemma3")
// -> VisionModel: the clip.vision.* SigLIP shape, the image mean / std, the pooling factor
// clip.vision.projector.scale_factor (written only where it is not Gemma 3's 4: 64 patches per
// side pooled to 16, 256 rows), the v.* tower tensors, mm.soft_emb_norm.weight (the converter
// stores 1 + w) and mm.input_projection.weight (HF's [vision hidden × text hidden]); renamed to
// the folder reader's names so that one builder (gemma3_build.cc) checks and prepares both.
// Images are resized to image_size x image_size with bilinear resampling, as the folder's
// Gemma3ImageProcessor does. The token ids come from the text GGUF's vocabulary.
#include "format_error.h"
#include "gguf.h"
#include "vision/gguf_keys.h"
#include "vision/vision_model.h"

namespace prism {
namespace {
using namespace vision_keys;

void readGemma3ClipConfig(const GgufFile& g, VisionConfig& cfg, ImageProcessorConfig& p) {
  const std::string& path = g.file->path();
  const std::string arch = stringKey(g, "general.architecture");
  if (arch != "clip") throw FormatError(path, "", "general.architecture '" + arch + "' is not an mmproj file's 'clip'");
  if (!boolKey(g, "clip.has_vision_encoder", false)) throw FormatError(path, "", "clip.has_vision_encoder must be true");
  const std::string v = "clip.vision.";
  readSiglipShape(g, cfg);
  cfg.family = VisionFamily::Gemma3;
  cfg.modelType = "gemma3";
  const int64_t pool = g.find(v + "projector.scale_factor") ? ggufInt(g, v + "projector.scale_factor", 1, 64) : 4;
  if (cfg.patchesPerSide() % pool != 0)
    throw FormatError(path, "", "clip.vision.projector.scale_factor " + std::to_string(pool) + " does not divide the " +
                                    std::to_string(cfg.patchesPerSide()) + " patches per side");
  const int64_t side = cfg.patchesPerSide() / pool;
  cfg.mmTokens = side * side;
  cfg.textHidden = ggufInt(g, v + "projection_dim", 8, 1 << 16);
  cfg.path = path;
  cfg.name = stringKey(g, "general.name");
  if (cfg.name.empty()) cfg.name = path.substr(path.find_last_of('/') + 1);

  p.doImageSplitting = false;
  p.tileEdge = p.longestEdge = p.cropHeight = p.cropWidth = cfg.tile;
  p.resample = 2;
  channelTriple(g, v + "image_mean", p.mean, false);
  channelTriple(g, v + "image_std", p.std, true);
  p.imageSeqLen = cfg.tokensPerTile();
}

// mmproj name -> the folder reader's name ("" = none of Gemma 3's).
std::string internalName(const std::string& n) {
  if (n == "mm.soft_emb_norm.weight") return "projector.soft_emb_norm.weight";
  if (n == "mm.input_projection.weight") return "projector.input_projection.weight";
  return siglipTensorName(n);
}

// The three image tokens' ids in the text GGUF's vocabulary (tokenizer.ggml.tokens).
void readTextTokenIds(const std::string& textModel, VisionConfig& cfg, VisionTokens& t) {
  forEachTextToken(textModel, [&](const std::string& s, int64_t i) {
    if (s == t.image) t.imageId = i;
    else if (s == t.startOfImage) t.startOfImageId = i;
    else if (s == t.endOfImage) t.endOfImageId = i;
  });
  for (const auto& [text, id] : {std::pair{&t.image, t.imageId}, {&t.startOfImage, t.startOfImageId}, {&t.endOfImage, t.endOfImageId}})
    if (id < 0) throw FormatError(textModel, "", "the text model's vocabulary has no '" + *text + "' token");
  cfg.imageTokenId = t.imageId;
}

}  // namespace

bool isGemma3Gguf(const std::string& path) { return isClipGgufOf(path, "gemma3"); }

std::shared_ptr<VisionModel> loadGemma3Gguf(const std::string& path, const std::string& textModel) {
  auto m = std::make_shared<VisionModel>();
  m->weightArena = std::make_unique<WeightArena>();
  const WeightArenaScope arenaScope(m->weightArena.get());
  const GgufFile g = readGguf(path, true);
  readGemma3ClipConfig(g, m->cfg, m->processor);
  m->tokens.image = "<image_soft_token>";
  m->tokens.rowColIds.assign(36, -1);
  if (!textModel.empty()) readTextTokenIds(textModel, m->cfg, m->tokens);
  buildMmprojWeights(*m, g, internalName, "a Gemma 3 SigLIP tower or projector", buildGemma3Weights);
  return m;
}

}  // namespace prism
