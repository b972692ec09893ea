// The forward pass of one step: embeddings → N × (attention block, SwiGLU MLP) → final
// norm → output head for the rows that need logits → sampling. Runs on the stepping thread
// (pool thread 0) with the context's pool; allocates nothing for plans within the limits
// the context was sized for (a 'all'-logits step grows the logits buffer once).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "context.h"
#include "prompt_scores.h"
#include "simd.h"

namespace prism {

Context::Context(std::shared_ptr<Model> model, const ContextOptionsData& opts)
    : model_(std::move(model)), cfg_(model_->cfg), opts_(opts), prefetcher_(opts.threads), pool_(opts.threads) {
  pool_.setIdleWork(&prefetcher_);
  const ModelConfig& c = cfg_;
  const int64_t T = opts.maxBatchTokens, hd = c.headDim;
  qDim_ = c.heads * hd;
  kvDim_ = c.kvHeads * hd;
  qkvDim_ = qDim_ + 2 * kvDim_;
  const size_t kvElems = static_cast<size_t>(kv_.pageLayers * opts.kvBlocks * c.kvHeads * opts.blockSize * hd);
  kCache_.assign(kvElems, 0);
  vCache_.assign(kvElems, 0);
  x_.resize(T * c.hidden);
  xn_.resize(T * std::max(c.hidden, qDim_));
  qkv_.resize(T * qkvDim_);
  attn_.resize(T * qDim_);
  const int64_t ffnWidth = std::max(c.intermediate, c.expertIntermediate);
  gu_.resize(T * 2 * ffnWidth);
  act_.resize(T * ffnWidth);
  tmp_.resize(T * c.hidden);
  // One cos/sin table per distinct RoPE (Gemma 3's sliding layers have their own).
  ropes_.push_back(c.globalRope());
  if (c.localRope) ropes_.push_back(c.localRopeSpec);
  const int64_t half = c.ropeDim / 2;
  ropeCos_.resize(ropes_.size() * T * half);
  ropeSin_.resize(ropes_.size() * T * half);
  invFreq_.resize(ropes_.size() * half);
  for (size_t r = 0; r < ropes_.size(); r++)
    for (int64_t i = 0; i < half; i++) {
      double f = 1.0 / std::pow(ropes_[r].theta, 2.0 * static_cast<double>(i) / static_cast<double>(c.ropeDim));
      if (!ropes_[r].freqFactors.empty()) f /= ropes_[r].freqFactors[i];
      invFreq_[r * half + i] = static_cast<float>(f);
    }
  if (c.experts > 0) {
    routerLogits_.resize(T * c.experts);
    expertChoice_.resize(T * c.expertsUsed);
    expertWeight_.resize(T * c.expertsUsed);
    expertTokens_.resize(c.experts);
    for (auto& v : expertTokens_) v.reserve(T);
    xe_.resize(T * c.hidden);
    ye_.resize(T * c.hidden);
  }
  tokenSeq_.resize(T);
  outRows_.reserve(T);
  seqOutRow_.resize(opts.maxSeqs);
  xSel_.resize(T * c.hidden);
  logits_.resize(opts.maxSeqs * c.vocab);
  attnScratch_.resize(pool_.size());
  const int64_t group = c.heads / c.kvHeads;
  for (auto& s : attnScratch_) s.resize(2 * opts.blockSize * hd + opts.blockSize + kTile * group * (hd + 2));
  tiles_.reserve(T);
  samplerScratch_.resize(pool_.size());
  for (auto& s : samplerScratch_) s.reserve(c.vocab);
  scratch_.reserve(T, std::max(model_->maxLinearCols, c.hidden), pool_.size());
  lora_.init(cfg_, opts.maxLoras, opts.maxLoraRank, T);
  // Decode's prefetch and tile height for this host: cached, measured (about a second, on
  // this model's matmuls) or given (decode_tuning/choose.h).
  decodeTuning_ = chooseDecodeTuning(*model_, pool_, scratch_, prefetcher_, opts.decodeTuning);
  scratch_.setDecodeTuning(decodeTuning_.tuning);
  prefetcher_.setEnabled(decodeTuning_.tuning.idlePrefetch);

  // Plan buffers: reserve the worst case so steady-state steps never reallocate.
  plan.tokens.reserve(T);
  plan.positions.reserve(T);
  for (auto* v : {&plan.seqTokenOffsets, &plan.blockTableOffsets, &plan.penaltyTokenOffsets, &plan.suppressTokenOffsets,
                 &plan.logitBiasOffsets})
    v->reserve(opts.maxSeqs + 1);
  for (auto* v : {&plan.topK, &plan.sampleCounters, &plan.allowedMaskRows, &plan.topLogprobs}) v->reserve(opts.maxSeqs);
  for (auto* v : {&plan.temperature, &plan.topP, &plan.repetitionPenalty, &plan.presencePenalty, &plan.frequencyPenalty,
                 &plan.minP, &plan.typicalP})
    v->reserve(opts.maxSeqs);
  plan.sample.reserve(opts.maxSeqs);
  plan.seeds.reserve(opts.maxSeqs);
  plan.adapterSlots.reserve(opts.maxSeqs);
  plan.draftCounts.reserve(opts.maxSeqs);
  plan.draftOffsets.reserve(opts.maxSeqs + 1);
  result.numAccepted.reserve(opts.maxSeqs);
  result.tokens.reserve(opts.maxSeqs);
  result.logprobs.reserve(opts.maxSeqs);
  result.errors.reserve(opts.maxSeqs);
}

void Context::linear(const LinearGroup& g, const float* x, int64_t n, float* y, int64_t ldy, const LinearGroup& after) {
  for (size_t k = 0; k < g.parts.size(); k++) {
    const LinearWeight* next = k + 1 < g.parts.size() ? &g.parts[k + 1].w
                               : after.parts.empty()  ? nullptr
                                                      : &after.parts.front().w;
    // Only for decode-sized batches: larger ones block their rows in L2 (kernels/q4g.h).
    prefetcher_.setNext(n <= kPrefetchMaxTokens ? next : nullptr);
    matmul(g.parts[k].w, x, n, g.inFeatures, y + g.parts[k].outOffset, ldy, pool_, scratch_);
  }
  prefetcher_.setNext(nullptr);
}

void Context::loraLinear(const LinearGroup& g, int64_t layer, LoraSite site, const float* x, int64_t n, float* y,
                         int64_t ldy, const LinearGroup& after) {
  const PrefetchSpan* spans = nullptr;
  const int count = lora_.prefetchSpans(layer, site, &spans);
  scratch_.setPrefetch(spans, count);
  linear(g, x, n, y, ldy, after);
  scratch_.setPrefetch(nullptr, 0);
}

// Copy-on-write: each [src, dst] pair copies one page (every layer slot of it).
void Context::copyBlocks(const StepPlanData& plan) {
  const int64_t per = cfg_.kvHeads * opts_.blockSize * cfg_.headDim;
  for (size_t k = 0; k + 1 < plan.blockCopies.size(); k += 2) {
    int64_t src = plan.blockCopies[k], dst = plan.blockCopies[k + 1];
    if (src == dst) continue;
    for (int64_t slot = 0; slot < kv_.pageLayers; slot++) {
      const int64_t from = (slot * opts_.kvBlocks + src) * per, to = (slot * opts_.kvBlocks + dst) * per;
      std::memcpy(&kCache_[to], &kCache_[from], per * sizeof(uint16_t));
      std::memcpy(&vCache_[to], &vCache_[from], per * sizeof(uint16_t));
    }
  }
}

void Context::embed(const StepPlanData& plan) {
  const int64_t D = cfg_.hidden;
  forRange(plan.T, D * 4, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; t++) {
      dequantizeRow(model_->embedType, model_->embedData, D, plan.tokens[t], &x_[t * D]);
      if (embedScale_ != 1.0f)
        for (int64_t i = 0; i < D; i++) x_[t * D + i] *= embedScale_;
    }
  });
  // Placed rows (an image's embeddings) replace the looked-up ones as given: the model's
  // embedding scale belongs to its token table, not to an encoder's output (HF's merge).
  const size_t n = plan.embedTokenRows.size();
  for (size_t k = 0; k < n; k++)
    std::memcpy(&x_[plan.embedTokenRows[k] * D], &plan.embedRows[k * D], D * sizeof(float));
}

