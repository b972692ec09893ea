// The addon's vision-model exports (see native/native.ts, "Vision models"): load an
// Idefics3 / SmolVLM, LLaVA-1.5, LLaVA-1.6 or Gemma 3 folder's or mmproj GGUF's image side, describe it,
// preprocess an RGB image into tiles (the family's processor), encode tiles into the text model's
// embedding rows and (LLaVA-1.6) pack an image's tile rows into its image rows. Glue only: argument checks, conversions and work off the JS thread
// (addon_glue.h); the math is in vision_encoder.cc, clip_encoder.cc, gemma3_encoder.cc, idefics3_preprocess.cc, gemma3_preprocess.cc,
// clip_preprocess.cc, llava_next_preprocess.cc, llava_next_pack.cc and pil_resample.cc.
#include <napi.h>

#include <cmath>
#include <thread>

#include "addon_glue.h"
#include "vision/clip_preprocess.h"
#include "vision/gemma3_preprocess.h"
#include "vision/idefics3_preprocess.h"
#include "vision/llava_next_pack.h"
#include "vision/llava_next_preprocess.h"
#include "vision/vision_encoder.h"

namespace prism {
namespace {

const glue::HandleKind kVisionHandle{{0x7072697301020304ull, 0x766973696f6e0001ull}, "a vision model", "vision model"};

const std::shared_ptr<VisionEncoder>& visionArg(Napi::Env env, Napi::Value v) {
  return glue::handleArg<VisionEncoder>(env, v, kVisionHandle, "vision");
}

Napi::Value IsVisionModel(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), isVisionModelPath(glue::stringArg(info, 0, "path")));
}

// loadVisionModel(path, {threads?, textModel?}) -> Promise<handle>
Napi::Value LoadVisionModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string dir = glue::stringArg(info, 0, "path");
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string textModel;
  if (info.Length() > 1 && !info[1].IsUndefined()) {
    Napi::Object o = glue::objectArg(info, 1, "options");
    if (!o.Get("threads").IsUndefined()) threads = static_cast<int>(glue::intArg(env, o.Get("threads"), "options.threads", 1, 1024));
    if (!o.Get("textModel").IsUndefined()) {
      if (!o.Get("textModel").IsString()) throw Napi::TypeError::New(env, "options.textModel must be a string");
      textModel = o.Get("textModel").As<Napi::String>().Utf8Value();
      if (textModel.empty()) throw Napi::TypeError::New(env, "options.textModel must be a non-empty path");
    }
  }
  return glue::Work<std::shared_ptr<VisionEncoder>>::queue(
      env, "prism.loadVisionModel", glue::ErrorPolicy{dir + ": ", dir + ": out of memory while loading", true, false},
      [dir, threads, textModel] { return std::make_shared<VisionEncoder>(loadVisionModel(dir, textModel), threads); },
      [](Napi::Env e, std::shared_ptr<VisionEncoder>& enc) { return glue::wrapHandle(e, std::move(enc), kVisionHandle); });
}

Napi::Object tokenToJs(Napi::Env env, const std::string& text, int64_t id) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("text", text);
  o.Set("id", static_cast<double>(id));
  return o;
}

const char* familyName(VisionFamily f) {
  switch (f) {
    case VisionFamily::Llava: return "llava";
    case VisionFamily::LlavaNext: return "llava_next";
    case VisionFamily::Gemma3: return "gemma3";
    case VisionFamily::Idefics3: break;
  }
  return "idefics3";
}

