// A LLaVA-1.5 Hugging Face folder (LlavaForConditionalGeneration, model_type "llava") or a
// LLaVA-1.6 one (LlavaNextForConditionalGeneration, "llava_next": the same plus
// image_grid_pinpoints, in config.json and in the image processor's file alike, and the
// image_newline tensor) ->
// VisionModel: config.json's vision_config (a CLIP vision model), vision_feature_layer,
// vision_feature_select_strategy, projector_hidden_act, multimodal_projector_bias,
// text_config.hidden_size and the image token id; CLIPImageProcessor's parameters
// (preprocessor_config.json, or processor_config.json's "image_processor"); LlavaProcessor's
// own keys (processor_config.json), which must give the prompt as many image tokens as the
// encoder gives rows; the <image> id from tokenizer.json's added tokens; the vision tower's
// and projector's tensors under transformers 5's names (model.vision_tower.vision_model.*,
// model.multi_modal_projector.*) or the older ones without "model.". Any value this reader
// does not implement (a list of feature layers, image_grid_pinpoints on a LLaVA-1.5 folder,
// another activation, LLaVA-1.6 with the 'full' strategy) is refused naming its field.
#include <algorithm>
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

bool isLlavaNextType(const std::string& t) { return t == "llava_next" || t == "LlavaNextForConditionalGeneration"; }
bool isLlavaType(const std::string& t) { return t == "llava" || t == "LlavaForConditionalGeneration" || isLlavaNextType(t); }

std::string folderType(const JsonValue& c) {
  const std::string t = stringField(c, "model_type");
  if (!t.empty()) return t;
  const JsonValue* a = c.get("architectures");
  return a && a->isArray() && !a->arr.empty() && a->arr[0].isString() ? a->arr[0].str : "";
}

// LlavaNextConfig's and LlavaNextImageProcessor's default image_grid_pinpoints.
const std::vector<std::array<int64_t, 2>> kDefaultPinpoints = {{336, 672}, {672, 336}, {672, 672}, {1008, 336}, {336, 1008}};

// image_grid_pinpoints: [[height, width], ...], each side a multiple of the tile (the padded
// image is split into whole tiles; transformers' split would leave partial ones).
std::vector<std::array<int64_t, 2>> readPinpoints(const JsonValue& c, const std::string& file, int64_t tile) {
  const JsonValue* v = c.get("image_grid_pinpoints");
  if (!v || v->kind == JsonValue::Kind::Null) return kDefaultPinpoints;
  const std::string rule = "'image_grid_pinpoints' must be a list of 1 to 64 [height, width] pairs of integers, each a multiple of "
                           "the tile " + std::to_string(tile) + " and at most 8192";
  if (!v->isArray() || v->arr.empty() || v->arr.size() > 64) throw FormatError(file, "", rule);
  std::vector<std::array<int64_t, 2>> out;
  for (const JsonValue& pair : v->arr) {
    if (!pair.isArray() || pair.arr.size() != 2) throw FormatError(file, "", rule);
    std::array<int64_t, 2> hw{};
    for (size_t k = 0; k < 2; k++) {
      const JsonValue& x = pair.arr[k];
      if (!x.isNumber() || x.num != std::floor(x.num) || x.num < static_cast<double>(tile) || x.num > 8192 ||
          static_cast<int64_t>(x.num) % tile != 0)
        throw FormatError(file, "", rule);
      hw[k] = static_cast<int64_t>(x.num);
    }
    out.push_back(hw);
  }
  return out;
}