void Context::ropeTables(const StepPlanData& plan) {
  const int64_t half = cfg_.ropeDim / 2, T = plan.T;
  for (size_t r = 0; r < ropes_.size(); r++) {
    const float* inv = &invFreq_[r * half];
    const double mag = ropes_[r].attnFactor;
    float* cs = &ropeCos_[r * opts_.maxBatchTokens * half];
    float* sn = &ropeSin_[r * opts_.maxBatchTokens * half];
    forRange(T, half * 16, [&](int64_t b, int64_t e, int) {
      for (int64_t t = b; t < e; t++) {
        const double pos = plan.positions[t];
        for (int64_t i = 0; i < half; i++) {
          // Angle in double: positions up to millions times frequencies near 1 lose the
          // fractional part in float.
          double a = pos * static_cast<double>(inv[i]);
          cs[t * half + i] = static_cast<float>(std::cos(a) * mag);
          sn[t * half + i] = static_cast<float>(std::sin(a) * mag);
        }
      }
    });
  }
}

namespace {

// Rotates the first `dims` values of one head vector in place (the rest, under partial
// rotary, pass through).
inline void rope(float* v, const float* cs, const float* sn, int64_t dims, bool neox) {
  const int64_t half = dims / 2;
  if (neox) {
    int64_t i = 0;
    for (; i + 8 <= half; i += 8) {
      __m256 a = _mm256_loadu_ps(v + i), b = _mm256_loadu_ps(v + half + i);
      __m256 c = _mm256_loadu_ps(cs + i), s = _mm256_loadu_ps(sn + i);
      _mm256_storeu_ps(v + i, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)));
      _mm256_storeu_ps(v + half + i, _mm256_fmadd_ps(a, s, _mm256_mul_ps(b, c)));
    }
    for (; i < half; i++) {
      float a = v[i], b = v[half + i];
      v[i] = a * cs[i] - b * sn[i];
      v[half + i] = a * sn[i] + b * cs[i];
    }
  } else {
    for (int64_t i = 0; i < half; i++) {
      float a = v[2 * i], b = v[2 * i + 1];
      v[2 * i] = a * cs[i] - b * sn[i];
      v[2 * i + 1] = a * sn[i] + b * cs[i];
    }
  }
}

}  // namespace

