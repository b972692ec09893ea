// Which reader a vision-language model's path takes, by family and form: an Idefics3 / SmolVLM
// folder (vision_hf.cc) or mmproj GGUF (vision_gguf.cc), a LLaVA folder (clip_hf.cc) or mmproj
// GGUF (clip_gguf.cc), a Gemma 3 folder (gemma3_hf.cc) or mmproj GGUF (gemma3_gguf.cc); and the image-token naming the Idefics3 readers share.
#include <filesystem>
#include <regex>

#include "format_error.h"
#include "vision/vision_model.h"

namespace fs = std::filesystem;

namespace prism {

void noteVisionToken(VisionTokens& t, const std::string& text, int64_t id) {
  static const std::regex rowCol(R"(^<row_([1-6])_col_([1-6])>$)");
  std::smatch m;
  if (text == t.image) t.imageId = id;
  else if (text == t.fakeAroundImage) t.fakeAroundImageId = id;
  else if (text == t.globalImage) t.globalImageId = id;
  else if (std::regex_match(text, m, rowCol)) t.rowColIds[(std::stoi(m[1]) - 1) * 6 + std::stoi(m[2]) - 1] = id;
}

bool isVisionModelPath(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return isVisionFolder(path) || isLlavaFolder(path) || isGemma3Folder(path);
  return fs::is_regular_file(path, ec) && (isVisionGguf(path) || isLlavaGguf(path) || isGemma3Gguf(path));
}

std::shared_ptr<VisionModel> loadVisionModel(const std::string& path, const std::string& textModel) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!textModel.empty())
      throw FormatError(path, "", "textModel applies to an mmproj GGUF; a folder's tokenizer.json gives the image tokens");
    if (isGemma3Folder(path)) return loadGemma3Folder(path);
    return isLlavaFolder(path) ? loadLlavaFolder(path) : loadVisionFolder(path);
  }
  if (!fs::is_regular_file(path, ec))
    throw FormatError(path, "", "a vision-language model is a Hugging Face folder or an mmproj GGUF; this is neither");
  if (isGemma3Gguf(path)) return loadGemma3Gguf(path, textModel);
  return isLlavaGguf(path) ? loadLlavaGguf(path, textModel) : loadVisionGguf(path, textModel);
}

}  // namespace prism
