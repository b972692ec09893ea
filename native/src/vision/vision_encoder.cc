// Patch embedding (a matmul over patches unfolded channel, row, column, as Conv2d's weight
// is laid out) + bias + position -> N x pre-norm layers (LayerNorm, attention over the tile's
// own patches, residual; LayerNorm, GELU MLP, residual) -> post LayerNorm -> pixel shuffle
// (each scale x scale block of patches becomes one row, block rows outer) -> the modality
// projection. Matmuls on kernels.h's matmulManyTokens; attention shared with the text encoders
// (encoder/packed_attention.h); per-row vector work in encoder_math.h.
#include "vision/vision_encoder.h"

#include <cstring>

#include "encoder/encoder_math.h"
#include "encoder/packed_attention.h"

namespace prism {

VisionEncoder::VisionEncoder(std::shared_ptr<VisionModel> model, int threads) : model_(std::move(model)), pool_(threads) {
  scores_.resize(pool_.size());
  for (auto& s : scores_) s.resize(model_->cfg.patchesPerTile());
}

void VisionEncoder::linear(const LinearGroup& g, const float* x, int64_t n, float* y, int64_t ldy) {
  for (const auto& part : g.parts) matmulManyTokens(part.w, x, n, g.inFeatures, y + part.outOffset, ldy, pool_, scratch_);
}

void VisionEncoder::encode(const float* tiles, int64_t n, float* out) {
  const std::lock_guard<std::mutex> lock(mu_);
  const VisionModel& m = *model_;
  const VisionConfig& c = m.cfg;
  const int64_t p = c.patch, side = c.patchesPerSide(), P = c.patchesPerTile(), T = n * P, D = c.hidden;
  const int64_t I = c.intermediate, K = 3 * p * p, img = c.tile, s = c.scaleFactor, W = D * s * s;
  const float eps = static_cast<float>(c.eps);
  scratch_.reserve(T, std::max<int64_t>(m.maxLinearCols, W), pool_.size());
  std::vector<float> patches(static_cast<size_t>(T * K)), x(static_cast<size_t>(T * D)), h(x.size()), tmp(x.size());
  std::vector<float> qkv(static_cast<size_t>(T * 3 * D)), attn(x.size()), ffn(static_cast<size_t>(T * I));

  forRange(pool_, n * side, K * side, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; r++) {
      const int64_t tile = r / side, py = r % side;
      for (int64_t px = 0; px < side; px++) {
        float* row = &patches[(tile * P + py * side + px) * K];
        for (int64_t ch = 0; ch < 3; ch++)
          for (int64_t ky = 0; ky < p; ky++)
            std::memcpy(row + (ch * p + ky) * p, &tiles[((tile * 3 + ch) * img + py * p + ky) * img + px * p], p * sizeof(float));
      }
    }
  });
  linear(m.patchEmbed, patches.data(), T, x.data(), D);
  forRange(pool_, T, D, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; t++) {
      simd::addInPlace(&x[t * D], m.patchBias.data(), D);
      simd::addInPlace(&x[t * D], &m.positions[(t % P) * D], D);
    }
  });
  std::vector<int32_t> offsets(n + 1);
  for (int64_t i = 0; i <= n; i++) offsets[i] = static_cast<int32_t>(i * P);
  auto norm = [&](const std::vector<float>& w, const std::vector<float>& b) {
    forRange(pool_, T, D, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; t++) enc::layerNorm(&x[t * D], w.data(), b.data(), &h[t * D], D, eps);
    });
  };
  for (const VisionLayer& L : m.layers) {
    norm(L.norm1W, L.norm1B);
    linear(L.qkv, h.data(), T, qkv.data(), 3 * D);
    forRange(pool_, T, 3 * D, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; t++) simd::addInPlace(&qkv[t * 3 * D], L.qkvBias.data(), 3 * D);
    });
    packedAttention(pool_, qkv.data(), attn.data(), offsets.data(), static_cast<int32_t>(n), c.heads, c.headDim, scores_);
    linear(L.o, attn.data(), T, tmp.data(), D);
    forRange(pool_, T, D, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; t++) enc::addBiasResidual(&x[t * D], &tmp[t * D], L.oBias.data(), D);
    });
    norm(L.norm2W, L.norm2B);
    linear(L.up, h.data(), T, ffn.data(), I);
    const bool tanh = c.ffn == EncoderFfn::GeluTanh;
    forRange(pool_, T, I * 8, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; t++)
        tanh ? enc::biasGeluTanh(&ffn[t * I], L.upBias.data(), I) : enc::biasGeluErf(&ffn[t * I], L.upBias.data(), I);
    });
    linear(L.down, ffn.data(), T, tmp.data(), D);
    forRange(pool_, T, D, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; t++) enc::addBiasResidual(&x[t * D], &tmp[t * D], L.downBias.data(), D);
    });
  }
  norm(m.postNormW, m.postNormB);
  // Idefics3Connector.pixel_shuffle: output row (i, j) of a tile is the concatenation, over
  // a in [0, s) then b in [0, s), of patch (i·s + a, j·s + b).
  const int64_t outSide = side / s, rowsPerTile = outSide * outSide;
  std::vector<float>& shuffled = patches;  // T / s² rows of W = D·s² values: the same size as T × D
  shuffled.resize(static_cast<size_t>(T * D));
  forRange(pool_, n * rowsPerTile, W, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; r++) {
      const int64_t tile = r / rowsPerTile, i = (r % rowsPerTile) / outSide, j = r % outSide;
      float* dst = &shuffled[r * W];
      for (int64_t a = 0; a < s; a++)
        for (int64_t b = 0; b < s; b++)
          std::memcpy(dst + (a * s + b) * D, &h[(tile * P + (i * s + a) * side + j * s + b) * D], D * sizeof(float));
    }
  });
  linear(m.projection, shuffled.data(), n * rowsPerTile, out, c.textHidden);
}

}  // namespace prism