void Context::layer(int64_t l, const StepPlanData& plan) {
  const LayerWeights& L = model_->layers[l];
  const int64_t T = plan.T, D = cfg_.hidden, hd = cfg_.headDim;
  const float eps = static_cast<float>(cfg_.eps);

  forRange(T, D, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; t++) simd::rmsNorm(&x_[t * D], L.attnNorm.data(), &xn_[t * D], D, eps);
  });
  loraLinear(L.qkv, l, LoraSite::Qkv, xn_.data(), T, qkv_.data(), qkvDim_, L.o);
  lora_.apply(l, LoraSite::Qkv, xn_.data(), qkv_.data(), qkvDim_, pool_);

  // Bias, q/k norm, RoPE, the query scale folded into q; K/V written into the paged cache.
  const float qScale = cfg_.queryScale > 0 ? static_cast<float>(cfg_.queryScale) : 1.0f / std::sqrt(static_cast<float>(hd));
  const bool neox = cfg_.ropeNeox;
  const int64_t half = cfg_.ropeDim / 2;
  const size_t table = cfg_.localRope && cfg_.sliding(l) ? 1 : 0;
  const float* cosTable = &ropeCos_[table * opts_.maxBatchTokens * half];
  const float* sinTable = &ropeSin_[table * opts_.maxBatchTokens * half];
  forRange(T, qkvDim_ * 4, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; t++) {
      float* row = &qkv_[t * qkvDim_];
      if (!L.qkvBias.empty()) simd::addInPlace(row, L.qkvBias.data(), qkvDim_);
      const float* cs = cosTable + t * half;
      const float* sn = sinTable + t * half;
      for (int64_t h = 0; h < cfg_.heads + cfg_.kvHeads; h++) {
        float* v = row + h * hd;
        const bool isQ = h < cfg_.heads;
        if (!L.qNorm.empty()) simd::rmsNorm(v, isQ ? L.qNorm.data() : L.kNorm.data(), v, hd, eps);
        rope(v, cs, sn, cfg_.ropeDim, neox);
        if (isQ)
          for (int64_t i = 0; i < hd; i++) v[i] *= qScale;
      }
      const int32_t pos = plan.positions[t];
      const int32_t s = tokenSeq_[t];
      const int32_t block = pageOf(&plan.blockTables[plan.blockTableOffsets[s]], pos / opts_.blockSize, l);
      const int64_t slot = pos % opts_.blockSize;
      for (int64_t g = 0; g < cfg_.kvHeads; g++) {
        const float* k = row + qDim_ + g * hd;
        const float* v = row + qDim_ + kvDim_ + g * hd;
        uint16_t* kd = kAt(l, block, g) + slot * hd;
        uint16_t* vd = vAt(l, block, g) + slot * hd;
        for (int64_t i = 0; i < hd; i += 8) {
          simd::storeHalf8(kd + i, _mm256_loadu_ps(k + i));
          simd::storeHalf8(vd + i, _mm256_loadu_ps(v + i));
        }
      }
    }
  });

  attention(l, plan);
  const bool moe = cfg_.experts > 0;
  const LinearGroup& afterO = moe ? L.moe.router : L.gateUp;
  loraLinear(L.o, l, LoraSite::O, attn_.data(), T, tmp_.data(), D, afterO);
  lora_.apply(l, LoraSite::O, attn_.data(), tmp_.data(), D, pool_);
  forRange(T, D, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; t++) {
      if (!L.postAttnNorm.empty()) simd::rmsNorm(&tmp_[t * D], L.postAttnNorm.data(), &tmp_[t * D], D, eps);
      simd::addInPlace(&x_[t * D], &tmp_[t * D], D);
      simd::rmsNorm(&x_[t * D], L.ffnNorm.data(), &xn_[t * D], D, eps);
    }
  });
  if (moe) expertFfn(l, T);
  else denseFfn(l, T);
  forRange(T, D, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; t++) {
      if (!L.postFfnNorm.empty()) simd::rmsNorm(&tmp_[t * D], L.postFfnNorm.data(), &tmp_[t * D], D, eps);
      simd::addInPlace(&x_[t * D], &tmp_[t * D], D);
    }
  });
}

