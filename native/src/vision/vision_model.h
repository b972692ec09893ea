// A vision-language model's image side, one of three families (VisionFamily):
// - SmolVLM / Idefics3: the SigLIP vision transformer (patch embedding, learned positions,
//   pre-norm layers, post LayerNorm), the connector (pixel shuffle by the scale factor, then
//   the modality projection into the text model's hidden size); read from the Hugging Face
//   folder (vision_hf.cc) or llama.cpp's mmproj GGUF (vision_gguf.cc);
// - LLaVA-1.5: the CLIP vision transformer (class token, patch embedding, learned positions,
//   pre LayerNorm, pre-norm quick_gelu layers) cut at vision_feature_layer, then the MLP
//   projector (linear, GELU, linear); read by clip_hf.cc / clip_gguf.cc;
// - LLaVA-1.6 (LLaVA-NeXT): the same CLIP and projector on every anyres tile (the image
//   resized into the best of image_grid_pinpoints, padded, split, plus the whole image as a
//   base tile; llava_next_preprocess.cc), then the tiles' rows laid out as the grid, unpadded
//   and closed by image_newline per row (llava_next_pack.cc); read by clip_hf.cc;
// - Gemma 3 (Gemma3ForConditionalGeneration): SigLIP as SmolVLM's (the same layers, post
//   LayerNorm), then Gemma3MultiModalProjector (average pooling of the patch grid down to
//   mm_tokens_per_image rows, Gemma's RMSNorm, the input projection); read by gemma3_hf.cc /
//   gemma3_gguf.cc, built by gemma3_build.cc, run by gemma3_encoder.cc.
// With them the image processor's parameters and the prompt's image tokens. The text model
// (the folder's, or the text GGUF beside the mmproj) is the decoder's business.
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "encoder/encoder_model.h"
#include "kernels/kernels.h"
#include "kernels/weight_memory.h"
#include "model.h"

namespace prism {
class WeightBuilder;
}

namespace prism {

// Which encoder, connector, preprocessing and prompt expansion a model takes.
enum class VisionFamily { Idefics3, Llava, Gemma3, LlavaNext };

struct VisionConfig {
  VisionFamily family = VisionFamily::Idefics3;
  std::string modelType = "idefics3";  // config.json model_type: idefics3 | smolvlm | llava | llava_next | gemma3
  std::string path, name;
  int64_t hidden = 0, layers = 0, heads = 0, headDim = 0, intermediate = 0;
  int64_t patch = 0;  // patch_size: square patches
  int64_t tile = 0;   // image_size: the encoder's square input, one tile
  double eps = 1e-6;
  EncoderFfn ffn = EncoderFfn::GeluTanh;
  int64_t scaleFactor = 1;  // the connector's pixel shuffle
  int64_t textHidden = 0;   // the modality projection's output = the text model's hidden size
  int64_t imageTokenId = -1;
  // LLaVA (CLIP) only: the encoder layers run (hidden_states[featureLayers], the layers after it
  // are never needed), whether the class token's row is kept ('full') or dropped ('default'),
  // the layers' quick_gelu (x·σ(1.702x)) in place of ffn, and the projector's activation and biases.
  int64_t featureLayers = 0;
  bool keepClassToken = false;
  bool quickGelu = false;
  EncoderFfn projectorFfn = EncoderFfn::GeluErf;
  bool projectorBias = true;
  // Gemma 3 only: rows per image after the projector's pooling (mm_tokens_per_image, a square
  // number whose side divides the patches per side).
  int64_t mmTokens = 0;
  // LLaVA-1.6 only: image_grid_pinpoints, the resolutions an image may be tiled at, as
  // {height, width} pairs (each a multiple of the tile).
  std::vector<std::array<int64_t, 2>> gridPinpoints;