void readLlavaConfig(const std::string& dir, VisionConfig& cfg) {
  const std::string file = (fs::path(dir) / "config.json").string();
  if (!fs::exists(file)) throw FormatError(dir, "", "no config.json in the model directory");
  const JsonValue c = readJsonFile(file);
  if (!c.isObject()) throw FormatError(file, "", "config.json is not a JSON object");
  const JsonValue& v = objectField(c, file, "vision_config");
  const std::string vtype = stringField(v, "model_type");
  if (vtype != "clip_vision_model")
    throw FormatError(file, "", "vision_config.model_type '" + vtype + "' is unsupported (clip_vision_model is)");
  const bool next = isLlavaNextType(folderType(c));
  if (!next && c.get("image_grid_pinpoints"))
    throw FormatError(file, "", "'image_grid_pinpoints' (LLaVA-1.6 anyres tiling) on a model_type 'llava' folder is unsupported; "
                                "LLaVA-1.6 is model_type 'llava_next'");
  cfg.family = next ? VisionFamily::LlavaNext : VisionFamily::Llava;
  cfg.modelType = next ? "llava_next" : "llava";
  // Where the folder leaves a key out (as llava-hf's may): CLIPVisionConfig's defaults, or the
  // CLIP-L/336 ones LlavaNextConfig fills its vision_config with.
  const int64_t dHidden = next ? 1024 : 768, dInter = next ? 4096 : 3072, dLayers = next ? 24 : 12, dHeads = next ? 16 : 12,
                dPatch = next ? 14 : 32, dImage = next ? 336 : 224;
  cfg.hidden = configInt(v, file, "hidden_size", 8, 1 << 14, &dHidden);
  cfg.layers = configInt(v, file, "num_hidden_layers", 1, 256, &dLayers);
  cfg.heads = configInt(v, file, "num_attention_heads", 1, 256, &dHeads);
  cfg.intermediate = configInt(v, file, "intermediate_size", 1, 1 << 17, &dInter);
  cfg.patch = configInt(v, file, "patch_size", 1, 64, &dPatch);
  cfg.tile = configInt(v, file, "image_size", 1, 4096, &dImage);
  int64_t three = 3;
  if (configInt(v, file, "num_channels", 1, 16, &three) != 3) throw FormatError(file, "", "vision_config.num_channels must be 3");
  cfg.eps = configNum(v, file, "layer_norm_eps", 1e-5, 0, 1);
  const std::string act = stringField(v, "hidden_act");
  if (act == "quick_gelu" || act.empty()) cfg.quickGelu = true;  // CLIPVisionConfig's default
  else if (act == "gelu") cfg.ffn = EncoderFfn::GeluErf;
  else if (act == "gelu_pytorch_tanh" || act == "gelu_new") cfg.ffn = EncoderFfn::GeluTanh;
  else throw FormatError(file, "", "vision_config.hidden_act '" + act + "' is unsupported (quick_gelu, gelu, gelu_pytorch_tanh are)");
  if (cfg.hidden % cfg.heads != 0) throw FormatError(file, "", "vision_config.hidden_size is not a multiple of num_attention_heads");
  cfg.headDim = cfg.hidden / cfg.heads;
  if (cfg.headDim % 8 != 0 || cfg.headDim > 512)
    throw FormatError(file, "", "the vision head dim " + std::to_string(cfg.headDim) + " must be a multiple of 8 and at most 512");
  if (cfg.tile % cfg.patch != 0) throw FormatError(file, "", "vision_config.image_size is not a multiple of patch_size");

  // hidden_states[k]: the embeddings after pre_layrnorm (k = 0) or after k layers; negative
  // k counts from the end as Python does (-1: the last layer's output).
  const JsonValue* fl = c.get("vision_feature_layer");
  if (fl && fl->isArray())
    throw FormatError(file, "", "'vision_feature_layer' as a list of layers is unsupported (one integer layer is)");
  int64_t minusTwo = -2;
  const int64_t layer = configInt(c, file, "vision_feature_layer", -(cfg.layers + 1), cfg.layers, &minusTwo);
  cfg.featureLayers = layer >= 0 ? layer : cfg.layers + 1 + layer;
  const std::string strategy = c.get("vision_feature_select_strategy") ? stringField(c, "vision_feature_select_strategy") : "default";
  if (strategy != "default" && strategy != "full")
    throw FormatError(file, "", "'vision_feature_select_strategy' '" + strategy + "' is unsupported (default, full are)");
  cfg.keepClassToken = strategy == "full";
  // pack_image_features lays each tile's rows out as its side x side patches: with the class
  // row kept they do not line up (transformers' view fails or mixes rows).
  if (next && cfg.keepClassToken)
    throw FormatError(file, "", "'vision_feature_select_strategy' 'full' is unsupported for llava_next (default is: "
                                "pack_image_features lays out the patch rows only)");
  if (next) cfg.gridPinpoints = readPinpoints(c, file, cfg.tile);
  const std::string pact = c.get("projector_hidden_act") ? stringField(c, "projector_hidden_act") : "gelu";
  if (pact == "gelu") cfg.projectorFfn = EncoderFfn::GeluErf;
  else if (pact == "gelu_pytorch_tanh" || pact == "gelu_new") cfg.projectorFfn = EncoderFfn::GeluTanh;
  else throw FormatError(file, "", "'projector_hidden_act' '" + pact + "' is unsupported (gelu, gelu_pytorch_tanh are)");
  cfg.projectorBias = boolField(c, file, "multimodal_projector_bias", true);
  const int64_t llamaHidden = 4096;  // LlamaConfig's default, as the text loader fills it
  cfg.textHidden = configInt(objectField(c, file, "text_config"), file, "hidden_size", 8, 1 << 16, &llamaHidden);
  // transformers 5 writes image_token_id; older folders (llava-hf's) image_token_index.
  const char* idKey = c.get("image_token_id") ? "image_token_id" : "image_token_index";
  int64_t llava15 = 32000;
  cfg.imageTokenId = configInt(c, file, idKey, 0, 1 << 24, &llava15);
  cfg.path = dir;
  cfg.name = fs::path(dir).filename().string();
  if (cfg.name.empty()) cfg.name = fs::path(dir).parent_path().filename().string();
}