// The gated FFN of one token: out = act(gate) * up, act = SiLU or tanh GELU.
void Context::gate(const float* gate, const float* up, float* out, int64_t n) const {
  if (cfg_.activation == Activation::GeluTanh) simd::geglu(gate, up, out, n);
  else simd::swiglu(gate, up, out, n);
}

// xn_ (normed input) → tmp_ through the dense gated FFN.
void Context::denseFfn(int64_t l, int64_t T) {
  const LayerWeights& L = model_->layers[l];
  const int64_t D = cfg_.hidden, I = cfg_.intermediate;
  loraLinear(L.gateUp, l, LoraSite::GateUp, xn_.data(), T, gu_.data(), 2 * I, L.down);
  lora_.apply(l, LoraSite::GateUp, xn_.data(), gu_.data(), 2 * I, pool_);
  forRange(T, I * 4, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; t++) gate(&gu_[t * 2 * I], &gu_[t * 2 * I + I], &act_[t * I], I);
  });
  // The next step starts again at layer 0, so the output head's successor is its QKV.
  const LinearGroup& afterDown = l + 1 < cfg_.layers ? model_->layers[l + 1].qkv : model_->output;
  loraLinear(L.down, l, LoraSite::Down, act_.data(), T, tmp_.data(), D, afterDown);
  lora_.apply(l, LoraSite::Down, act_.data(), tmp_.data(), D, pool_);
}

namespace {

// [sum(a[0]), ..., sum(a[7])] of eight vectors (a transposed horizontal add).
inline __m256 reduce8(const __m256* a) {
  __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
  __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
  __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

inline void halfToFloat(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) _mm256_storeu_ps(dst + i, simd::loadHalf8(src + i));
}

}  // namespace