Napi::Value VisionInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::shared_ptr<VisionEncoder>& enc = visionArg(env, info[0]);
  const VisionModel& m = *enc->model();
  const VisionConfig& c = m.cfg;
  const ImageProcessorConfig& p = m.processor;
  Napi::Object o = Napi::Object::New(env);
  o.Set("path", c.path);
  o.Set("name", c.name);
  o.Set("architecture", c.modelType);
  o.Set("family", familyName(c.family));
  o.Set("tileSize", static_cast<double>(c.tile));
  o.Set("patchSize", static_cast<double>(c.patch));
  o.Set("tokensPerTile", static_cast<double>(c.tokensPerTile()));
  o.Set("scaleFactor", static_cast<double>(c.scaleFactor));
  o.Set("visionHiddenSize", static_cast<double>(c.hidden));
  o.Set("visionLayers", static_cast<double>(c.layers));
  o.Set("textHiddenSize", static_cast<double>(c.textHidden));
  o.Set("maxTiles", static_cast<double>(p.maxTiles()));
  o.Set("threads", enc->threads());
  o.Set("weightBytes", m.weightBytes);
  Napi::Object proc = Napi::Object::New(env);
  proc.Set("longestEdge", static_cast<double>(p.longestEdge));
  proc.Set("tileEdge", static_cast<double>(p.tileEdge));
  proc.Set("doImageSplitting", p.doImageSplitting);
  proc.Set("resample", p.resample == 1 ? "lanczos" : p.resample == 2 ? "bilinear" : "bicubic");
  proc.Set("rescaleFactor", p.rescaleFactor);
  Napi::Array mean = Napi::Array::New(env, 3), stdev = Napi::Array::New(env, 3);
  for (uint32_t i = 0; i < 3; i++) {
    mean.Set(i, p.mean[i]);
    stdev.Set(i, p.std[i]);
  }
  proc.Set("imageMean", mean);
  proc.Set("imageStd", stdev);
  proc.Set("imageSeqLen", static_cast<double>(p.imageSeqLen));
  Napi::Array pinpoints = Napi::Array::New(env, c.gridPinpoints.size());
  for (uint32_t i = 0; i < c.gridPinpoints.size(); i++) {
    Napi::Array hw = Napi::Array::New(env, 2);
    hw.Set(0u, static_cast<double>(c.gridPinpoints[i][0]));
    hw.Set(1u, static_cast<double>(c.gridPinpoints[i][1]));
    pinpoints.Set(i, hw);
  }
  proc.Set("gridPinpoints", pinpoints);
  proc.Set("maxImageSide", static_cast<double>(kMaxImageSide));
  proc.Set("maxImagePixels", static_cast<double>(kMaxImagePixels));
  o.Set("processor", proc);
  const VisionTokens& t = m.tokens;
  Napi::Object tokens = Napi::Object::New(env);
  tokens.Set("image", tokenToJs(env, t.image, c.imageTokenId));
  tokens.Set("fakeAroundImage", tokenToJs(env, t.fakeAroundImage, t.fakeAroundImageId));
  tokens.Set("globalImage", tokenToJs(env, t.globalImage, t.globalImageId));
  Napi::Array rowCol = Napi::Array::New(env, 36);
  for (uint32_t k = 0; k < 36; k++)
    rowCol.Set(k, tokenToJs(env, "<row_" + std::to_string(k / 6 + 1) + "_col_" + std::to_string(k % 6 + 1) + ">", t.rowColIds[k]));
  tokens.Set("rowCol", rowCol);
  tokens.Set("startOfImage", tokenToJs(env, t.startOfImage, t.startOfImageId));
  tokens.Set("endOfImage", tokenToJs(env, t.endOfImage, t.endOfImageId));
  o.Set("tokens", tokens);
  return o;
}

Napi::Value DisposeVisionModel(const Napi::CallbackInfo& info) {
  // A running pass holds its own reference: the weights go when it finishes.
  glue::handleBox<VisionEncoder>(info.Env(), info[0], kVisionHandle, "vision")->ptr.reset();
  return info.Env().Undefined();
}

