// Idefics3: patch embedding (a matmul over patches unfolded channel, row, column, as Conv2d's
// weight is laid out) + bias + position -> N x pre-norm layers (LayerNorm, attention over the
// tile's own patches, residual; LayerNorm, GELU MLP, residual) -> post LayerNorm -> pixel
// shuffle (each scale x scale block of patches becomes one row, block rows outer) -> the
// modality projection. The tower up to the post LayerNorm is Gemma 3's too (gemma3_encoder.cc). The patch unfolding and the layers are CLIP's too (clip_encoder.cc).
// Matmuls on kernels.h's matmulManyTokens; attention shared with the text encoders
// (encoder/packed_attention.h); per-row vector work in encoder_math.h.
#include "vision/vision_encoder.h"

#include <cstring>

#include "encoder/encoder_math.h"
#include "encoder/packed_attention.h"

namespace prism {
namespace {

// x[i] = quick_gelu(x[i] + bias[i]) in place: v·σ(1.702 v) (CLIP's activation).
void biasQuickGelu(float* x, const float* bias, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), k = _mm256_set1_ps(-1.702f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(bias + i));
    _mm256_storeu_ps(x + i, _mm256_div_ps(v, _mm256_add_ps(one, simd::exp(_mm256_mul_ps(k, v)))));
  }
  for (; i < n; i++) {
    const float v = x[i] + bias[i];
    x[i] = v / (1.0f + std::exp(-1.702f * v));
  }
}

}  // namespace

VisionEncoder::VisionEncoder(std::shared_ptr<VisionModel> model, int threads) : model_(std::move(model)), pool_(threads) {
  scores_.resize(pool_.size());
  for (auto& s : scores_) s.resize(packedAttentionScratch(model_->cfg.sequencePerTile(), model_->cfg.headDim));
}

void VisionEncoder::linear(const LinearGroup& g, const float* x, int64_t n, float* y, int64_t ldy) {
  for (const auto& part : g.parts) matmulManyTokens(part.w, x, n, g.inFeatures, y + part.outOffset, ldy, pool_, scratch_);
}

void VisionEncoder::encode(const float* tiles, int64_t n, float* out) {
  const std::lock_guard<std::mutex> lock(mu_);
  switch (model_->cfg.family) {
    case VisionFamily::Llava:
    case VisionFamily::LlavaNext: return encodeClip(tiles, n, out);
    case VisionFamily::Gemma3: return encodeGemma3(tiles, n, out);
    case VisionFamily::Idefics3: return encodeIdefics3(tiles, n, out);
  }
}

void VisionEncoder::unfoldPatches(const float* tiles, int64_t n, float* patches) {
  const VisionConfig& c = model_->cfg;
  const int64_t p = c.patch, side = c.patchesPerSide(), P = c.patchesPerTile(), K = 3 * p * p, img = c.tile;
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
}

void VisionEncoder::runLayers(float* x, float* h, int64_t n, int64_t S) {
  const VisionModel& m = *model_;
  const VisionConfig& c = m.cfg;
  const int64_t T = n * S, D = c.hidden, I = c.intermediate;
  const float eps = static_cast<float>(c.eps);
  std::vector<float> qkv(static_cast<size_t>(T * 3 * D)), attn(static_cast<size_t>(T * D)), tmp(attn.size());
  std::vector<float> ffn(static_cast<size_t>(T * I));
  std::vector<int32_t> offsets(n + 1);
  for (int64_t i = 0; i <= n; i++) offsets[i] = static_cast<int32_t>(i * S);
  auto norm = [&](const std::vector<float>& w, const std::vector<float>& b) {
    forRange(pool_, T, D, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; t++) enc::layerNorm(&x[t * D], w.data(), b.data(), &h[t * D], D, eps);
    });
  };
  for (const VisionLayer& L : m.layers) {
    norm(L.norm1W, L.norm1B);
    linear(L.qkv, h, T, qkv.data(), 3 * D);
    forRange(pool_, T, 3 * D, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; t++) simd::addInPlace(&qkv[t * 3 * D], L.qkvBias.data(), 3 * D);
    });
    packedAttention(pool_, qkv.data(), attn.data(), offsets.data(), static_cast<int32_t>(n), c.heads, c.headDim, scores_);
    linear(L.o, attn.data(), T, tmp.data(), D);
    forRange(pool_, T, D, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; t++) enc::addBiasResidual(&x[t * D], &tmp[t * D], L.oBias.data(), D);
    });
    norm(L.norm2W, L.norm2B);
    linear(L.up, h, T, ffn.data(), I);
    const bool tanh = c.ffn == EncoderFfn::GeluTanh;
    forRange(pool_, T, I * 8, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; t++) {
        float* row = &ffn[t * I];
        if (c.quickGelu) biasQuickGelu(row, L.upBias.data(), I);
        else if (tanh) enc::biasGeluTanh(row, L.upBias.data(), I);
        else enc::biasGeluErf(row, L.upBias.data(), I);
      }
    });
    linear(L.down, ffn.data(), T, tmp.data(), D);
    forRange(pool_, T, D, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; t++) enc::addBiasResidual(&x[t * D], &tmp[t * D], L.downBias.data(), D);
    });
  }
}

void VisionEncoder::siglipTower(const float* tiles, int64_t n, std::vector<float>& x, std::vector<float>& h) {
  const VisionModel& m = *model_;
  const VisionConfig& c = m.cfg;
  const int64_t p = c.patch, P = c.patchesPerTile(), T = n * P, D = c.hidden, K = 3 * p * p;
  const float eps = static_cast<float>(c.eps);
  std::vector<float> patches(static_cast<size_t>(T * K));
  x.assign(static_cast<size_t>(T * D), 0.0f);
  h.assign(x.size(), 0.0f);
  unfoldPatches(tiles, n, patches.data());
  linear(m.patchEmbed, patches.data(), T, x.data(), D);
  forRange(pool_, T, D, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; t++) {
      simd::addInPlace(&x[t * D], m.patchBias.data(), D);
      simd::addInPlace(&x[t * D], &m.positions[(t % P) * D], D);
    }
  });
  runLayers(x.data(), h.data(), n, P);
  forRange(pool_, T, D, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; t++) enc::layerNorm(&x[t * D], m.postNormW.data(), m.postNormB.data(), &h[t * D], D, eps);
  });
}

void VisionEncoder::encodeIdefics3(const float* tiles, int64_t n, float* out) {
  const VisionModel& m = *model_;
  const VisionConfig& c = m.cfg;
  const int64_t side = c.patchesPerSide(), P = c.patchesPerTile(), T = n * P, D = c.hidden;
  const int64_t s = c.scaleFactor, W = D * s * s;
  scratch_.reserve(T, std::max<int64_t>(m.maxLinearCols, W), pool_.size());
  std::vector<float> x, h;
  siglipTower(tiles, n, x, h);
  // Idefics3Connector.pixel_shuffle: output row (i, j) of a tile is the concatenation, over
  // a in [0, s) then b in [0, s), of patch (i·s + a, j·s + b).
  const int64_t outSide = side / s, rowsPerTile = outSide * outSide;
  std::vector<float>& shuffled = x;  // T / s² rows of W = D·s² values: the same size as T × D
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