// Causal attention over the paged cache. One work item is (tile of up to kTile consecutive
// tokens of one sequence, KV head): every query head sharing that KV head (GQA group) and
// every token of the tile is done together, so each cached K/V block is converted from F16
// once per item and reused kTile × group times (prefill is otherwise bound by re-reading the
// cache). Softmax is computed online one block of positions at a time (flash-attention
// style), so scratch is one block of K/V, one block of scores and the tile's accumulators.
// With bidirectional spans (plan.attendEnd, Gemma 3's images) a query inside a span sees up to
// the span's end instead of its own position; without them (attendEnd empty) that is pos + 1.
void Context::attention(int64_t l, const StepPlanData& plan) {
  const int64_t hd = cfg_.headDim, G = cfg_.kvHeads, group = cfg_.heads / cfg_.kvHeads, bs = opts_.blockSize;
  const int64_t window = cfg_.layerWindow[l];  // 0: the whole context
  const int64_t nTiles = static_cast<int64_t>(tiles_.size());
  const int64_t items = nTiles * G;
  int64_t maxPos = 0;
  for (int32_t t = 0; t < plan.T; t++) maxPos = std::max<int64_t>(maxPos, plan.positions[t]);
  const int64_t span = window > 0 ? std::min<int64_t>(window + kTile, maxPos + 1) : maxPos + 1;
  const int32_t* ends = plan.attendEnd.empty() ? nullptr : plan.attendEnd.data();
  forRange(items, span * hd * group * kTile, [&](int64_t b, int64_t e, int thread) {
    float* kf = attnScratch_[thread].data();
    float* vf = kf + bs * hd;
    float* sc = vf + bs * hd;                     // [bs]
    float* acc = sc + bs;                         // [kTile × group × hd]
    float* mx = acc + kTile * group * hd;         // [kTile × group]
    float* sum = mx + kTile * group;              // [kTile × group]
    for (int64_t it = b; it < e; it++) {
      const int64_t g = it % G;
      const int32_t t0 = tiles_[it / G].first, nt = tiles_[it / G].second;
      const int32_t* table = &plan.blockTables[plan.blockTableOffsets[tokenSeq_[t0]]];
      const int64_t pos0 = plan.positions[t0];
      int64_t nPosMax = pos0 + nt;  // positions 0 .. pos0+nt-1, or up to the end of a span
      if (ends)
        for (int32_t qi = 0; qi < nt; qi++) nPosMax = std::max<int64_t>(nPosMax, ends[t0 + qi]);
      const int64_t states = nt * group;
      std::fill(acc, acc + states * hd, 0.0f);
      std::fill(mx, mx + states, -INFINITY);
      std::fill(sum, sum + states, 0.0f);
      // A sliding layer's token at position p sees p-window+1 .. p: blocks wholly before the
      // first token's window are never read (the block manager may have released their pages,
      // and another sequence may be writing them).
      const int64_t first = window > 0 ? std::max<int64_t>(0, pos0 - window + 1) : 0;
      for (int64_t blk = first / bs; blk * bs < nPosMax; blk++) {
        const int64_t nBlk = std::min(bs, nPosMax - blk * bs);
        const int32_t page = pageOf(table, blk, l);
        halfToFloat(kAt(l, page, g), kf, nBlk * hd);
        halfToFloat(vAt(l, page, g), vf, nBlk * hd);
        for (int64_t qi = 0; qi < nt; qi++) {
          // Token t0+qi sees positions lo .. end-1 (end = pos0+qi+1: causal within the tile;
          // or its span's end), here block slots j0 .. n-1.
          const int64_t lo = window > 0 ? pos0 + qi - window + 1 : 0;
          const int64_t end = ends ? ends[t0 + qi] : pos0 + qi + 1;
          const int64_t j0 = std::max<int64_t>(0, lo - blk * bs);
          const int64_t n = std::min(nBlk, end - blk * bs) - j0;
          if (n <= 0) continue;
          const float* kb = kf + j0 * hd;
          const float* vb = vf + j0 * hd;
          for (int64_t h = 0; h < group; h++) {
            const int64_t st = qi * group + h;
            const float* q = &qkv_[(t0 + qi) * qkvDim_ + (g * group + h) * hd];
            int64_t j = 0;
            for (; j + 8 <= n; j += 8) {
              __m256 a[8];
              for (int r = 0; r < 8; r++) a[r] = _mm256_setzero_ps();
              for (int64_t i = 0; i < hd; i += 8) {
                const __m256 qv = _mm256_loadu_ps(q + i);
                for (int r = 0; r < 8; r++) a[r] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kb + (j + r) * hd + i), a[r]);
              }
              _mm256_storeu_ps(sc + j, reduce8(a));
            }
            for (; j < n; j++) {
              __m256 d = _mm256_setzero_ps();
              for (int64_t i = 0; i < hd; i += 8) d = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(kb + j * hd + i), d);
              sc[j] = simd::hsum(d);
            }
            float bmax = -INFINITY;
            for (j = 0; j < n; j++) bmax = std::max(bmax, sc[j]);
            const float newMax = std::max(mx[st], bmax);
            const float corr = std::exp(mx[st] - newMax);  // 0 on the first block (exp(-inf))
            const float bsum = simd::expShiftedInPlace(sc, n, newMax);
            sum[st] = sum[st] * corr + bsum;
            mx[st] = newMax;
            float* ah = acc + st * hd;
            const __m256 vc = _mm256_set1_ps(corr);
            // Up to 64 floats of the accumulator stay in 8 registers (independent FMA chains).
            int64_t i0 = 0;
            for (; i0 + 64 <= hd; i0 += 64) {
              __m256 v[8];
              for (int r = 0; r < 8; r++) v[r] = _mm256_mul_ps(_mm256_loadu_ps(ah + i0 + 8 * r), vc);
              for (j = 0; j < n; j++) {
                const __m256 w = _mm256_set1_ps(sc[j]);
                const float* vr = vb + j * hd + i0;
                for (int r = 0; r < 8; r++) v[r] = _mm256_fmadd_ps(w, _mm256_loadu_ps(vr + 8 * r), v[r]);
              }
              for (int r = 0; r < 8; r++) _mm256_storeu_ps(ah + i0 + 8 * r, v[r]);
            }
            for (; i0 < hd; i0 += 8) {  // head dims that are not a multiple of 64
              __m256 v = _mm256_mul_ps(_mm256_loadu_ps(ah + i0), vc);
              for (j = 0; j < n; j++) v = _mm256_fmadd_ps(_mm256_set1_ps(sc[j]), _mm256_loadu_ps(vb + j * hd + i0), v);
              _mm256_storeu_ps(ah + i0, v);
            }
          }
        }
      }
      for (int64_t qi = 0; qi < nt; qi++)
        for (int64_t h = 0; h < group; h++) {
          const int64_t st = qi * group + h;
          float* out = &attn_[(t0 + qi) * qDim_ + (g * group + h) * hd];
          const __m256 inv = _mm256_set1_ps(1.0f / sum[st]);
          for (int64_t i = 0; i < hd; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(acc + st * hd + i), inv));
        }
    }
  });
}

