#include "vision/llava_next_pack.h"

#include <cmath>
#include <cstring>

#include "vision/llava_next_preprocess.h"

namespace prism {

namespace {

// int(round(x, 7)) for x >= 0: Python rounds to 7 decimals first so that a side that is
// an integer up to float error (31.9999999) is not truncated one short.
int64_t truncRounded7(double x) { return std::llround(x * 1e7) / 10000000; }

}  // namespace

UnpaddedGrid unpaddedGrid(const VisionConfig& c, int64_t imageWidth, int64_t imageHeight) {
  UnpaddedGrid g;
  // get_anyres_image_grid_shape: the best pinpoint in whole tiles of the encoder's image_size.
  const auto [bh, bw] = selectBestResolution(imageHeight, imageWidth, c.gridPinpoints);
  g.rows = bh / c.tile;
  g.cols = bw / c.tile;
  const int64_t side = c.patchesPerSide(), curH = g.rows * side, curW = g.cols * side;
  g.height = curH;
  g.width = curW;
  const double w = static_cast<double>(imageWidth), h = static_cast<double>(imageHeight);
  // unpad_image: the image filled the grid along the side whose aspect it exceeds; the padding
  // along the other, (current - new) // 2 on each end, is cut.
  if (w / h > static_cast<double>(curW) / static_cast<double>(curH)) {
    const int64_t newH = truncRounded7(h * (static_cast<double>(curW) / w));
    g.top = (curH - newH) / 2;
    g.height = curH - 2 * g.top;
  } else {
    const int64_t newW = truncRounded7(w * (static_cast<double>(curH) / h));
    g.left = (curW - newW) / 2;
    g.width = curW - 2 * g.left;
  }
  return g;
}

int64_t llavaNextRows(const VisionConfig& c, int64_t imageWidth, int64_t imageHeight) {
  const UnpaddedGrid g = unpaddedGrid(c, imageWidth, imageHeight);
  return c.tokensPerTile() + g.height * (g.width + 1);
}

void packLlavaNext(const VisionModel& m, const float* tiles, int64_t imageWidth, int64_t imageHeight, float* out) {
  const VisionConfig& c = m.cfg;
  const UnpaddedGrid g = unpaddedGrid(c, imageWidth, imageHeight);
  const int64_t H = c.textHidden, R = c.tokensPerTile(), side = c.patchesPerSide();
  const size_t rowBytes = static_cast<size_t>(H) * sizeof(float);
  std::memcpy(out, tiles, static_cast<size_t>(R) * rowBytes);
  float* dst = out + R * H;
  for (int64_t y = g.top; y < g.top + g.height; y++) {
    for (int64_t x = g.left; x < g.left + g.width; x++) {
      // Patch (y, x) of the grid: tile (y / side, x / side) after the base, its row-major patch.
      const int64_t tile = 1 + (y / side) * g.cols + x / side, patch = (y % side) * side + x % side;
      std::memcpy(dst, tiles + (tile * R + patch) * H, rowBytes);
      dst += H;
    }
    std::memcpy(dst, m.imageNewline.data(), rowBytes);
    dst += H;
  }
}

}  // namespace prism