// {"height": H, "width": W} (or one integer for both), as CLIPImageProcessor's crop_size.
void cropSize(const JsonValue& c, const std::string& file, int64_t tile, ImageProcessorConfig& p) {
  const JsonValue* v = c.get("crop_size");
  if (!v || v->kind == JsonValue::Kind::Null) {
    p.cropHeight = p.cropWidth = tile;
  } else if (v->isNumber()) {
    p.cropHeight = p.cropWidth = configInt(c, file, "crop_size", 1, 4096);
  } else if (v->isObject()) {
    p.cropHeight = configInt(*v, file, "height", 1, 4096);
    p.cropWidth = configInt(*v, file, "width", 1, 4096);
  } else {
    throw FormatError(file, "", "'crop_size' must be an integer or an object with 'height' and 'width'");
  }
}

void readClipProcessor(const std::string& dir, const VisionConfig& cfg, ImageProcessorConfig& p) {
  const ProcessorFiles files = readProcessorFiles(dir);
  const std::string &proc = files.processorFile, &file = files.file;
  const JsonValue &procJson = files.processor, &preJson = files.settings;
  const bool next = cfg.family == VisionFamily::LlavaNext;
  const std::string type = stringField(preJson, "image_processor_type"), wanted = next ? "LlavaNextImageProcessor" : "CLIPImageProcessor";
  if (!type.empty() && type.rfind(wanted, 0) != 0)
    throw FormatError(file, "", "image_processor_type '" + type + "' is unsupported (" + wanted + " is)");
  if (!boolField(preJson, file, "do_resize", true))
    throw FormatError(file, "", "'do_resize': false is unsupported (the encoder takes image_size squares)");
  const JsonValue* size = preJson.get("size");
  if (size && size->isObject() && size->get("shortest_edge")) {
    p.shortestEdge = configInt(*size, file, "shortest_edge", 1, 4096);
  } else if (size && size->isNumber()) {
    p.shortestEdge = configInt(preJson, file, "size", 1, 4096);
  } else if (!size || size->kind == JsonValue::Kind::Null) {
    p.shortestEdge = cfg.tile;
  } else {
    throw FormatError(file, "", "'size' must be {\"shortest_edge\": N} (a fixed height x width resize is unsupported)");
  }
  p.doCenterCrop = boolField(preJson, file, "do_center_crop", true);
  cropSize(preJson, file, cfg.tile, p);
  if (!p.doCenterCrop) throw FormatError(file, "", "'do_center_crop': false is unsupported (the encoder takes image_size squares)");
  if (p.shortestEdge < std::max(p.cropHeight, p.cropWidth))
    throw FormatError(file, "", "size.shortest_edge " + std::to_string(p.shortestEdge) +
                                    " smaller than crop_size is unsupported (the crop would be padded)");
  if (p.cropHeight != cfg.tile || p.cropWidth != cfg.tile)
    throw FormatError(file, "", "'crop_size' " + std::to_string(p.cropHeight) + "x" + std::to_string(p.cropWidth) +
                                    " differs from the encoder's image_size " + std::to_string(cfg.tile));
  int64_t bicubic = 3;
  p.resample = static_cast<int>(configInt(preJson, file, "resample", 0, 5, &bicubic));
  if (p.resample != 1 && p.resample != 2 && p.resample != 3)
    throw FormatError(file, "", "'resample' " + std::to_string(p.resample) + " is unsupported (1 LANCZOS, 2 BILINEAR, 3 BICUBIC are)");
  p.doRescale = boolField(preJson, file, "do_rescale", true);
  p.rescaleFactor = configNum(preJson, file, "rescale_factor", 1.0 / 255.0, 0, 1);
  p.doNormalize = boolField(preJson, file, "do_normalize", true);
  p.doConvertRgb = boolField(preJson, file, "do_convert_rgb", true);
  // CLIPImageProcessor's defaults: OpenAI CLIP's mean and std.
  const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f}, stdev[3] = {0.26862954f, 0.26130258f, 0.27577711f};
  std::copy(mean, mean + 3, p.mean);
  std::copy(stdev, stdev + 3, p.std);
  channelTriple(preJson, file, "image_mean", p.mean);
  channelTriple(preJson, file, "image_std", p.std);
  p.doImageSplitting = false;
  p.tileEdge = cfg.tile;
  p.longestEdge = cfg.tile;
  if (next) {
    // The processor tiles by its own pinpoints, the model packs by config.json's: they must agree.
    // (do_pad only pads a batch's images to one tile count: one image at a time, nothing to pad.)
    if (readPinpoints(preJson, file, cfg.tile) != cfg.gridPinpoints)
      throw FormatError(file, "", "'image_grid_pinpoints' differs from config.json's: the tiles would not be the grid the model packs");
    int64_t most = 0;
    for (const auto& [h, w] : cfg.gridPinpoints) most = std::max(most, (h / cfg.tile) * (w / cfg.tile));
    p.maxTilesOverride = most + 1;
  }
  // LlavaProcessor writes (crop / patch_size)² + num_additional_image_tokens image tokens,
  // less one for 'default': it must be the encoder's rows, or the prompt and rows disagree.
  p.imageSeqLen = cfg.tokensPerTile();
  if (procJson.isObject()) {
    const int64_t side = cfg.tile / cfg.patch;
    int64_t patch = cfg.patch, none = 0;  // LlavaProcessor's default: no additional token
    const int64_t pp = configInt(procJson, proc, "patch_size", 1, 4096, &patch);
    const int64_t extra = configInt(procJson, proc, "num_additional_image_tokens", 0, 64, &none);
    const std::string strategy = procJson.get("vision_feature_select_strategy")
                                     ? stringField(procJson, "vision_feature_select_strategy")
                                     : (cfg.keepClassToken ? "full" : "default");
    const int64_t written = (cfg.tile / pp) * (cfg.tile / pp) + extra - (strategy == "default" ? 1 : 0);
    // LlavaNextProcessor counts the grid's features in patches of its patch_size too.
    if (next && pp != cfg.patch)
      throw FormatError(proc, "", "patch_size " + std::to_string(pp) + " differs from vision_config.patch_size " +
                                      std::to_string(cfg.patch) + ": the prompt's image token count would not be the model's rows");
    if (written != cfg.tokensPerTile())
      throw FormatError(proc, "", "patch_size " + std::to_string(pp) + ", num_additional_image_tokens " + std::to_string(extra) +
                                      " and vision_feature_select_strategy '" + strategy + "' write " + std::to_string(written) +
                                      " image tokens; the encoder gives " + std::to_string(cfg.tokensPerTile()) + " rows (" +
                                      std::to_string(side * side) + " patches" + (cfg.keepClassToken ? " + the class token)" : ")"));
  }
}

