#include "vision/clip_preprocess.h"

#include <algorithm>

#include "vision/pil_resample.h"

namespace prism {

PreprocessedImage preprocessClip(const ImageProcessorConfig& p, const uint8_t* rgb, int64_t width, int64_t height) {
  // get_resize_output_image_size(default_to_square=False): the short side becomes shortestEdge.
  const int64_t shortSide = std::min(width, height), longSide = std::max(width, height);
  const int64_t newShort = p.shortestEdge;
  const int64_t newLong = std::max<int64_t>(
      1, static_cast<int64_t>(static_cast<double>(newShort) * static_cast<double>(longSide) / static_cast<double>(shortSide)));
  const int64_t w = width <= height ? newShort : newLong, h = width <= height ? newLong : newShort;
  const std::vector<uint8_t> image = pilResizeRgb(rgb, width, height, w, h, static_cast<PilFilter>(p.resample));
  // The reader guarantees shortestEdge >= the crop, so the crop lies inside the image.
  const int64_t ch = p.cropHeight, cw = p.cropWidth, top = (h - ch) / 2, left = (w - cw) / 2;
  return normalizedTile(p, image.data(), w, top, left, ch, cw);
}

PreprocessedImage normalizedTile(const ImageProcessorConfig& p, const uint8_t* image, int64_t w, int64_t top, int64_t left,
                                 int64_t ch, int64_t cw) {
  PreprocessedImage out;
  out.n = 1;
  out.tiles.resize(static_cast<size_t>(3 * ch * cw));
  for (int64_t c = 0; c < 3; c++) {
    float* dst = &out.tiles[c * ch * cw];
    for (int64_t y = 0; y < ch; y++)
      for (int64_t x = 0; x < cw; x++) {
        const uint8_t byte = image[((top + y) * w + left + x) * 3 + c];
        // transformers: float32(float64(byte) * rescale_factor), then (x - mean) / std in float32.
        float v = p.doRescale ? static_cast<float>(static_cast<double>(byte) * p.rescaleFactor) : static_cast<float>(byte);
        if (p.doNormalize) v = (v - p.mean[c]) / p.std[c];
        dst[y * cw + x] = v;
      }
  }
  return out;
}

}  // namespace prism
