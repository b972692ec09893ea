// A Gemma 3 Hugging Face folder (Gemma3ForConditionalGeneration, model_type "gemma3") ->
// VisionModel: config.json's vision_config (a SigLIP vision model without its pooling head),
// mm_tokens_per_image and the image tokens' ids (image_token_index, boi_token_index,
// eoi_token_index, or their *_id aliases); Gemma3ImageProcessor's parameters
// (preprocessor_config.json, or processor_config.json's "image_processor"): one resize to
// size.height x size.width (= the encoder's image_size), rescale, normalise — pan-and-scan is
// refused; Gemma3Processor's image_seq_length (processor_config.json), which must be
// mm_tokens_per_image; the tokens' ids in tokenizer.json's added tokens, which must agree with
// config.json's; the vision tower's and projector's tensors under any of the names
// checkpoints hold them (gemma3Name). The text model is the decoder's (safetensors_model.cc).
#include <cmath>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "format_error.h"
#include "hf_files.h"
#include "vision/hf_keys.h"
#include "vision/vision_model.h"
#include "weight_builder.h"

namespace fs = std::filesystem;

namespace prism {
namespace {
using namespace vision_keys;

// transformers writes image_token_index (its attribute_map aliases image_token_id); either is read.
int64_t tokenIndex(const JsonValue& c, const std::string& file, const std::string& base, int64_t fallback) {
  const std::string key = c.get((base + "_index").c_str()) ? base + "_index" : base + "_id";
  return configInt(c, file, key.c_str(), 0, 1 << 24, &fallback);
}

void readGemma3Config(const std::string& dir, VisionConfig& cfg, VisionTokens& t) {
  const std::string file = (fs::path(dir) / "config.json").string();
  if (!fs::exists(file)) throw FormatError(dir, "", "no config.json in the model directory");
  const JsonValue c = readJsonFile(file);
  if (!c.isObject()) throw FormatError(file, "", "config.json is not a JSON object");
  const JsonValue& v = objectField(c, file, "vision_config");
  const std::string vtype = stringField(v, "model_type");
  if (!vtype.empty() && vtype != "siglip_vision_model")
    throw FormatError(file, "", "vision_config.model_type '" + vtype + "' is unsupported (siglip_vision_model is)");
  if (boolField(v, file, "vision_use_head", false))
    throw FormatError(file, "", "vision_config.vision_use_head: true is unsupported (Gemma 3 uses the patch rows, not the pooled head)");
  cfg.family = VisionFamily::Gemma3;
  cfg.modelType = "gemma3";
  // Gemma3Config's SigLIP defaults (SigLIP-So400m at 896 pixels) where the folder leaves a key out.
  const SiglipDefaults defaults{1152, 27, 16, 4304, 14, 896};
  readSiglipShape(v, file, cfg, &defaults);
  const int64_t d256 = 256;
  cfg.mmTokens = configInt(c, file, "mm_tokens_per_image", 1, 1 << 16, &d256);
  const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(cfg.mmTokens))));
  if (side * side != cfg.mmTokens || cfg.patchesPerSide() % side != 0)
    throw FormatError(file, "", "mm_tokens_per_image " + std::to_string(cfg.mmTokens) + " must be a square whose side divides the " +
                                    std::to_string(cfg.patchesPerSide()) + " patches per side (the projector's pooling)");
  const int64_t gemma3_4b = 2560;  // Gemma3TextConfig's default hidden_size
  cfg.textHidden = configInt(objectField(c, file, "text_config"), file, "hidden_size", 8, 1 << 16, &gemma3_4b);
  cfg.imageTokenId = tokenIndex(c, file, "image_token", 262144);
  t.startOfImageId = tokenIndex(c, file, "boi_token", 255999);
  t.endOfImageId = tokenIndex(c, file, "eoi_token", 256000);
  cfg.path = dir;
  cfg.name = fs::path(dir).filename().string();
  if (cfg.name.empty()) cfg.name = fs::path(dir).parent_path().filename().string();
}