  // CLIP and the MLP projector per tile: LLaVA-1.5's and LLaVA-1.6's.
  bool isClip() const { return family == VisionFamily::Llava || family == VisionFamily::LlavaNext; }
  int64_t patchesPerSide() const { return tile / patch; }
  int64_t patchesPerTile() const { return patchesPerSide() * patchesPerSide(); }
  // Rows the encoder's layers take per tile: CLIP's class token first, then the patches.
  int64_t sequencePerTile() const { return patchesPerTile() + (isClip() ? 1 : 0); }
  int64_t tokensPerTile() const {
    if (isClip()) return patchesPerTile() + (keepClassToken ? 1 : 0);
    if (family == VisionFamily::Gemma3) return mmTokens;
    return patchesPerTile() / (scaleFactor * scaleFactor);
  }
};

// Idefics3ImageProcessor's parameters (preprocessor_config.json), as its PIL backend uses them.
struct ImageProcessorConfig {
  bool doResize = true, doImageSplitting = true, doRescale = true, doNormalize = true, doConvertRgb = true;
  int64_t longestEdge = 0;  // size.longest_edge: the whole image's longest edge after the first resize
  int64_t tileEdge = 0;     // max_image_size.longest_edge: a tile's edge (= the encoder's image_size)
  int resample = 1;         // PIL's numbering: 1 LANCZOS, 2 BILINEAR, 3 BICUBIC
  double rescaleFactor = 1.0 / 255.0;
  float mean[3] = {0.5f, 0.5f, 0.5f}, std[3] = {0.5f, 0.5f, 0.5f};
  int64_t imageSeqLen = 0;  // processor_config.json: <image> tokens per tile
  // CLIPImageProcessor (LLaVA): resize the shortest edge to shortestEdge, then center-crop
  // to cropHeight x cropWidth (= the encoder's image_size). One tile, never split.
  int64_t shortestEdge = 0, cropHeight = 0, cropWidth = 0;
  bool doCenterCrop = true;

