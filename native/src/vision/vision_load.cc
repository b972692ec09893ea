// Which reader a vision-language model's path takes: a Hugging Face folder (vision_hf.cc) or
// llama.cpp's mmproj GGUF (vision_gguf.cc); and the image-token naming both share.
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
  if (fs::is_directory(path, ec)) return isVisionFolder(path);
  return fs::is_regular_file(path, ec) && isVisionGguf(path);
}

std::shared_ptr<VisionModel> loadVisionModel(const std::string& path, const std::string& textModel) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!textModel.empty())
      throw FormatError(path, "", "textModel applies to an mmproj GGUF; a folder's tokenizer.json gives the image tokens");
    return loadVisionFolder(path);
  }
  if (!fs::is_regular_file(path, ec))
    throw FormatError(path, "", "a vision-language model is a Hugging Face folder or an mmproj GGUF; this is neither");
  return loadVisionGguf(path, textModel);
}

}  // namespace prism
