// LLaVA's image side on one batch of tiles (CLIPVisionTransformer as LlavaModel.
// get_image_features runs it): per tile the class embedding, then the patch embedding (a matmul
// over unfolded patches, vision_encoder.cc's), plus the learned positions (the class token's
// first) -> pre_layrnorm -> the layers up to vision_feature_layer (the shared pre-norm loop)
// -> the patch rows ('default'; 'full' keeps the class row first) -> linear_1, GELU, linear_2.
#include <cstring>

#include "encoder/encoder_math.h"
#include "vision/vision_encoder.h"

namespace prism {

void VisionEncoder::encodeClip(const float* tiles, int64_t n, float* out) {
  const VisionModel& m = *model_;
  const VisionConfig& c = m.cfg;
  const int64_t p = c.patch, P = c.patchesPerTile(), S = c.sequencePerTile(), T = n * S, D = c.hidden, H = c.textHidden;
  const int64_t K = 3 * p * p, R = c.tokensPerTile(), skip = S - R;
  const float eps = static_cast<float>(c.eps);
  scratch_.reserve(T, std::max({m.maxLinearCols, D, H}), pool_.size());
  std::vector<float> patches(static_cast<size_t>(n * P * K)), embedded(static_cast<size_t>(n * P * D));
  std::vector<float> x(static_cast<size_t>(T * D)), h(x.size());
  unfoldPatches(tiles, n, patches.data());
  linear(m.patchEmbed, patches.data(), n * P, embedded.data(), D);
  forRange(pool_, T, D, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; t++) {
      const int64_t tile = t / S, i = t % S;
      float* row = &h[t * D];
      if (i == 0) {
        std::memcpy(row, m.classEmbed.data(), D * sizeof(float));
      } else {
        std::memcpy(row, &embedded[(tile * P + i - 1) * D], D * sizeof(float));
        simd::addInPlace(row, m.patchBias.data(), D);
      }
      simd::addInPlace(row, &m.positions[i * D], D);
      enc::layerNorm(row, m.preNormW.data(), m.preNormB.data(), &x[t * D], D, eps);
    }
  });
  runLayers(x.data(), h.data(), n, S);
  // The selected rows, tile by tile, then the projector.
  const int64_t rows = n * R;
  std::vector<float>& selected = h;
  for (int64_t tile = 0; tile < n; tile++)
    std::memcpy(&selected[tile * R * D], &x[(tile * S + skip) * D], static_cast<size_t>(R * D) * sizeof(float));
  std::vector<float> mid(static_cast<size_t>(rows * H));
  linear(m.projection, selected.data(), rows, mid.data(), H);
  const bool tanh = c.projectorFfn == EncoderFfn::GeluTanh;
  forRange(pool_, rows, H * 8, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; r++)
      tanh ? enc::biasGeluTanh(&mid[r * H], m.projectionBias.data(), H) : enc::biasGeluErf(&mid[r * H], m.projectionBias.data(), H);
  });
  linear(m.projection2, mid.data(), rows, out, H);
  forRange(pool_, rows, H, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; r++) simd::addInPlace(&out[r * H], m.projection2Bias.data(), H);
  });
}

}  // namespace prism
