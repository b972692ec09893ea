// Idefics3ImageProcessor (SmolVLM's image processor), its PIL backend step for step, on one
// RGB image: resize the longest edge to size.longest_edge (capped at 4096), resize up to
// multiples of the tile edge, split into rows x cols tiles plus the whole image resized to
// one tile (the global image, last), then rescale and normalise each channel. Every resize
// is PIL's (pil_resample.h), so the tiles equal transformers' pixel_values to float rounding.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "vision/vision_model.h"

namespace prism {

struct PreprocessedImage {
  std::vector<float> tiles;  // [n × 3 × T × T], channel-first
  int64_t n = 0;
  // The split grid (Idefics3Processor writes <row_R_col_C> per tile); 0 x 0 when the image is
  // one tile (no global image then).
  int64_t rows = 0, cols = 0;
};

// Bounds on what preprocessImage accepts: each side at most this, and at most kMaxImagePixels.
inline constexpr int64_t kMaxImageSide = 1 << 15;
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 26;

// The first rule the image breaks ("" when it is fine): its sizes against the bounds above and
// its byte count. Any aspect ratio is fine: every resized side is at least 1 pixel.
std::string checkImage(int64_t width, int64_t height, size_t bytes);

// rgb: [height × width × 3] bytes, checked by checkImage.
PreprocessedImage preprocessIdefics3(const ImageProcessorConfig& p, const uint8_t* rgb, int64_t width, int64_t height);

}  // namespace prism
