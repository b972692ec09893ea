// Gemma3ImageProcessor (Gemma 3's image processor) as transformers' PIL backend runs it by
// default, on one RGB image: resize to size.height x size.width (the encoder's image_size,
// aspect ratio not kept) with the folder's resampling (bilinear by default; PIL's,
// pil_resample.h), rescale, normalise each channel. One crop: pan-and-scan is refused at load.
#pragma once
#include <cstdint>

#include "vision/idefics3_preprocess.h"
#include "vision/vision_model.h"

namespace prism {

// rgb: [height × width × 3] bytes, checked by checkImage. Returns one tile (rows = cols = 0).
PreprocessedImage preprocessGemma3(const ImageProcessorConfig& p, const uint8_t* rgb, int64_t width, int64_t height);

}  // namespace prism
