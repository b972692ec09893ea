// An Idefics3 / SmolVLM Hugging Face folder -> VisionModel: config.json's vision_config,
// scale_factor, text_config.hidden_size and image_token_id; the image processor's
// parameters (preprocessor_config.json, or processor_config.json's "image_processor" as
// transformers 5 saves it) and image_seq_len; the image tokens' ids from tokenizer.json's
// added tokens; the model.vision_model.* and model.connector.* tensors, built (every shape
// checked) by vision_build.cc. Nothing here reads the text model's weights.
#include <cmath>
#include <filesystem>

#include "format_error.h"
#include "hf_files.h"
#include "vision/hf_keys.h"
#include "vision/vision_model.h"

namespace fs = std::filesystem;

namespace prism {
namespace {
using namespace vision_keys;

// {"longest_edge": N} (Idefics3's size and max_image_size).
int64_t longestEdge(const JsonValue& c, const std::string& file, const char* key, int64_t fallback) {
  const JsonValue* v = c.get(key);
  if (!v || v->kind == JsonValue::Kind::Null) return fallback;
  if (!v->isObject()) throw FormatError(file, "", std::string("'") + key + "' must be an object with 'longest_edge'");
  return configInt(*v, file, "longest_edge", 1, 4096);
}

void readVisionConfig(const std::string& dir, VisionConfig& cfg) {
  const std::string file = (fs::path(dir) / "config.json").string();
  if (!fs::exists(file)) throw FormatError(dir, "", "no config.json in the model directory");
  const JsonValue c = readJsonFile(file);
  if (!c.isObject()) throw FormatError(file, "", "config.json is not a JSON object");
  const std::string type = stringField(c, "model_type");
  if (type != "idefics3" && type != "smolvlm")
    throw FormatError(file, "", "model_type '" + type + "' is not a vision-language model Prism reads (idefics3, smolvlm are)");
  cfg.modelType = type;
  const JsonValue& v = objectField(c, file, "vision_config");
  readSiglipShape(v, file, cfg, nullptr);
  int64_t two = 2;
  cfg.scaleFactor = configInt(c, file, "scale_factor", 1, 16, &two);
  if (cfg.patchesPerSide() % cfg.scaleFactor != 0)
    throw FormatError(file, "", "scale_factor " + std::to_string(cfg.scaleFactor) + " does not divide the " +
                                    std::to_string(cfg.patchesPerSide()) + " patches per side");
  cfg.textHidden = configInt(objectField(c, file, "text_config"), file, "hidden_size", 8, 1 << 16);
  cfg.imageTokenId = configInt(c, file, "image_token_id", 0, 1 << 24);
  cfg.path = dir;
  cfg.name = fs::path(dir).filename().string();
  if (cfg.name.empty()) cfg.name = fs::path(dir).parent_path().filename().string();
}

void readProcessorConfig(const std::string& dir, const VisionConfig& cfg, ImageProcessorConfig& p) {
  const ProcessorFiles files = readProcessorFiles(dir);
  const std::string &proc = files.processorFile, &file = files.file;
  const JsonValue &procJson = files.processor, &preJson = files.settings;
  const std::string type = stringField(preJson, "image_processor_type");
  if (!type.empty() && type.rfind("Idefics3ImageProcessor", 0) != 0 && type.rfind("SmolVLMImageProcessor", 0) != 0)
    throw FormatError(file, "", "image_processor_type '" + type + "' is not Idefics3's image processor");
  p.doResize = boolField(preJson, file, "do_resize", true);
  p.doImageSplitting = boolField(preJson, file, "do_image_splitting", true);
  p.doRescale = boolField(preJson, file, "do_rescale", true);
  p.doNormalize = boolField(preJson, file, "do_normalize", true);
  p.doConvertRgb = boolField(preJson, file, "do_convert_rgb", true);
  p.tileEdge = longestEdge(preJson, file, "max_image_size", 364);
  p.longestEdge = longestEdge(preJson, file, "size", 4 * p.tileEdge);
  int64_t lanczos = 1;
  p.resample = static_cast<int>(configInt(preJson, file, "resample", 0, 5, &lanczos));
  if (p.resample != 1 && p.resample != 2 && p.resample != 3)
    throw FormatError(file, "", "'resample' " + std::to_string(p.resample) + " is unsupported (1 LANCZOS, 2 BILINEAR, 3 BICUBIC are)");
  p.rescaleFactor = configNum(preJson, file, "rescale_factor", 1.0 / 255.0, 0, 1);
  channelTriple(preJson, file, "image_mean", p.mean);
  channelTriple(preJson, file, "image_std", p.std);
  if (p.tileEdge != cfg.tile)
    throw FormatError(file, "", "max_image_size.longest_edge " + std::to_string(p.tileEdge) + " differs from the encoder's image_size " +
                                    std::to_string(cfg.tile));
  if (!p.doResize) throw FormatError(file, "", "'do_resize': false is unsupported (tiles must be the encoder's size)");
  const int64_t fallback = cfg.tokensPerTile();
  p.imageSeqLen = procJson.isObject() ? configInt(procJson, proc, "image_seq_len", 1, 1 << 16, &fallback) : fallback;
  if (p.imageSeqLen != cfg.tokensPerTile())
    throw FormatError(proc, "", "image_seq_len " + std::to_string(p.imageSeqLen) + " differs from the encoder's " +
                                    std::to_string(cfg.tokensPerTile()) + " tokens per tile");
}

// Ids of the image tokens among tokenizer.json's added tokens (absent file: all -1).
void readTokenIds(const std::string& dir, VisionTokens& t) {
  const std::string file = (fs::path(dir) / "tokenizer.json").string();
  t.rowColIds.assign(36, -1);
  if (!fs::exists(file)) return;
  const JsonValue tok = readJsonFile(file);
  const JsonValue* added = tok.isObject() ? tok.get("added_tokens") : nullptr;
  if (!added || !added->isArray()) return;
  for (const JsonValue& a : added->arr) {
    if (!a.isObject()) continue;
    const JsonValue* content = a.get("content");
    const JsonValue* id = a.get("id");
    if (!content || !content->isString() || !id || !id->isNumber() || id->num < 0 || id->num > (1 << 24)) continue;
    noteVisionToken(t, content->str, static_cast<int64_t>(id->num));
  }
}

// HF name -> the name it is built under: the vision tower's and the connector's tensors
// without the model's prefix; the text model's are not read.
std::string visionName(const std::string& hf) {
  for (const char* prefix : {"model.vision_model.", "model.connector."})
    if (hf.rfind(prefix, 0) == 0) return (std::string(prefix) == "model.connector." ? "connector." : "") + hf.substr(std::string(prefix).size());
  return "";
}

}  // namespace

bool isVisionFolder(const std::string& path) {
  try {
    const std::string file = (fs::path(path) / "config.json").string();
    if (!fs::exists(file)) return false;
    const std::string type = stringField(readJsonFile(file), "model_type");
    return type == "idefics3" || type == "smolvlm";
  } catch (const std::exception&) {
    return false;  // the loader names what is wrong with the folder
  }
}

std::shared_ptr<VisionModel> loadVisionFolder(const std::string& dir) {
  auto m = std::make_shared<VisionModel>();
  m->weightArena = std::make_unique<WeightArena>();
  const WeightArenaScope arenaScope(m->weightArena.get());
  readVisionConfig(dir, m->cfg);
  readProcessorConfig(dir, m->cfg, m->processor);
  readTokenIds(dir, m->tokens);
  if (m->tokens.imageId >= 0 && m->tokens.imageId != m->cfg.imageTokenId)
    throw FormatError(dir, "", "tokenizer.json's <image> id " + std::to_string(m->tokens.imageId) + " differs from config.json's image_token_id " +
                                   std::to_string(m->cfg.imageTokenId));
  TensorSet set;
  set.file = dir;
  for (const std::string& f : safetensorsFiles(dir)) readSafetensorsFile((fs::path(dir) / f).string(), visionName, set);
  m->maps = set.maps;
  buildVisionWeights(*m, set);
  for (const auto& map : m->maps) map->releaseResidentPages();
  return m;
}

}  // namespace prism
