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

// The ch x cw window at (top, left) of a resized RGB image `w` pixels wide, rescaled and
// normalised as transformers does, as one channel-first tile (CLIP's and Gemma 3's last step).
PreprocessedImage normalizedTile(const ImageProcessorConfig& p, const uint8_t* image, int64_t w, int64_t top, int64_t left,
                                 int64_t ch, int64_t cw);

}  // namespace prism
