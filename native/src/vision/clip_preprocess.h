// CLIPImageProcessor (LLaVA's image processor) as transformers' PIL backend runs it, on one RGB
// image: resize so that the shortest edge is size.shortest_edge (the other edge int(s · long /
// short), Python's truncation) with the folder's resampling (PIL's, pil_resample.h), center
// crop to crop_size (top and left offsets floor((in - crop) / 2)), rescale, normalise each
// channel. One tile, never split: its pixel_values to float rounding.
#pragma once
#include <cstdint>

#include "vision/idefics3_preprocess.h"
#include "vision/vision_model.h"

namespace prism {

// rgb: [height × width × 3] bytes, checked by checkImage. Returns one tile (rows = cols = 0).
PreprocessedImage preprocessClip(const ImageProcessorConfig& p, const uint8_t* rgb, int64_t width, int64_t height);

}  // namespace prism