void readGemma3Processor(const std::string& dir, const VisionConfig& cfg, ImageProcessorConfig& p) {
  const ProcessorFiles files = readProcessorFiles(dir);
  const std::string &proc = files.processorFile, &file = files.file;
  const JsonValue &procJson = files.processor, &preJson = files.settings;
  const std::string type = stringField(preJson, "image_processor_type");
  if (!type.empty() && type.rfind("Gemma3ImageProcessor", 0) != 0)
    throw FormatError(file, "", "image_processor_type '" + type + "' is unsupported (Gemma3ImageProcessor is)");
  if (boolField(preJson, file, "do_pan_and_scan", false))
    throw FormatError(file, "", "'do_pan_and_scan': true is unsupported (Prism encodes the whole image as one crop)");
  if (!boolField(preJson, file, "do_resize", true))
    throw FormatError(file, "", "'do_resize': false is unsupported (the encoder takes image_size squares)");
  const JsonValue* size = preJson.get("size");
  int64_t height = cfg.tile, width = cfg.tile;
  if (size && size->isObject()) {
    height = configInt(*size, file, "height", 1, 4096);
    width = configInt(*size, file, "width", 1, 4096);
  } else if (size && size->kind != JsonValue::Kind::Null) {
    throw FormatError(file, "", "'size' must be {\"height\": H, \"width\": W}");
  }
  if (height != cfg.tile || width != cfg.tile)
    throw FormatError(file, "", "'size' " + std::to_string(height) + "x" + std::to_string(width) + " differs from the encoder's image_size " +
                                    std::to_string(cfg.tile));
  int64_t bilinear = 2;
  p.resample = static_cast<int>(configInt(preJson, file, "resample", 0, 5, &bilinear));
  if (p.resample != 1 && p.resample != 2 && p.resample != 3)
    throw FormatError(file, "", "'resample' " + std::to_string(p.resample) + " is unsupported (1 LANCZOS, 2 BILINEAR, 3 BICUBIC are)");
  p.doRescale = boolField(preJson, file, "do_rescale", true);
  p.rescaleFactor = configNum(preJson, file, "rescale_factor", 1.0 / 255.0, 0, 1);
  p.doNormalize = boolField(preJson, file, "do_normalize", true);
  p.doConvertRgb = boolField(preJson, file, "do_convert_rgb", true);
  channelTriple(preJson, file, "image_mean", p.mean);  // Gemma3ImageProcessor's default: 0.5 each
  channelTriple(preJson, file, "image_std", p.std);
  p.doImageSplitting = false;
  p.tileEdge = p.longestEdge = p.cropHeight = p.cropWidth = cfg.tile;
  p.imageSeqLen = cfg.tokensPerTile();
  if (procJson.isObject()) {
    const int64_t written = configInt(procJson, proc, "image_seq_length", 1, 1 << 16, &p.imageSeqLen);
    if (written != cfg.mmTokens)
      throw FormatError(proc, "", "image_seq_length " + std::to_string(written) + " differs from config.json's mm_tokens_per_image " +
                                      std::to_string(cfg.mmTokens));
  }
}

// The image tokens' ids among tokenizer.json's added tokens (absent file: unchecked).
void checkTokenIds(const std::string& dir, const VisionConfig& cfg, VisionTokens& t) {
  const std::string file = (fs::path(dir) / "tokenizer.json").string();
  if (!fs::exists(file)) return;
  const JsonValue tok = readJsonFile(file);
  const JsonValue* added = tok.isObject() ? tok.get("added_tokens") : nullptr;
  if (!added || !added->isArray()) return;
  for (const JsonValue& a : added->arr) {
    const JsonValue* content = a.isObject() ? a.get("content") : nullptr;
    const JsonValue* id = a.isObject() ? a.get("id") : nullptr;
    if (!content || !content->isString() || !id || !id->isNumber() || id->num < 0 || id->num > (1 << 24)) continue;
    const auto n = static_cast<int64_t>(id->num);
    for (const auto& [text, want, key] : {std::tuple{t.image, cfg.imageTokenId, "image_token_index"},
                                          {t.startOfImage, t.startOfImageId, "boi_token_index"},
                                          {t.endOfImage, t.endOfImageId, "eoi_token_index"}})
      if (content->str == text && n != want)
        throw FormatError(dir, "", "tokenizer.json's " + text + " id " + std::to_string(n) + " differs from config.json's " + key + " " +
                                       std::to_string(want));
  }
}

