// Gemma 3's image side on one batch of images (Gemma3Model.get_image_features): the SigLIP
// tower up to its post LayerNorm (vision_encoder.cc's), then Gemma3MultiModalProjector: the
// patch grid average-pooled by k = patches per side / sqrt(mm_tokens_per_image) (AvgPool2d,
// kernel = stride = k: output row (i, j), rows outer, is the mean of patches (i·k + a, j·k + b)),
// Gemma's RMSNorm (x / sqrt(mean(x²) + eps) · (1 + w), in float as Gemma3RMSNorm computes it),
// then the input projection into the text model's width.
#include <cmath>

#include "encoder/encoder_math.h"
#include "vision/vision_encoder.h"

namespace prism {

void VisionEncoder::encodeGemma3(const float* tiles, int64_t n, float* out) {
  const VisionModel& m = *model_;
  const VisionConfig& c = m.cfg;
  const int64_t side = c.patchesPerSide(), P = c.patchesPerTile(), T = n * P, D = c.hidden, H = c.textHidden;
  const int64_t R = c.tokensPerTile(), outSide = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(R))));
  const int64_t k = side / outSide;
  const float inv = 1.0f / static_cast<float>(k * k), eps = static_cast<float>(c.eps);
  scratch_.reserve(T, std::max({m.maxLinearCols, D, H}), pool_.size());
  std::vector<float> x, h;
  siglipTower(tiles, n, x, h);
  std::vector<float>& pooled = x;  // n·R rows of D: no larger than the tower's n·P
  forRange(pool_, n * R, D * k * k, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; r++) {
      const int64_t tile = r / R, i = (r % R) / outSide, j = r % outSide;
      float* dst = &pooled[r * D];
      std::fill(dst, dst + D, 0.0f);
      for (int64_t a = 0; a < k; a++)
        for (int64_t b = 0; b < k; b++) simd::addInPlace(dst, &h[(tile * P + (i * k + a) * side + j * k + b) * D], D);
      double sq = 0;
      for (int64_t d = 0; d < D; d++) {
        dst[d] *= inv;
        sq += static_cast<double>(dst[d]) * dst[d];
      }
      const float scale = 1.0f / std::sqrt(static_cast<float>(sq / static_cast<double>(D)) + eps);
      for (int64_t d = 0; d < D; d++) dst[d] = dst[d] * scale * m.softEmbNorm[d];
    }
  });
  linear(m.projection, pooled.data(), n * R, out, H);
}

}  // namespace prism
