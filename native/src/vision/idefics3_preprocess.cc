#include "vision/idefics3_preprocess.h"

#include <cmath>

#include "vision/pil_resample.h"

namespace prism {
namespace {

constexpr int64_t kMaxImageSize = 4096;  // transformers' MAX_IMAGE_SIZE for Idefics3

struct Size {
  int64_t h = 0, w = 0;
};

// _resize_output_size_rescale_to_max_len, then _resize_output_size_scale_below_upper_bound
// (Python's int() truncates; aspect ratios in double, as Python's floats).
Size firstResize(int64_t h, int64_t w, int64_t maxLen) {
  double aspect = static_cast<double>(w) / static_cast<double>(h);
  if (w >= h) {
    w = maxLen;
    h = static_cast<int64_t>(static_cast<double>(w) / aspect);
    if (h % 2 != 0) h += 1;
  } else {
    h = maxLen;
    w = static_cast<int64_t>(static_cast<double>(h) * aspect);
    if (w % 2 != 0) w += 1;
  }
  h = std::max<int64_t>(h, 1);
  w = std::max<int64_t>(w, 1);
  aspect = static_cast<double>(w) / static_cast<double>(h);
  if (w >= h && w > kMaxImageSize) {
    w = kMaxImageSize;
    h = static_cast<int64_t>(static_cast<double>(w) / aspect);
  } else if (h > w && h > kMaxImageSize) {
    h = kMaxImageSize;
    w = static_cast<int64_t>(static_cast<double>(h) * aspect);
  }
  return {std::max<int64_t>(h, 1), std::max<int64_t>(w, 1)};
}

int64_t ceilTo(int64_t v, int64_t t) { return static_cast<int64_t>(std::ceil(static_cast<double>(v) / static_cast<double>(t))) * t; }

// resize_for_vision_encoder: both sides up to multiples of the tile edge.
Size tileMultiple(Size s, int64_t t) {
  const double aspect = static_cast<double>(s.w) / static_cast<double>(s.h);
  Size o;
  if (s.w >= s.h) {
    o.w = ceilTo(s.w, t);
    o.h = ceilTo(static_cast<int64_t>(static_cast<double>(o.w) / aspect), t);
  } else {
    o.h = ceilTo(s.h, t);
    o.w = ceilTo(static_cast<int64_t>(static_cast<double>(o.h) * aspect), t);
  }
  return o;
}

// The sizes the processor resizes through: after the first resize, and the tile-multiple
// (splitting) or tile-square (no splitting) size.
Size finalSize(const ImageProcessorConfig& p, int64_t width, int64_t height, Size* first) {
  *first = firstResize(height, width, p.longestEdge);
  return p.doImageSplitting ? tileMultiple(*first, p.tileEdge) : Size{p.tileEdge, p.tileEdge};
}

}  // namespace

std::string checkImage(int64_t width, int64_t height, size_t bytes) {
  if (width < 1 || width > kMaxImageSide) return "width must be in [1, " + std::to_string(kMaxImageSide) + "]";
  if (height < 1 || height > kMaxImageSide) return "height must be in [1, " + std::to_string(kMaxImageSide) + "]";
  if (width * height > kMaxImagePixels)
    return "the image's " + std::to_string(width * height) + " pixels exceed " + std::to_string(kMaxImagePixels);
  if (bytes != static_cast<size_t>(width * height * 3))
    return "rgb holds " + std::to_string(bytes) + " bytes, not width x height x 3 = " + std::to_string(width * height * 3);
  return "";
}

PreprocessedImage preprocessIdefics3(const ImageProcessorConfig& p, const uint8_t* rgb, int64_t width, int64_t height) {
  const PilFilter filter = static_cast<PilFilter>(p.resample);
  const int64_t T = p.tileEdge;
  Size first;
  const Size s = finalSize(p, width, height, &first);
  std::vector<uint8_t> image = pilResizeRgb(rgb, width, height, first.w, first.h, filter);
  image = pilResizeRgb(image.data(), first.w, first.h, s.w, s.h, filter);
  PreprocessedImage out;
  // Tiles as [y][x][c] bytes first (crops of the resized image, then the global image).
  std::vector<std::vector<uint8_t>> tiles;
  if (s.h > T || s.w > T) {
    out.rows = (s.h - T) / T + 1;
    out.cols = (s.w - T) / T + 1;
    for (int64_t r = 0; r < out.rows; r++)
      for (int64_t c = 0; c < out.cols; c++) {
        std::vector<uint8_t> t(static_cast<size_t>(T * T * 3));
        for (int64_t y = 0; y < T; y++)
          std::copy_n(&image[((r * T + y) * s.w + c * T) * 3], T * 3, &t[y * T * 3]);
        tiles.push_back(std::move(t));
      }
    tiles.push_back(pilResizeRgb(image.data(), s.w, s.h, T, T, filter));
  } else {
    tiles.push_back(std::move(image));  // exactly T x T: a multiple of T no larger than T
  }
  out.n = static_cast<int64_t>(tiles.size());
  out.tiles.resize(static_cast<size_t>(out.n * 3 * T * T));
  for (int64_t i = 0; i < out.n; i++)
    for (int64_t c = 0; c < 3; c++) {
      float* dst = &out.tiles[(i * 3 + c) * T * T];
      for (int64_t j = 0; j < T * T; j++) {
        // transformers: float32(float64(byte) * rescale_factor), then (x - mean) / std in float32.
        float v = p.doRescale ? static_cast<float>(static_cast<double>(tiles[i][j * 3 + c]) * p.rescaleFactor)
                              : static_cast<float>(tiles[i][j * 3 + c]);
        if (p.doNormalize) v = (v - p.mean[c]) / p.std[c];
        dst[j] = v;
      }
    }
  return out;
}

}  // namespace prism