// HF name -> the name it is built under (gemma3_build.cc); the text model's are not read.
std::string gemma3Name(const std::string& hf) {
  // Google's checkpoints hold vision_tower.vision_model.*; transformers 5 saves its module tree's
  // model.vision_tower.* as vision_tower.*.
  for (const char* prefix : {"model.vision_tower.vision_model.", "vision_tower.vision_model.", "model.vision_tower.", "vision_tower."})
    if (hf.rfind(prefix, 0) == 0) return hf.substr(std::string(prefix).size());
  for (const char* prefix : {"model.multi_modal_projector.", "multi_modal_projector."}) {
    if (hf.rfind(prefix, 0) != 0) continue;
    const std::string rest = hf.substr(std::string(prefix).size());
    if (rest == "mm_soft_emb_norm.weight") return "projector.soft_emb_norm.weight.hf";
    if (rest == "mm_input_projection_weight") return "projector.input_projection.weight";
    return "projector." + rest;  // unknown: the builder never asks for it
  }
  return "";
}

}  // namespace

bool isGemma3Folder(const std::string& path) {
  try {
    const std::string file = (fs::path(path) / "config.json").string();
    if (!fs::exists(file)) return false;
    const JsonValue c = readJsonFile(file);
    return stringField(c, "model_type") == "gemma3";
  } catch (const std::exception&) {
    return false;  // the loader names what is wrong with the folder
  }
}

std::shared_ptr<VisionModel> loadGemma3Folder(const std::string& dir) {
  auto m = std::make_shared<VisionModel>();
  m->weightArena = std::make_unique<WeightArena>();
  const WeightArenaScope arenaScope(m->weightArena.get());
  m->tokens.image = "<image_soft_token>";
  m->tokens.rowColIds.assign(36, -1);
  readGemma3Config(dir, m->cfg, m->tokens);
  readGemma3Processor(dir, m->cfg, m->processor);
  checkTokenIds(dir, m->cfg, m->tokens);
  m->tokens.imageId = m->cfg.imageTokenId;
  TensorSet set;
  set.file = dir;
  for (const std::string& f : safetensorsFiles(dir)) readSafetensorsFile((fs::path(dir) / f).string(), gemma3Name, set);
  m->maps = set.maps;
  // Gemma3RMSNorm multiplies by (1 + w); the builder takes the multiplier, as the GGUF stores it.
  const std::string hfNorm = "projector.soft_emb_norm.weight.hf";
  if (set.tensors.count(hfNorm)) {
    WeightBuilder b(set, "gemma3 vision", WeightPreparation::Cpu, ActivationPrecision::Int16,
                    {m->weightBytes, m->maxLinearCols, m->ownedBytes});
    std::vector<float> w = b.vec(hfNorm, m->cfg.hidden);
    std::vector<uint8_t>& bytes = m->ownedBytes.emplace_back(w.size() * sizeof(float));
    for (float& x : w) x += 1.0f;
    std::memcpy(bytes.data(), w.data(), bytes.size());
    set.tensors["projector.soft_emb_norm.weight"] = SourceTensor{0, {m->cfg.hidden}, bytes.data(), bytes.size()};
    set.originalNames["projector.soft_emb_norm.weight"] = "model.multi_modal_projector.mm_soft_emb_norm.weight";
  }
  buildGemma3Weights(*m, set);
  for (const auto& map : m->maps) map->releaseResidentPages();
  return m;
}

}  // namespace prism