// The <image> id among tokenizer.json's added tokens (-1 when absent).
int64_t imageTokenId(const std::string& dir, const std::string& image) {
  const std::string file = (fs::path(dir) / "tokenizer.json").string();
  if (!fs::exists(file)) return -1;
  const JsonValue tok = readJsonFile(file);
  const JsonValue* added = tok.isObject() ? tok.get("added_tokens") : nullptr;
  if (!added || !added->isArray()) return -1;
  for (const JsonValue& a : added->arr) {
    if (!a.isObject()) continue;
    const JsonValue* content = a.get("content");
    const JsonValue* id = a.get("id");
    if (content && content->isString() && content->str == image && id && id->isNumber() && id->num >= 0 && id->num <= (1 << 24))
      return static_cast<int64_t>(id->num);
  }
  return -1;
}

// HF name -> the name it is built under (clip_build.cc); the text model's are not read.
std::string clipName(const std::string& hf) {
  // transformers 5 saves vision_tower.vision_model.*; its module tree (and so a folder saved
  // without the conversion) is model.vision_tower.*.
  for (const char* prefix : {"model.vision_tower.vision_model.", "vision_tower.vision_model.", "model.vision_tower.", "vision_tower."})
    if (hf.rfind(prefix, 0) == 0) return hf.substr(std::string(prefix).size());
  for (const char* prefix : {"model.multi_modal_projector.", "multi_modal_projector."})
    if (hf.rfind(prefix, 0) == 0) return "projector." + hf.substr(std::string(prefix).size());
  if (hf == "image_newline" || hf == "model.image_newline") return "image_newline";  // LLaVA-1.6
  return "";
}

}  // namespace

