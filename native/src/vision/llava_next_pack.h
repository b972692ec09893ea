// LLaVA-1.6's image rows from its tiles' rows, as LlavaNextModel.pack_image_features lays them
// out ('spatial_unpad'): the base tile's rows first; then the grid tiles' patch rows placed as
// the image they came from (rows × cols tiles of side × side patches), the rows or columns that
// only saw padding cut off (unpad_image, from the original image's size), and image_newline
// after each remaining row. The count is LlavaNextProcessor._get_number_of_features' (less the
// class token for 'default'): what the prompt writes as <image> tokens.
#pragma once
#include <cstdint>

#include "vision/vision_model.h"

namespace prism {

// The kept window of the (rows · side) x (cols · side) patch grid, for an image of this size.
struct UnpaddedGrid {
  int64_t rows = 0, cols = 0;     // tiles of the grid (the best pinpoint / the tile)
  int64_t top = 0, height = 0;    // the patch rows kept: [top, top + height)
  int64_t left = 0, width = 0;    // the patch columns kept: [left, left + width)
};
UnpaddedGrid unpaddedGrid(const VisionConfig& c, int64_t imageWidth, int64_t imageHeight);

// Image rows of an image of this size: the base tile's, then height x (width + 1).
int64_t llavaNextRows(const VisionConfig& c, int64_t imageWidth, int64_t imageHeight);

// tiles: [(1 + rows × cols) × tokensPerTile × textHidden], the encoder's rows of
// preprocessLlavaNext's tiles in their order; out: [llavaNextRows × textHidden].
void packLlavaNext(const VisionModel& m, const float* tiles, int64_t imageWidth, int64_t imageHeight, float* out);

}  // namespace prism
