// The mmproj readers' shared metadata accessors (vision_gguf.cc, clip_gguf.cc, gemma3_gguf.cc):
// each names the file and the key in its error; and their shared steps: the text GGUF's
// vocabulary, the tensors renamed and built.
#pragma once
#include <cmath>
#include <exception>
#include <string>

#include "format_error.h"
#include "gguf.h"
#include "hf_files.h"
#include "vision/vision_model.h"

namespace prism::vision_keys {

inline std::string stringKey(const GgufFile& g, const std::string& key) {
  const GgufValue* v = g.find(key);
  return v && v->type == GgufType::STRING ? v->s : "";
}

inline bool boolKey(const GgufFile& g, const std::string& key, bool fallback) {
  const GgufValue* v = g.find(key);
  if (!v) return fallback;
  if (v->type != GgufType::BOOL) throw FormatError(g.file->path(), "", "metadata '" + key + "' must be a boolean");
  return v->u != 0;
}

inline void channelTriple(const GgufFile& g, const std::string& key, float* out, bool positive) {
  const GgufValue* v = g.find(key);
  if (!v) return;
  if (v->type != GgufType::ARRAY || v->items.size() != 3)
    throw FormatError(g.file->path(), "", "metadata '" + key + "' must be an array of 3 numbers");
  for (int i = 0; i < 3; i++) {
    const GgufValue& x = v->items[i];
    if (!x.isNumber() || !std::isfinite(x.asDouble()) || (positive && !(x.asDouble() > 0)))
      throw FormatError(g.file->path(), "", "metadata '" + key + "' must hold " + (positive ? "positive" : "finite") + " numbers");
    out[i] = static_cast<float>(x.asDouble());
  }
}

// The SigLIP tower's clip.vision.* shape (vision_gguf.cc, gemma3_gguf.cc), each bound checked.
inline void readSiglipShape(const GgufFile& g, VisionConfig& cfg) {
  const std::string& path = g.file->path();
  const std::string v = "clip.vision.";
  cfg.hidden = ggufInt(g, v + "embedding_length", 8, 1 << 14);
  cfg.layers = ggufInt(g, v + "block_count", 1, 256);
  cfg.heads = ggufInt(g, v + "attention.head_count", 1, 256);
  cfg.intermediate = ggufInt(g, v + "feed_forward_length", 1, 1 << 17);
  cfg.patch = ggufInt(g, v + "patch_size", 1, 64);
  cfg.tile = ggufInt(g, v + "image_size", 1, 4096);
  cfg.eps = ggufNum(g, v + "attention.layer_norm_epsilon", 1e-6, 0, 1);
  // The converter marks SigLIP's MLP as GELU, which llama.cpp runs as the tanh form (SigLIP's).
  if (!boolKey(g, "clip.use_gelu", true)) throw FormatError(path, "", "clip.use_gelu must be true for a SigLIP tower (its GELU)");
  cfg.ffn = EncoderFfn::GeluTanh;
  if (cfg.hidden % cfg.heads != 0) throw FormatError(path, "", "embedding_length is not a multiple of attention.head_count");
  cfg.headDim = cfg.hidden / cfg.heads;
  if (cfg.headDim % 8 != 0 || cfg.headDim > 512)
    throw FormatError(path, "", "the vision head dim " + std::to_string(cfg.headDim) + " must be a multiple of 8 and at most 512");
  if (cfg.tile % cfg.patch != 0) throw FormatError(path, "", "clip.vision.image_size is not a multiple of patch_size");
}

// Whether `path` is an mmproj GGUF (general.architecture 'clip') of clip.projector_type
// `projector`; never throws (the loader names what is wrong with a file).
inline bool isClipGgufOf(const std::string& path, const char* projector) {
  try {
    const GgufFile g = readGguf(path, false);
    return stringKey(g, "general.architecture") == "clip" && stringKey(g, "clip.projector_type") == projector;
  } catch (const std::exception&) {
    return false;
  }
}

// Calls note(text, id) for each token of the text GGUF's vocabulary (tokenizer.ggml.tokens): an
// mmproj carries no token ids, so the readers find the image tokens there.
template <class Note>
void forEachTextToken(const std::string& textModel, Note note) {
  const GgufFile text = readGguf(textModel, false);
  const GgufValue* tokens = text.find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != GgufType::ARRAY || tokens->itemType != GgufType::STRING)
    throw FormatError(textModel, "", "the text model has no tokenizer.ggml.tokens string array");
  for (size_t id = 0; id < tokens->items.size(); id++) note(tokens->items[id].s, static_cast<int64_t>(id));
}

// The mmproj's tensors under the folder reader's names (internalName: "" = not the model's, an
// error saying it is not part of `what`), built by `build` into m; then the file's resident pages
// are let go, as the weights are prepared.
template <class Rename, class Build>
void buildMmprojWeights(VisionModel& m, const GgufFile& g, Rename internalName, const std::string& what, Build build) {
  const std::string& path = g.file->path();
  TensorSet set;
  set.file = path;
  set.maps.push_back(g.file);
  for (const GgufTensor& t : g.tensors) {
    const std::string name = internalName(t.name);
    if (name.empty()) throw FormatError(path, t.name, "tensor is not part of " + what);
    set.tensors[name] = SourceTensor{t.type, t.dims, t.data, t.bytes};
    set.originalNames[name] = t.name;
  }
  m.maps = set.maps;
  build(m, set);
  for (const auto& map : m.maps) map->releaseResidentPages();
}

}  // namespace prism::vision_keys
