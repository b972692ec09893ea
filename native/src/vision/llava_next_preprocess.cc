#include "vision/llava_next_preprocess.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "vision/clip_preprocess.h"
#include "vision/pil_resample.h"

namespace prism {

std::array<int64_t, 2> selectBestResolution(int64_t height, int64_t width, const std::vector<std::array<int64_t, 2>>& pinpoints) {
  std::array<int64_t, 2> best = pinpoints.front();
  int64_t maxEffective = 0;
  double minWasted = std::numeric_limits<double>::infinity();
  for (const auto& [h, w] : pinpoints) {
    // Python's float arithmetic, step for step: scale in double, sides truncated by int().
    const double scale = std::min(static_cast<double>(w) / static_cast<double>(width), static_cast<double>(h) / static_cast<double>(height));
    const auto dw = static_cast<int64_t>(static_cast<double>(width) * scale), dh = static_cast<int64_t>(static_cast<double>(height) * scale);
    const int64_t effective = std::min(dw * dh, width * height);
    const double wasted = static_cast<double>(w * h - effective);
    if (effective > maxEffective || (effective == maxEffective && wasted < minWasted)) {
      maxEffective = effective;
      minWasted = wasted;
      best = {h, w};
    }
  }
  return best;
}

namespace {

// get_patch_output_size: the side that scales less fills its target; the other is ceil'd.
std::array<int64_t, 2> patchOutputSize(int64_t height, int64_t width, int64_t th, int64_t tw) {
  const double sw = static_cast<double>(tw) / static_cast<double>(width), sh = static_cast<double>(th) / static_cast<double>(height);
  if (sw < sh) return {std::min(static_cast<int64_t>(std::ceil(static_cast<double>(height) * sw)), th), tw};
  return {th, std::min(static_cast<int64_t>(std::ceil(static_cast<double>(width) * sh)), tw)};
}

// One crop-sized tile (or the base square) through CLIPImageProcessor's per-patch steps,
// appended to out's tiles.
void appendTile(const ImageProcessorConfig& p, const uint8_t* rgb, int64_t w, int64_t h, PreprocessedImage& out) {
  const PreprocessedImage t = preprocessClip(p, rgb, w, h);
  out.tiles.insert(out.tiles.end(), t.tiles.begin(), t.tiles.end());
  out.n++;
}

}  // namespace

PreprocessedImage preprocessLlavaNext(const VisionConfig& c, const ImageProcessorConfig& p, const uint8_t* rgb, int64_t width,
                                      int64_t height) {
  const auto filter = static_cast<PilFilter>(p.resample);
  const auto [th, tw] = selectBestResolution(height, width, c.gridPinpoints);
  const auto [nh, nw] = patchOutputSize(height, width, th, tw);
  const std::vector<uint8_t> resized = pilResizeRgb(rgb, width, height, nw, nh, filter);
  // _pad_for_patching: np.pad with 0, (target - new) // 2 before, the rest after.
  const int64_t top = (th - nh) / 2, left = (tw - nw) / 2;
  std::vector<uint8_t> padded(static_cast<size_t>(th * tw * 3), 0);
  for (int64_t y = 0; y < nh; y++)
    std::copy_n(&resized[static_cast<size_t>(y * nw * 3)], nw * 3, &padded[static_cast<size_t>(((top + y) * tw + left) * 3)]);

  PreprocessedImage out;
  out.rows = th / p.cropHeight;
  out.cols = tw / p.cropWidth;
  // The base tile: the whole image resized to a shortest_edge square (not keeping its aspect).
  const int64_t se = p.shortestEdge;
  const std::vector<uint8_t> base = pilResizeRgb(rgb, width, height, se, se, filter);
  appendTile(p, base.data(), se, se, out);
  // divide_to_patches: crop_size tiles, row by row (the reader checked the pinpoints divide).
  const int64_t ch = p.cropHeight, cw = p.cropWidth;
  std::vector<uint8_t> tile(static_cast<size_t>(ch * cw * 3));
  for (int64_t r = 0; r < out.rows; r++)
    for (int64_t col = 0; col < out.cols; col++) {
      for (int64_t y = 0; y < ch; y++)
        std::copy_n(&padded[static_cast<size_t>(((r * ch + y) * tw + col * cw) * 3)], cw * 3, &tile[static_cast<size_t>(y * cw * 3)]);
      appendTile(p, tile.data(), cw, ch, out);
    }
  return out;
}

}  // namespace prism