// Logits rows: per sequence that samples, its last token's, or with k draft tokens its last
// k+1 tokens' (the position before each draft token verifies it; the last gives the token
// after them). seqOutRow_[s] is the first of them.
void Context::outputHead(const StepPlanData& plan, StepResultData& out) {
  const int64_t D = cfg_.hidden, V = cfg_.vocab, S = plan.S;
  outRows_.clear();
  auto drafts = [&](int64_t s) { return plan.draftCounts.empty() ? 0 : plan.draftCounts[s]; };
  if (plan.returnLogits == ReturnLogits::All) {
    for (int32_t t = 0; t < plan.T; t++) outRows_.push_back(t);
    for (int64_t s = 0; s < S; s++) seqOutRow_[s] = plan.seqTokenOffsets[s + 1] - 1 - drafts(s);
  } else {
    for (int64_t s = 0; s < S; s++) {
      const bool need = plan.returnLogits == ReturnLogits::Last || plan.returnHidden || plan.sample[s] || plan.topLogprobs[s] >= 0;
      seqOutRow_[s] = need ? static_cast<int32_t>(outRows_.size()) : -1;
      if (!need) continue;
      for (int32_t t = plan.seqTokenOffsets[s + 1] - 1 - drafts(s); t < plan.seqTokenOffsets[s + 1]; t++)
        outRows_.push_back(t);
    }
  }
  const int64_t R = static_cast<int64_t>(outRows_.size());
  out.logits = nullptr;
  out.logitRows = 0;
  out.hidden = nullptr;
  if (R == 0) return;
  const float eps = static_cast<float>(cfg_.eps);
  forRange(R, D, [&](int64_t b, int64_t e, int) {
    for (int64_t r = b; r < e; r++) simd::rmsNorm(&x_[outRows_[r] * D], model_->outputNorm.data(), &xSel_[r * D], D, eps);
  });
  if (plan.returnHidden) {  // a pooling step: the normed rows are its result, no logits
    out.hidden = xSel_.data();
    return;
  }
  if (static_cast<size_t>(R * V) > logits_.size()) logits_.resize(R * V);  // 'all', or many draft rows
  linear(model_->output, xSel_.data(), R, logits_.data(), V, model_->layers.front().qkv);
  if (plan.returnLogits != ReturnLogits::None) {
    out.logits = logits_.data();
    out.logitRows = plan.returnLogits == ReturnLogits::All ? plan.T : S;
  }
}

