#include "vision/gemma3_preprocess.h"

#include "vision/clip_preprocess.h"
#include "vision/pil_resample.h"

namespace prism {

PreprocessedImage preprocessGemma3(const ImageProcessorConfig& p, const uint8_t* rgb, int64_t width, int64_t height) {
  const int64_t edge = p.tileEdge;
  const std::vector<uint8_t> image = pilResizeRgb(rgb, width, height, edge, edge, static_cast<PilFilter>(p.resample));
  return normalizedTile(p, image.data(), edge, 0, 0, edge, edge);
}

}  // namespace prism
