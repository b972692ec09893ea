// The encoder's forward pass over a packed batch: embeddings (token + position + token type,
// LayerNorm) -> N x post-norm layers (attention over the input's own tokens, residual,
// LayerNorm; GELU or SwiGLU FFN, residual, LayerNorm) -> the pooling head, the classifier
// head or every token's hidden state. Matmuls on kernels.h's matmulManyTokens (float weights on
// the GEMM of float_gemm.h: an input's vectors do not depend on its batch); everything
// else per token in AVX2 (encoder_math.h).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "encoder/encoder_context.h"
#include "encoder/encoder_math.h"
#include "encoder/packed_attention.h"
#include "encoder/pooling.h"

namespace prism {

EncoderContext::EncoderContext(std::shared_ptr<EncoderModel> model, const EncoderContextOptions& opts)
    : model_(std::move(model)), cfg_(model_->cfg), opts_(opts), pool_(opts.threads) {
  const int64_t T = opts.maxBatchTokens, D = cfg_.hidden;
  x_.resize(T * D);
  qkv_.resize(T * 3 * D);
  attn_.resize(T * D);
  tmp_.resize(T * D);
  ffn_.resize(T * (cfg_.ffn == EncoderFfn::SwiGlu ? 3 : 1) * cfg_.intermediate);
  const int64_t longest = std::min(cfg_.maxTokens(), T);
  attnScratch_.resize(pool_.size());
  for (auto& s : attnScratch_) s.resize(packedAttentionScratch(longest, cfg_.headDim));
  if (cfg_.arch == EncoderArch::NomicBert) {
    const int64_t half = cfg_.headDim / 2;
    ropeCos_.resize(longest * half);
    ropeSin_.resize(longest * half);
    for (int64_t p = 0; p < longest; p++)
      for (int64_t i = 0; i < half; i++) {
        // Angles in double, as the decoder's tables (forward.cc): positions times frequencies.
        const double a = static_cast<double>(p) / std::pow(cfg_.ropeTheta, 2.0 * static_cast<double>(i) / static_cast<double>(cfg_.headDim));
        ropeCos_[p * half + i] = static_cast<float>(std::cos(a));
        ropeSin_[p * half + i] = static_cast<float>(std::sin(a));
      }
  }
  cls_.resize(opts.maxSeqs * D);
  clsHidden_.resize(opts.maxSeqs * D);
  scratch_.reserve(T, std::max(model_->maxLinearCols, D), pool_.size());
}

std::string EncoderContext::check(const EncoderBatch& b, EncoderOutput what) const {
  if (b.S < 1) return "seqOffsets: a batch needs at least one input";
  if (b.S > opts_.maxSeqs) return "seqOffsets: " + std::to_string(b.S) + " inputs exceed the context's maxSeqs " + std::to_string(opts_.maxSeqs);
  if (b.seqOffsets[0] != 0) return "seqOffsets[0] must be 0";
  for (int32_t s = 0; s < b.S; s++) {
    const int64_t n = static_cast<int64_t>(b.seqOffsets[s + 1]) - b.seqOffsets[s];
    if (n < 1) return "seqOffsets: input " + std::to_string(s) + " is empty";
    if (n > cfg_.maxTokens())
      return "seqOffsets: input " + std::to_string(s) + " has " + std::to_string(n) + " tokens, more than the model's " +
             std::to_string(cfg_.maxTokens());
  }
  if (b.T() > opts_.maxBatchTokens)
    return "tokens: " + std::to_string(b.T()) + " tokens exceed the context's maxBatchTokens " + std::to_string(opts_.maxBatchTokens);
  for (int32_t t = 0; t < b.T(); t++) {
    if (b.tokens[t] < 0 || b.tokens[t] >= cfg_.vocab)
      return "tokens[" + std::to_string(t) + "] = " + std::to_string(b.tokens[t]) + " is outside the vocabulary (0.." +
             std::to_string(cfg_.vocab - 1) + ")";
    if (b.tokenTypes && (b.tokenTypes[t] < 0 || b.tokenTypes[t] >= std::max<int64_t>(cfg_.typeVocab, 1)))
      return "tokenTypes[" + std::to_string(t) + "] = " + std::to_string(b.tokenTypes[t]) + " is outside the model's " +
             std::to_string(std::max<int64_t>(cfg_.typeVocab, 1)) + " token types";
  }
  if (what == EncoderOutput::Pooled && cfg_.pooling.modes.empty())
    return "output: the model states no pooling (ask for 'tokens' and pool them, or load it with a pooling)";
  if (what == EncoderOutput::Scores && cfg_.numLabels == 0) return "output: the model has no classifier head";
  return "";
}

void EncoderContext::linear(const LinearGroup& g, const float* x, int64_t n, float* y, int64_t ldy) {
  for (const auto& part : g.parts) matmulManyTokens(part.w, x, n, g.inFeatures, y + part.outOffset, ldy, pool_, scratch_);
}

void EncoderContext::embed(const EncoderBatch& b) {
  const int64_t D = cfg_.hidden;
  const EncoderModel& m = *model_;
  const float eps = static_cast<float>(cfg_.eps);
  forRange(b.S, D * 64, [&](int64_t s0, int64_t s1, int) {
    std::vector<float> row(D);
    for (int64_t s = s0; s < s1; s++)
      for (int32_t t = b.seqOffsets[s]; t < b.seqOffsets[s + 1]; t++) {
        dequantizeRow(m.embedType, m.embedData, D, b.tokens[t], row.data());
        if (!m.positions.empty()) simd::addInPlace(row.data(), &m.positions[(t - b.seqOffsets[s] + cfg_.positionOffset) * D], D);
        if (!m.tokenTypes.empty()) simd::addInPlace(row.data(), &m.tokenTypes[(b.tokenTypes ? b.tokenTypes[t] : 0) * D], D);
        enc::layerNorm(row.data(), m.embNormW.data(), m.embNormB.data(), &x_[t * D], D, eps);
      }
  });
}

namespace {

// Rotates one head vector in rotate_half pairs (i, i + d/2).
inline void ropeHalf(float* v, const float* cs, const float* sn, int64_t half) {
  for (int64_t i = 0; i < half; i++) {
    const float a = v[i], c = v[half + i];
    v[i] = a * cs[i] - c * sn[i];
    v[half + i] = a * sn[i] + c * cs[i];
  }
}

}  // namespace

// Bidirectional attention over each input's own tokens (encoder/packed_attention.h).
void EncoderContext::attention(const EncoderBatch& b) {
  packedAttention(pool_, qkv_.data(), attn_.data(), b.seqOffsets, b.S, cfg_.heads, cfg_.headDim, attnScratch_);
}

void EncoderContext::layer(const EncoderLayer& L, const EncoderBatch& b) {
  const int64_t T = b.T(), D = cfg_.hidden, I = cfg_.intermediate, hd = cfg_.headDim, half = hd / 2;
  const float eps = static_cast<float>(cfg_.eps);
  linear(L.qkv, x_.data(), T, qkv_.data(), 3 * D);
  const bool rotary = cfg_.arch == EncoderArch::NomicBert;
  forRange(b.S, 3 * D * 64, [&](int64_t s0, int64_t s1, int) {
    for (int64_t s = s0; s < s1; s++)
      for (int32_t t = b.seqOffsets[s]; t < b.seqOffsets[s + 1]; t++) {
        float* row = &qkv_[t * 3 * D];
        if (!L.qkvBias.empty()) simd::addInPlace(row, L.qkvBias.data(), 3 * D);
        if (!rotary) continue;
        const int64_t pos = t - b.seqOffsets[s];
        for (int64_t h = 0; h < 2 * cfg_.heads; h++) ropeHalf(row + h * hd, &ropeCos_[pos * half], &ropeSin_[pos * half], half);
      }
  });
  attention(b);
  linear(L.o, attn_.data(), T, tmp_.data(), D);
  forRange(T, D, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; t++) {
      enc::addBiasResidual(&x_[t * D], &tmp_[t * D], L.oBias.empty() ? nullptr : L.oBias.data(), D);
      enc::layerNorm(&x_[t * D], L.attnNormW.data(), L.attnNormB.data(), &x_[t * D], D, eps);
    }
  });
  if (cfg_.ffn == EncoderFfn::SwiGlu) {
    // [gate | up] per token, then silu(gate) * up into the third slot of the row.
    linear(L.up, x_.data(), T, ffn_.data(), 3 * I);
    forRange(T, I * 4, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; t++) simd::swiglu(&ffn_[t * 3 * I], &ffn_[t * 3 * I + I], &ffn_[t * 3 * I + 2 * I], I);
    });
    matmulManyTokens(L.down.parts[0].w, ffn_.data() + 2 * I, T, 3 * I, tmp_.data(), D, pool_, scratch_);
  } else {
    linear(L.up, x_.data(), T, ffn_.data(), I);
    const float* bias = L.upBias.empty() ? nullptr : L.upBias.data();
    const bool tanh = cfg_.ffn == EncoderFfn::GeluTanh;
    forRange(T, I * 8, [&](int64_t t0, int64_t t1, int) {
      for (int64_t t = t0; t < t1; t++)
        tanh ? enc::biasGeluTanh(&ffn_[t * I], bias, I) : enc::biasGeluErf(&ffn_[t * I], bias, I);
    });
    linear(L.down, ffn_.data(), T, tmp_.data(), D);
  }
  forRange(T, D, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; t++) {
      enc::addBiasResidual(&x_[t * D], &tmp_[t * D], L.downBias.empty() ? nullptr : L.downBias.data(), D);
      enc::layerNorm(&x_[t * D], L.outNormW.data(), L.outNormB.data(), &x_[t * D], D, eps);
    }
  });
}