void Context::sampleAll(const StepPlanData& plan, StepResultData& out) {
  const int64_t S = plan.S, V = cfg_.vocab, words = (V + 31) / 32, D = plan.draftTotal;
  int32_t stride = 0;
  for (int64_t s = 0; s < S; s++) stride = std::max(stride, plan.topLogprobs[s]);
  out.topStride = stride;
  out.tokens.assign(S, -1);
  out.logprobs.assign(S, NAN);
  out.topIds.assign(S * stride, -1);
  out.topValues.assign(S * stride, NAN);
  out.errors.resize(S);
  for (auto& e : out.errors) e.clear();
  out.anyError = false;
  out.numAccepted.assign(plan.draftCounts.empty() ? 0 : S, 0);
  out.acceptedLogprobs.assign(D, NAN);
  out.acceptedTopIds.assign(D * stride, -1);
  out.acceptedTopValues.assign(D * stride, NAN);
  forRange(S, V, [&](int64_t b, int64_t e, int thread) {
    for (int64_t s = b; s < e; s++) {
      if (!plan.sample[s] && plan.topLogprobs[s] < 0) continue;
      SampleParams p;
      p.temperature = plan.temperature[s];
      p.topK = plan.topK[s];
      p.topP = plan.topP[s];
      p.repetitionPenalty = plan.repetitionPenalty[s];
      p.presencePenalty = plan.presencePenalty[s];
      p.frequencyPenalty = plan.frequencyPenalty[s];
      p.penaltyTokens = plan.penaltyTokens.data() + plan.penaltyTokenOffsets[s];
      p.penaltyCount = plan.penaltyTokenOffsets[s + 1] - plan.penaltyTokenOffsets[s];
      if (!plan.suppressTokenOffsets.empty()) {
        p.suppressTokens = plan.suppressTokens.data() + plan.suppressTokenOffsets[s];
        p.suppressCount = plan.suppressTokenOffsets[s + 1] - plan.suppressTokenOffsets[s];
      }
      if (!plan.logitBiasOffsets.empty()) {
        p.biasTokens = plan.logitBiasTokens.data() + plan.logitBiasOffsets[s];
        p.biasValues = plan.logitBiasValues.data() + plan.logitBiasOffsets[s];
        p.biasCount = plan.logitBiasOffsets[s + 1] - plan.logitBiasOffsets[s];
      }
      if (!plan.minP.empty()) p.minP = plan.minP[s];
      if (!plan.typicalP.empty()) p.typicalP = plan.typicalP[s];
      p.seed = plan.seeds[s];
      p.topLogprobs = plan.topLogprobs[s];
      const uint32_t* masks = plan.allowedMaskRows[s] >= 0
                                  ? reinterpret_cast<const uint32_t*>(plan.allowedMask.data()) + plan.allowedMaskRows[s] * words
                                  : nullptr;
      // Verification (speculative decoding): position i of the k+1 is sampled exactly as
      // output number counter+i would be without speculation — its own mask row, the draft
      // tokens before it in the penalty history, the same (seed, counter+i) draw — and draft
      // token i is accepted when that sample equals it. This is the rejection-sampling rule
      // for a draft that proposes one token with certainty (accept with probability p(d),
      // else draw from p without d, renormalised), and because the draw is the one the
      // non-speculative sampler makes, the output is token-for-token the same as without
      // speculation: greedy and seeded sampling alike.
      const int32_t k = plan.draftCounts.empty() ? 0 : plan.draftCounts[s];
      const int32_t* draft = plan.tokens.data() + plan.seqTokenOffsets[s + 1] - k;
      const int64_t slot0 = plan.draftOffsets.empty() ? 0 : plan.draftOffsets[s];
      for (int32_t i = 0; i <= k; i++) {
        p.allowedMask = masks ? masks + i * words : nullptr;
        p.counter = static_cast<uint64_t>(plan.sampleCounters[s]) + static_cast<uint64_t>(i);
        p.penaltyTail = draft;
        p.penaltyTailCount = i;
        const bool last = i == k;
        int32_t* topIds = last ? &out.topIds[s * stride] : &out.acceptedTopIds[(slot0 + i) * stride];
        float* topValues = last ? &out.topValues[s * stride] : &out.acceptedTopValues[(slot0 + i) * stride];
        SampleOutcome o;
        sampleToken(&logits_[(seqOutRow_[s] + i) * V], V, p, samplerScratch_[thread], o, topIds, topValues);
        if (!o.error.empty()) {
          out.errors[s] = o.error;
          if (!last) {
            std::fill(topIds, topIds + stride, -1);
            std::fill(topValues, topValues + stride, NAN);
          }
          break;
        }
        if (!last && o.token == draft[i]) {
          out.acceptedLogprobs[slot0 + i] = o.logprob;
          out.numAccepted[s] = i + 1;
          continue;
        }
        if (!last) {  // refused: the sample taken instead is the sequence's token
          std::copy(topIds, topIds + stride, &out.topIds[s * stride]);
          std::copy(topValues, topValues + stride, &out.topValues[s * stride]);
          std::fill(topIds, topIds + stride, -1);
          std::fill(topValues, topValues + stride, NAN);
        }
        out.tokens[s] = plan.sample[s] ? o.token : -1;
        out.logprobs[s] = o.logprob;
        break;
      }
    }
  });
  for (int64_t s = 0; s < S; s++)
    if (!out.errors[s].empty()) out.anyError = true;
}