  // Tiles of one image at most: the split grid of a longestEdge-square image, plus the global image
  // (LLaVA-1.6: maxTilesOverride, its largest pinpoint's grid plus the base tile).
  int64_t maxTilesOverride = 0;
  int64_t maxTiles() const {
    if (maxTilesOverride > 0) return maxTilesOverride;
    const int64_t side = (longestEdge + tileEdge - 1) / tileEdge;
    return doImageSplitting && side > 1 ? side * side + 1 : 1;
  }
};

// The prompt's image tokens (Idefics3Processor): each tile is <fake_token_around_image>
// <row_R_col_C> (or <global-img> for the global image) then imageSeqLen x <image>; ids from
// tokenizer.json's added tokens (-1 where the folder's tokenizer lacks one).
struct VisionTokens {
  std::string image = "<image>", fakeAroundImage = "<fake_token_around_image>", globalImage = "<global-img>";
  int64_t imageId = -1, fakeAroundImageId = -1, globalImageId = -1;
  std::vector<int64_t> rowColIds;  // [6 × 6]: <row_{r+1}_col_{c+1}> at r * 6 + c
  // Gemma 3 (Gemma3Processor): each image is "\n\n<start_of_image>" + mm_tokens_per_image x
  // <image_soft_token> + "<end_of_image>\n\n"; `image` is then <image_soft_token>.
  std::string startOfImage = "<start_of_image>", endOfImage = "<end_of_image>";
  int64_t startOfImageId = -1, endOfImageId = -1;
};

struct VisionLayer {
  std::vector<float> norm1W, norm1B;  // before attention
  LinearGroup qkv;                    // out: [q (D) | k (D) | v (D)]
  std::vector<float> qkvBias;
  LinearGroup o;
  std::vector<float> oBias;
  std::vector<float> norm2W, norm2B;  // before the MLP
  LinearGroup up;
  std::vector<float> upBias;
  LinearGroup down;
  std::vector<float> downBias;
};

struct VisionModel {
  // First, so that it is destroyed last: the LinearWeights below hold buffers in it.
  std::unique_ptr<WeightArena> weightArena;
  VisionConfig cfg;
  ImageProcessorConfig processor;
  VisionTokens tokens;
  std::vector<std::shared_ptr<MappedFile>> maps;
  std::deque<std::vector<uint8_t>> ownedBytes;
  LinearGroup patchEmbed;  // [D × 3·p·p] over a patch unfolded channel, row, column
  std::vector<float> patchBias;
  std::vector<float> positions;  // [patchesPerTile × D]
  std::vector<VisionLayer> layers;
  std::vector<float> postNormW, postNormB;
  LinearGroup projection;  // Idefics3: [textHidden × D·scale²], no bias; LLaVA: linear_1 [textHidden × D]
  // LLaVA only: the class embedding [D], pre_layrnorm, linear_1's bias and linear_2 [textHidden × textHidden] + bias.
  std::vector<float> classEmbed, preNormW, preNormB, projectionBias;
  LinearGroup projection2;
  std::vector<float> projection2Bias;
  // Gemma 3 only: mm_soft_emb_norm's multiplier (1 + w, as Gemma3RMSNorm applies its weight).
  std::vector<float> softEmbNorm;
  // LLaVA-1.6 only: image_newline [textHidden], the row closing each row of the tile grid.
  std::vector<float> imageNewline;
  double weightBytes = 0;
  int64_t maxLinearCols = 0;
};

// Whether `path` is a folder whose config.json names an Idefics3 / SmolVLM / LLaVA model, or an
// mmproj GGUF of projector type idefics3 or mlp; never throws.
bool isVisionModelPath(const std::string& path);

// Reads the image side of a folder or an mmproj GGUF. `textModel` (mmproj only, "" = none):
// the text GGUF whose vocabulary gives the image tokens' ids (without it they are -1).
// Throws FormatError naming the file, tensor and rule.
std::shared_ptr<VisionModel> loadVisionModel(const std::string& path, const std::string& textModel = "");

// The readers behind those two (vision_hf.cc, vision_gguf.cc) and what they share.
bool isVisionFolder(const std::string& path);
std::shared_ptr<VisionModel> loadVisionFolder(const std::string& dir);
bool isVisionGguf(const std::string& path);
std::shared_ptr<VisionModel> loadVisionGguf(const std::string& path, const std::string& textModel);
// An mmproj GGUF's SigLIP tensor name (v.*, convert_hf_to_gguf.py's) -> the folder reader's
// name less its model prefix ("" = not a SigLIP tower's); vision_gguf.cc, gemma3_gguf.cc.
std::string siglipTensorName(const std::string& mmprojName);
// The encoder's and connector's tensors, under the folder's names less their model prefix.
void buildVisionWeights(VisionModel& m, TensorSet& set);
// The pre-norm layers 0..count-1 (encoder.layers.N.*: SigLIP's and CLIP's names agree).
void buildVisionLayers(VisionModel& m, WeightBuilder& b, int64_t count);
// The LLaVA readers and builder (clip_hf.cc, clip_gguf.cc, clip_build.cc).
bool isLlavaFolder(const std::string& path);
std::shared_ptr<VisionModel> loadLlavaFolder(const std::string& dir);
bool isLlavaGguf(const std::string& path);
std::shared_ptr<VisionModel> loadLlavaGguf(const std::string& path, const std::string& textModel);
void buildClipWeights(VisionModel& m, TensorSet& set);
// The Gemma 3 readers and builder (gemma3_hf.cc, gemma3_gguf.cc, gemma3_build.cc).
bool isGemma3Folder(const std::string& path);
std::shared_ptr<VisionModel> loadGemma3Folder(const std::string& dir);
bool isGemma3Gguf(const std::string& path);
std::shared_ptr<VisionModel> loadGemma3Gguf(const std::string& path, const std::string& textModel);
// SigLIP's patch embedding, positions, layers and post LayerNorm (Idefics3's and Gemma 3's).
void buildSiglipTower(VisionModel& m, WeightBuilder& b, TensorSet& set);
void buildGemma3Weights(VisionModel& m, TensorSet& set);
// Records `id` if `text` is one of the image tokens.
void noteVisionToken(VisionTokens& t, const std::string& text, int64_t id);

}  // namespace prism