// The classifier on each input's first token: [dense + bias, tanh] (BERT's pooler,
// RoBERTa's classifier.dense), then out_proj + bias -> numLabels logits.
void EncoderContext::classify(const EncoderBatch& b, float* out) {
  const int64_t D = cfg_.hidden, S = b.S, C = cfg_.numLabels;
  const EncoderModel& m = *model_;
  for (int64_t s = 0; s < S; s++) std::memcpy(&cls_[s * D], &x_[b.seqOffsets[s] * D], D * sizeof(float));
  const float* in = cls_.data();
  if (!m.clsDense.parts.empty()) {
    linear(m.clsDense, cls_.data(), S, clsHidden_.data(), D);
    for (int64_t s = 0; s < S; s++)
      for (int64_t i = 0; i < D; i++) clsHidden_[s * D + i] = std::tanh(clsHidden_[s * D + i] + m.clsDenseBias[i]);
    in = clsHidden_.data();
  }
  linear(m.clsOut, in, S, out, C);
  for (int64_t s = 0; s < S; s++) simd::addInPlace(out + s * C, m.clsOutBias.data(), C);
}

void EncoderContext::run(const EncoderBatch& b, EncoderOutput what, float* out) {
  embed(b);
  for (const EncoderLayer& L : model_->layers) layer(L, b);
  const int64_t D = cfg_.hidden;
  switch (what) {
    case EncoderOutput::Tokens: std::memcpy(out, x_.data(), static_cast<size_t>(b.T()) * D * sizeof(float)); break;
    case EncoderOutput::Scores: classify(b, out); break;
    case EncoderOutput::Pooled:
      forRange(b.S, D * 64, [&](int64_t s0, int64_t s1, int) {
        for (int64_t s = s0; s < s1; s++) {
          const int32_t t0 = b.seqOffsets[s];
          poolInput(cfg_.pooling.modes, &x_[t0 * D], b.seqOffsets[s + 1] - t0, D, out + s * pooledDim());
        }
      });
      break;
  }
}

}  // namespace prism