void Context::step(StepPlanData& plan, StepResultData& out) {
  for (int32_t s = 0; s < plan.S; s++)
    for (int32_t t = plan.seqTokenOffsets[s]; t < plan.seqTokenOffsets[s + 1]; t++) tokenSeq_[t] = s;
  tiles_.clear();
  for (int32_t s = 0; s < plan.S; s++)
    for (int32_t t = plan.seqTokenOffsets[s]; t < plan.seqTokenOffsets[s + 1]; t += kTile)
      tiles_.emplace_back(t, std::min<int32_t>(kTile, plan.seqTokenOffsets[s + 1] - t));
  lora_.prepare(plan, tokenSeq_);
  copyBlocks(plan);
  embed(plan);
  ropeTables(plan);
  for (int64_t l = 0; l < plan.exitLayer; l++) {
    layer(l, plan);
    if (l == 0 && failSteps.load(std::memory_order_relaxed) > 0) injectFault();
    if (l == 0 && stallStepMs.load(std::memory_order_relaxed) > 0) injectStall();
  }
  outputHead(plan, out);
  out.lateMaskWaitMs = plan.lateMaskRows > 0 ? lateMasks.wait(plan.allowedMask) : 0;
  sampleAll(plan, out);
  promptScores(plan, out);
}

void Context::promptScores(const StepPlanData& plan, StepResultData& out) {
  out.prompt = !plan.promptTargets.empty();
  if (!out.prompt) return;
  const int64_t T = plan.T, D = cfg_.hidden, V = cfg_.vocab;
  int32_t stride = 0;
  for (int32_t n : plan.promptTop) stride = std::max(stride, n);
  out.promptTopStride = stride;
  out.promptLogprobs.assign(T, NAN);
  out.promptRanks.assign(T, -1);
  out.promptTopIds.assign(T * stride, -1);
  out.promptTopValues.assign(T * stride, NAN);
  promptRows_.clear();
  for (int32_t t = 0; t < T; t++)
    if (plan.promptTargets[t] >= 0) promptRows_.push_back(t);
  const int64_t rows = static_cast<int64_t>(promptRows_.size());
  if (rows == 0) return;
  if (static_cast<int64_t>(promptLogits_.size()) < std::min(rows, kPromptRows) * V)
    promptLogits_.resize(std::min(rows, kPromptRows) * V);
  const float eps = static_cast<float>(cfg_.eps);
  for (int64_t r0 = 0; r0 < rows; r0 += kPromptRows) {
    const int64_t R = std::min(kPromptRows, rows - r0);
    const int32_t* rowTok = promptRows_.data() + r0;
    forRange(R, D, [&](int64_t b, int64_t e, int) {
      for (int64_t r = b; r < e; r++) simd::rmsNorm(&x_[rowTok[r] * D], model_->outputNorm.data(), &xSel_[r * D], D, eps);
    });
    linear(model_->output, xSel_.data(), R, promptLogits_.data(), V, model_->layers.front().qkv);
    forRange(R, V, [&](int64_t b, int64_t e, int thread) {
      for (int64_t r = b; r < e; r++) {
        const int32_t t = rowTok[r];
        const PromptRowScore sc =
            scorePromptRow(&promptLogits_[r * V], V, plan.promptTargets[t], plan.promptTop[tokenSeq_[t]],
                           samplerScratch_[thread].idx.data(), &out.promptTopIds[t * stride], &out.promptTopValues[t * stride]);
        out.promptLogprobs[t] = sc.logprob;
        out.promptRanks[t] = sc.rank;
      }
    });
  }
}

// Fails this step the way a kernel fault would: mid-forward, with layer 0's K/V of the new
// tokens already written, thrown inside a parallel region on the owner thread (the pool
// waits for its workers and rethrows; workers' tasks must not throw).
void Context::injectFault() {
  failSteps.fetch_sub(1, std::memory_order_relaxed);
  auto task = [](int i, int) {
    if (i == 0) throw std::runtime_error("injected fault (failNextStepsForTest)");
  };
  pool_.run(TaskRef(task));
}

// Holds this step the way a wedged kernel would, on the stepping thread, then lets it finish
// normally (its tokens are those of an unstalled step).
void Context::injectStall() {
  const int ms = stallStepMs.exchange(0, std::memory_order_relaxed);
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace prism