// preprocessImage(vision, rgb: Uint8Array, width, height) -> Promise<{tiles, tileCount, rows, cols}>
Napi::Value PreprocessImage(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<VisionEncoder> enc = visionArg(env, info[0]);
  if (info.Length() < 4 || !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(env, "rgb must be a Uint8Array");
  Napi::Uint8Array rgb = info[1].As<Napi::Uint8Array>();
  const int64_t width = glue::intArg(env, info[2], "width", 1, kMaxImageSide);
  const int64_t height = glue::intArg(env, info[3], "height", 1, kMaxImageSide);
  if (std::string why = checkImage(width, height, rgb.ElementLength()); !why.empty())
    throw Napi::RangeError::New(env, "image: " + why);
  const uint8_t* data = rgb.Data();
  return glue::Work<PreprocessedImage>::queue(
      env, "prism.preprocessImage", glue::ErrorPolicy{"preprocessImage: ", "preprocessImage: out of memory", false, true},
      [enc, data, width, height] {
        const VisionModel& m = *enc->model();
        switch (m.cfg.family) {
          case VisionFamily::Llava: return preprocessClip(m.processor, data, width, height);
          case VisionFamily::LlavaNext: return preprocessLlavaNext(m.cfg, m.processor, data, width, height);
          case VisionFamily::Gemma3: return preprocessGemma3(m.processor, data, width, height);
          case VisionFamily::Idefics3: break;
        }
        return preprocessIdefics3(m.processor, data, width, height);
      },
      [](Napi::Env e, PreprocessedImage& r) -> Napi::Value {
        Napi::Float32Array tiles = Napi::Float32Array::New(e, r.tiles.size());
        std::copy(r.tiles.begin(), r.tiles.end(), tiles.Data());
        Napi::Object o = Napi::Object::New(e);
        o.Set("tiles", tiles);
        o.Set("tileCount", static_cast<double>(r.n));
        o.Set("rows", static_cast<double>(r.rows));
        o.Set("cols", static_cast<double>(r.cols));
        return o;
      },
      {}, rgb);
}

// Tiles one pass may take: several images' tiles batched, bounded so a pass's buffers stay small.
constexpr int64_t kMaxTilesPerPass = 256;

// encodeImage(vision, tiles: Float32Array [n × 3 × T × T], n) -> Promise<Float32Array [n × tokensPerTile × textHidden]>
Napi::Value EncodeImage(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<VisionEncoder> enc = visionArg(env, info[0]);
  if (info.Length() < 3 || !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
    throw Napi::TypeError::New(env, "tiles must be a Float32Array");
  Napi::Float32Array tiles = info[1].As<Napi::Float32Array>();
  const int64_t n = glue::intArg(env, info[2], "n", 1, kMaxTilesPerPass);
  const VisionConfig& c = enc->model()->cfg;
  const size_t perTile = static_cast<size_t>(3 * c.tile * c.tile);
  if (tiles.ElementLength() != static_cast<size_t>(n) * perTile)
    throw Napi::RangeError::New(env, "tiles holds " + std::to_string(tiles.ElementLength()) + " values, not n x 3 x " +
                                         std::to_string(c.tile) + " x " + std::to_string(c.tile) + " = " +
                                         std::to_string(static_cast<size_t>(n) * perTile));
  const float* data = tiles.Data();
  for (size_t i = 0; i < tiles.ElementLength(); i++)
    if (!std::isfinite(data[i])) throw Napi::RangeError::New(env, "tiles[" + std::to_string(i) + "] is not a finite number");
  return glue::Work<std::vector<float>>::queue(
      env, "prism.encodeImage", glue::ErrorPolicy{"encodeImage: ", "encodeImage: out of memory", false, true},
      [enc, data, n] {
        const VisionConfig& cfg = enc->model()->cfg;
        std::vector<float> out(static_cast<size_t>(n * cfg.tokensPerTile() * cfg.textHidden));
        enc->encode(data, n, out.data());
        return out;
      },
      [](Napi::Env e, std::vector<float>& r) -> Napi::Value {
        Napi::Float32Array out = Napi::Float32Array::New(e, r.size());
        std::copy(r.begin(), r.end(), out.Data());
        return out;
      },
      {}, tiles);
}

// packImageFeatures(vision, rows: Float32Array, width, height) -> Promise<Float32Array>: LLaVA-1.6's
// image rows (llava_next_pack.h) from encodeImage's rows of one image's preprocessed tiles.
Napi::Value PackImageFeatures(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<VisionEncoder> enc = visionArg(env, info[0]);
  const VisionModel& m = *enc->model();
  if (m.cfg.family != VisionFamily::LlavaNext)
    throw Napi::TypeError::New(env, std::string("packImageFeatures: a ") + familyName(m.cfg.family) +
                                        " model's tile rows are its image rows (LLaVA-1.6 packs them)");
  if (info.Length() < 4 || !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
    throw Napi::TypeError::New(env, "rows must be a Float32Array");
  Napi::Float32Array rows = info[1].As<Napi::Float32Array>();
  const int64_t width = glue::intArg(env, info[2], "width", 1, kMaxImageSide);
  const int64_t height = glue::intArg(env, info[3], "height", 1, kMaxImageSide);
  const UnpaddedGrid g = unpaddedGrid(m.cfg, width, height);
  const size_t expected = static_cast<size_t>((1 + g.rows * g.cols) * m.cfg.tokensPerTile() * m.cfg.textHidden);
  if (rows.ElementLength() != expected)
    throw Napi::RangeError::New(env, "rows holds " + std::to_string(rows.ElementLength()) + " values; a " + std::to_string(width) +
                                         "x" + std::to_string(height) + " image's " + std::to_string(1 + g.rows * g.cols) +
                                         " tiles give " + std::to_string(expected));
  const float* data = rows.Data();
  return glue::Work<std::vector<float>>::queue(
      env, "prism.packImageFeatures", glue::ErrorPolicy{"packImageFeatures: ", "packImageFeatures: out of memory", false, true},
      [enc, data, width, height] {
        const VisionModel& model = *enc->model();
        std::vector<float> out(static_cast<size_t>(llavaNextRows(model.cfg, width, height) * model.cfg.textHidden));
        packLlavaNext(model, data, width, height, out.data());
        return out;
      },
      [](Napi::Env e, std::vector<float>& r) -> Napi::Value {
        Napi::Float32Array out = Napi::Float32Array::New(e, r.size());
        std::copy(r.begin(), r.end(), out.Data());
        return out;
      },
      {}, rows);
}

}  // namespace

void registerVisionExports(Napi::Env env, Napi::Object exports) {
  exports.Set("isVisionModel", Napi::Function::New(env, IsVisionModel));
  exports.Set("loadVisionModel", Napi::Function::New(env, LoadVisionModel));
  exports.Set("visionInfo", Napi::Function::New(env, VisionInfo));
  exports.Set("disposeVisionModel", Napi::Function::New(env, DisposeVisionModel));
  exports.Set("preprocessImage", Napi::Function::New(env, PreprocessImage));
  exports.Set("encodeImage", Napi::Function::New(env, EncodeImage));
  exports.Set("packImageFeatures", Napi::Function::New(env, PackImageFeatures));
}

}  // namespace prism