bool isLlavaFolder(const std::string& path) {
  try {
    const std::string file = (fs::path(path) / "config.json").string();
    return fs::exists(file) && isLlavaType(folderType(readJsonFile(file)));
  } catch (const std::exception&) {
    return false;  // the loader names what is wrong with the folder
  }
}

std::shared_ptr<VisionModel> loadLlavaFolder(const std::string& dir) {
  auto m = std::make_shared<VisionModel>();
  m->weightArena = std::make_unique<WeightArena>();
  const WeightArenaScope arenaScope(m->weightArena.get());
  readLlavaConfig(dir, m->cfg);
  readClipProcessor(dir, m->cfg, m->processor);
  m->tokens.rowColIds.assign(36, -1);
  m->tokens.imageId = imageTokenId(dir, m->tokens.image);
  if (m->tokens.imageId >= 0 && m->tokens.imageId != m->cfg.imageTokenId)
    throw FormatError(dir, "", "tokenizer.json's <image> id " + std::to_string(m->tokens.imageId) +
                                   " differs from config.json's image token id " + std::to_string(m->cfg.imageTokenId));
  TensorSet set;
  set.file = dir;
  for (const std::string& f : safetensorsFiles(dir)) readSafetensorsFile((fs::path(dir) / f).string(), clipName, set);
  m->maps = set.maps;
  buildClipWeights(*m, set);
  for (const auto& map : m->maps) map->releaseResidentPages();
  return m;
}

}  // namespace prism
