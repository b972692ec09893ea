// LlavaNextImageProcessor (LLaVA-1.6's anyres preprocessing) as transformers' PIL backend runs
// it, on one RGB image: the best of image_grid_pinpoints for the image's size
// (select_best_resolution), the image resized into it keeping its aspect (each side
// get_patch_output_size's), padded to it with zeros centred (the odd pixel after), split into
// tile x tile crops row by row; before them the whole image resized to a shortest_edge square
// (the base tile). Each tile then goes through CLIPImageProcessor's steps (shortest-edge resize,
// center crop, rescale, normalise; clip_preprocess.h), as _preprocess does, so the tiles equal
// pixel_values to float rounding.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "vision/idefics3_preprocess.h"
#include "vision/vision_model.h"

namespace prism {

// select_best_resolution: the {height, width} of `pinpoints` that keeps most of the image's
// pixels after a downscale to fit (int(side · scale)), the least wasted area on a tie, the first
// on a full tie.
std::array<int64_t, 2> selectBestResolution(int64_t height, int64_t width, const std::vector<std::array<int64_t, 2>>& pinpoints);

// rgb: [height × width × 3] bytes, checked by checkImage. Returns 1 + rows × cols tiles, the
// base tile first, then the grid row by row (rows × cols: the best resolution / the tile).
PreprocessedImage preprocessLlavaNext(const VisionConfig& c, const ImageProcessorConfig& p, const uint8_t* rgb, int64_t width,
                                      int64_t height);

}  // namespace prism
