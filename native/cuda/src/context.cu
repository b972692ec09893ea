// The forward pass on the device, in the order of native/src/forward.cc: embedding →
// N × (RMSNorm, QKV, RoPE + KV write, attention, O + residual, RMSNorm, gate/up, SwiGLU,
// down + residual) → final norm of the rows that need logits → output head → sampling.
// Decode-sized steps (≤ 8 tokens) multiply with the GEMV kernels in f32; larger ones with
// bf16 GEMMs (gemm.h). The residual adds are folded into the O and down products.
#include "context.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <cstring>
#include <string>

namespace pc {
namespace {

constexpr int kMaxSplits = 16;
constexpr int64_t kSplitMaxTokens = 256;  // steps with more tokens have enough tiles
constexpr size_t kWeightScratchBytes = size_t{256} << 20;
constexpr int kMaxTopLogprobs = 1024;

size_t alignUp(size_t n) { return (n + 255) & ~size_t{255}; }

// Lays arrays out one after another in one buffer, 256-byte aligned.
class Layout {
 public:
  template <typename T>
  size_t add(size_t count) {
    const size_t at = size_;
    size_ = alignUp(size_ + count * sizeof(T));
    return at;
  }
  size_t size() const { return size_; }

 private:
  size_t size_ = 0;
};

}  // namespace

DeviceContext::DeviceContext(DeviceModel& model, const pc_context_options& opts)
    : m_(model), opts_(opts), cfg_(model.config()), gemm_(stream_) {
  if (opts.kv_blocks < 1 || opts.block_size < 1 || opts.max_batch_tokens < 1 || opts.max_seqs < 1)
    throw Error("context options must be positive");
  useDevice(m_.device());
  multiprocessors_ = deviceProperties(m_.device()).multiprocessors;
  const int64_t T = opts.max_batch_tokens, S = opts.max_seqs, D = cfg_.hidden, I = cfg_.intermediate, V = cfg_.vocab;
  const int64_t hd = cfg_.head_dim, qDim = m_.qDim();
  qkvDim_ = qDim + 2 * m_.kvDim();
  blockStride_ = cfg_.kv_heads * opts.block_size * hd;
  layerStride_ = opts.kv_blocks * blockStride_;
  const size_t kvElems = static_cast<size_t>(cfg_.layers * layerStride_);
  kCache_.allocateZeroed(kvElems * 2, stream_);
  vCache_.allocateZeroed(kvElems * 2, stream_);
  const size_t f = sizeof(float);
  x_.allocate(static_cast<size_t>(T * D) * f);
  xn_.allocate(static_cast<size_t>(T * std::max(D, qDim)) * f);
  qkv_.allocate(static_cast<size_t>(T * qkvDim_) * f);
  attn_.allocate(static_cast<size_t>(T * qDim) * f);
  gu_.allocate(static_cast<size_t>(T * 2 * I) * f);
  act_.allocate(static_cast<size_t>(T * I) * f);
  xSel_.allocate(static_cast<size_t>(T * D) * f);
  logits_.allocate(static_cast<size_t>(S * V) * f);
  partial_.allocate(static_cast<size_t>(std::min(T, kSplitMaxTokens) * cfg_.heads * (hd + 2) * kMaxSplits) * f);
  if (T > kGemvMaxTokens) xBf16_.allocate(static_cast<size_t>(T * m_.maxCols()) * 2);
  const int64_t penaltyBlocks = std::min<int64_t>(S, kPenaltyBlocks);
  penaltyCounts_.allocateZeroed(static_cast<size_t>(penaltyBlocks * V) * 4, stream_);
  const size_t resultBytes = 3 * alignUp(static_cast<size_t>(S) * 4) + 2 * alignUp(static_cast<size_t>(S) * kMaxTopLogprobs * 4);
  resultDev_.allocate(resultBytes);
  resultHost_.allocate(resultBytes);
  tileTokens_ = attentionTileTokens(static_cast<int>(cfg_.heads / cfg_.kv_heads));
  fast_ = cfg_.kernels == PC_KERNELS_FAST;
  if (fast_) {
    const int64_t widest = std::max({V, 2 * I, qkvDim_, D});
    const int64_t gemvT = std::min<int64_t>(T, kGemvMaxTokens);
    gemvPartial_.allocate(static_cast<size_t>(gemvFastPartialFloats(widest)) * f);
    gemvCounters_.allocateZeroed(static_cast<size_t>(gemvFastCounters(widest)) * 4, stream_);
    gemvScratch_ = GemvScratch{gemvPartial_.get<float>(), gemvFastPartialFloats(widest), gemvCounters_.get<int32_t>(),
                               gemvFastCounters(widest)};
    // Decode tiles: at most one per token of a GEMV-sized step.
    attnCounters_.allocateZeroed(static_cast<size_t>(gemvT * cfg_.kv_heads) * 4, stream_);
    ropeTable_.allocate(static_cast<size_t>(gemvT * (hd / 2)) * sizeof(float2));
  }
  const char* graphs = std::getenv("PRISM_CUDA_GRAPHS");
  useGraphs_ = graphsSupported() && !(graphs && std::string(graphs) == "0");
  tokenSeq_.reserve(T);
  tileFirst_.reserve(T);
  tileCount_.reserve(T);
  outRows_.reserve(T);
  seqRow_.reserve(S);
  stream_.synchronize();
}

int DeviceContext::attentionSplits(int64_t T) const {
  if (T > kSplitMaxTokens) return 1;
  const int64_t items = static_cast<int64_t>(tileFirst_.size()) * cfg_.kv_heads;
  // A window bounds what a token reads (plus the chunk it starts in).
  const int64_t span = cfg_.sliding_window > 0 ? std::min<int64_t>(maxPositions_, cfg_.sliding_window + 32) : maxPositions_;
  const int64_t maxChunks = (span + 31) / 32;
  const int64_t want = (2 * multiprocessors_ + items - 1) / items;
  return static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(want, maxChunks), 1, kMaxSplits));
}

void DeviceContext::upload(const pc_step_plan& p) {
  const int64_t T = p.T, S = p.S;
  // What the host derives: each token's sequence, attention tiles, the rows that get logits.
  tokenSeq_.resize(static_cast<size_t>(T));
  tileFirst_.clear();
  tileCount_.clear();
  maxPositions_ = 0;
  for (int32_t s = 0; s < S; s++) {
    const int32_t b = p.seq_token_offsets[s], e = p.seq_token_offsets[s + 1];
    for (int32_t t = b; t < e; t++) tokenSeq_[static_cast<size_t>(t)] = s;
    for (int32_t t = b; t < e; t += tileTokens_) {
      tileFirst_.push_back(t);
      tileCount_.push_back(std::min(tileTokens_, e - t));
    }
    maxPositions_ = std::max<int64_t>(maxPositions_, p.positions[e - 1] + 1);
  }
  outRows_.clear();
  seqRow_.assign(static_cast<size_t>(S), -1);
  std::vector<int32_t>& rowOf = seqRow_;
  for (int32_t s = 0; s < S; s++) {
    const int32_t last = p.seq_token_offsets[s + 1] - 1;
    const bool sampled = p.sample[s] || p.top_logprobs[s] >= 0;
    if (p.return_logits == 2) {
      rowOf[static_cast<size_t>(s)] = sampled ? last : -1;
    } else if (p.return_logits == 1 || sampled) {
      rowOf[static_cast<size_t>(s)] = sampled ? static_cast<int32_t>(outRows_.size()) : -1;
      outRows_.push_back(last);
    }
  }
  if (p.return_logits == 2) {
    outRows_.resize(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; t++) outRows_[static_cast<size_t>(t)] = static_cast<int32_t>(t);
  }
  rows_ = static_cast<int64_t>(outRows_.size());

  // Sections whose size depends only on (T, S, rows) first, so that a decode step of a given
  // shape finds every array a kernel reads at the same address (what a CUDA graph replays);
  // the variable-length ones (block tables, copies, penalty history) last.
  Layout L;
  const size_t oTokens = L.add<int32_t>(T), oPositions = L.add<int32_t>(T), oBto = L.add<int32_t>(S + 1),
               oSeq = L.add<int32_t>(T), oTileFirst = L.add<int32_t>(tileFirst_.size()),
               oTileCount = L.add<int32_t>(tileCount_.size()), oOutRows = L.add<int32_t>(outRows_.size()),
               oSeqRow = L.add<int32_t>(S), oSample = L.add<uint8_t>(S), oTemp = L.add<float>(S), oTopP = L.add<float>(S),
               oRep = L.add<float>(S), oPres = L.add<float>(S), oFreq = L.add<float>(S), oTopK = L.add<int32_t>(S),
               oPenOff = L.add<int32_t>(S + 1), oMaskRow = L.add<int32_t>(S), oTopLp = L.add<int32_t>(S),
               oUniform = L.add<double>(S), oBt = L.add<int32_t>(static_cast<size_t>(p.n_block_tables)),
               oCopies = L.add<int32_t>(static_cast<size_t>(p.n_block_copies)),
               oPen = L.add<int32_t>(static_cast<size_t>(p.n_penalty_tokens));
  if (planHost_.bytes() < L.size()) {
    stream_.synchronize();  // the old buffers may still be in use
    const size_t grow = L.size() + L.size() / 2;
    planHost_.allocate(grow);
    planDev_.allocate(grow);
    graphs_.clear();  // they read the old buffer
  }
  uint8_t* h = planHost_.get<uint8_t>();
  auto put = [h](size_t at, const void* src, size_t bytes) {
    if (bytes) std::memcpy(h + at, src, bytes);
  };
  put(oTokens, p.tokens, T * 4);
  put(oPositions, p.positions, T * 4);
  put(oBto, p.block_table_offsets, (S + 1) * 4);
  put(oBt, p.block_tables, static_cast<size_t>(p.n_block_tables) * 4);
  put(oCopies, p.block_copies, static_cast<size_t>(p.n_block_copies) * 4);
  put(oSeq, tokenSeq_.data(), T * 4);
  put(oTileFirst, tileFirst_.data(), tileFirst_.size() * 4);
  put(oTileCount, tileCount_.data(), tileCount_.size() * 4);
  put(oOutRows, outRows_.data(), outRows_.size() * 4);
  put(oSeqRow, seqRow_.data(), S * 4);
  put(oSample, p.sample, S);
  put(oTemp, p.temperature, S * 4);
  put(oTopP, p.top_p, S * 4);
  put(oRep, p.repetition_penalty, S * 4);
  put(oPres, p.presence_penalty, S * 4);
  put(oFreq, p.frequency_penalty, S * 4);
  put(oTopK, p.top_k, S * 4);
  put(oPenOff, p.penalty_token_offsets, (S + 1) * 4);
  put(oPen, p.penalty_tokens, static_cast<size_t>(p.n_penalty_tokens) * 4);
  put(oMaskRow, p.allowed_mask_rows, S * 4);
  put(oTopLp, p.top_logprobs, S * 4);
  put(oUniform, p.uniform, S * 8);
  copyToDevice(planDev_.get(), h, L.size(), stream_);
  const uint8_t* d = planDev_.get<uint8_t>();
  auto i32 = [d](size_t at) { return reinterpret_cast<const int32_t*>(d + at); };
  auto f32 = [d](size_t at) { return reinterpret_cast<const float*>(d + at); };
  a_.tokens = i32(oTokens);
  a_.positions = i32(oPositions);
  a_.blockTableOffsets = i32(oBto);
  a_.blockTables = i32(oBt);
  a_.blockCopies = i32(oCopies);
  a_.tokenSeq = i32(oSeq);
  a_.tileFirst = i32(oTileFirst);
  a_.tileCount = i32(oTileCount);
  a_.outRows = i32(oOutRows);
  a_.seqRow = i32(oSeqRow);
  a_.sample = d + oSample;
  a_.temperature = f32(oTemp);
  a_.topP = f32(oTopP);
  a_.repetitionPenalty = f32(oRep);
  a_.presencePenalty = f32(oPres);
  a_.frequencyPenalty = f32(oFreq);
  a_.topK = i32(oTopK);
  a_.penaltyOffsets = i32(oPenOff);
  a_.penaltyTokens = i32(oPen);
  a_.maskRow = i32(oMaskRow);
  a_.topLogprobs = i32(oTopLp);
  a_.uniform = reinterpret_cast<const double*>(d + oUniform);
}

void DeviceContext::linear(const DeviceLinear& L, const float* x, int64_t n, float* y, int64_t ldy, bool accumulate) {
  const int64_t k = L.inFeatures;
  if (n <= kGemvMaxTokens) {
    for (const DeviceLinear::Part& part : L.parts)
      gemv(part.w.view, x, k, n, y + part.outOffset, ldy, accumulate, stream_);
    return;
  }
  uint16_t* xb = xBf16_.get<uint16_t>();
  convertToBf16(x, k, n, k, xb, stream_);
  for (const DeviceLinear::Part& part : L.parts) {
    const DeviceWeight& W = part.w.view;
    if (W.type == kBF16) {
      gemm_.bf16(reinterpret_cast<const uint16_t*>(W.q), W.rows, k, xb, n, y + part.outOffset, ldy, accumulate, stream_);
      continue;
    }
    // Other types are decoded into bf16 a band of rows at a time (bounded scratch).
    if (wBf16_.bytes() == 0) {
      const size_t bytes = std::min(kWeightScratchBytes, static_cast<size_t>(m_.maxMatrixElems()) * 2);
      wBf16Rows_ = std::max<int64_t>(1, static_cast<int64_t>(bytes / (static_cast<size_t>(m_.maxCols()) * 2)));
      wBf16_.allocate(static_cast<size_t>(wBf16Rows_ * m_.maxCols()) * 2);
    }
    const int64_t band = std::max<int64_t>(1, wBf16Rows_ * m_.maxCols() / k);
    for (int64_t r0 = 0; r0 < W.rows; r0 += band) {
      const DeviceWeight slice = weightRows(W, r0, std::min(band, W.rows - r0));
      dequantizeToBf16(slice, wBf16_.get<uint16_t>(), stream_);
      gemm_.bf16(wBf16_.get<uint16_t>(), slice.rows, k, xb, n, y + part.outOffset + r0, ldy, accumulate, stream_);
    }
  }
}

RopeKvParams DeviceContext::ropeParams(int64_t l, int64_t T) const {
  const DeviceLayer& L = m_.layer(l);
  RopeKvParams r;
  r.qkv = qkv_.get<float>();
  r.T = T;
  r.heads = static_cast<int>(cfg_.heads);
  r.kvHeads = static_cast<int>(cfg_.kv_heads);
  r.hd = static_cast<int>(cfg_.head_dim);
  r.bias = L.qkvBias.bytes() ? L.qkvBias.get<float>() : nullptr;
  r.qNorm = L.qNorm.bytes() ? L.qNorm.get<float>() : nullptr;
  r.kNorm = L.kNorm.bytes() ? L.kNorm.get<float>() : nullptr;
  r.eps = static_cast<float>(cfg_.eps);
  r.invFreq = m_.invFreq();
  r.neox = cfg_.rope_neox != 0;
  r.qScale = 1.0f / std::sqrt(static_cast<float>(cfg_.head_dim));
  r.positions = a_.positions;
  r.tokenSeq = a_.tokenSeq;
  r.blockTables = a_.blockTables;
  r.blockTableOffsets = a_.blockTableOffsets;
  r.blockSize = static_cast<int>(opts_.block_size);
  r.kCache = kCache_.get<uint16_t>() + l * layerStride_;
  r.vCache = vCache_.get<uint16_t>() + l * layerStride_;
  return r;
}

AttentionParams DeviceContext::attentionParams(int64_t l, int64_t T) const {
  AttentionParams at;
  at.q = qkv_.get<float>();
  at.ldq = qkvDim_;
  at.kCache = kCache_.get<uint16_t>() + l * layerStride_;
  at.vCache = vCache_.get<uint16_t>() + l * layerStride_;
  at.heads = static_cast<int>(cfg_.heads);
  at.kvHeads = static_cast<int>(cfg_.kv_heads);
  at.hd = static_cast<int>(cfg_.head_dim);
  at.blockSize = static_cast<int>(opts_.block_size);
  at.T = T;
  at.tileFirst = a_.tileFirst;
  at.tileCount = a_.tileCount;
  at.tiles = static_cast<int64_t>(tileFirst_.size());
  at.tileTokens = tileTokens_;
  at.positions = a_.positions;
  at.tokenSeq = a_.tokenSeq;
  at.blockTables = a_.blockTables;
  at.blockTableOffsets = a_.blockTableOffsets;
  at.window = static_cast<int>(cfg_.sliding_window);
  at.splits = attentionSplits(T);
  at.partial = partial_.get<float>();
  at.out = attn_.get<float>();
  return at;
}

void DeviceContext::layer(int64_t l, int64_t T) {
  const DeviceLayer& L = m_.layer(l);
  const int64_t D = cfg_.hidden, I = cfg_.intermediate;
  const float eps = static_cast<float>(cfg_.eps);
  float* x = x_.get<float>();
  float* xn = xn_.get<float>();
  rmsNorm(x, nullptr, T, D, L.attnNorm.get<float>(), eps, xn, stream_);
  linear(L.qkv, xn, T, qkv_.get<float>(), qkvDim_, false);
  ropeAndStoreKv(ropeParams(l, T), stream_);
  attention(attentionParams(l, T), stream_);
  linear(L.o, attn_.get<float>(), T, x, D, true);
  rmsNorm(x, nullptr, T, D, L.ffnNorm.get<float>(), eps, xn, stream_);
  linear(L.gateUp, xn, T, gu_.get<float>(), 2 * I, false);
  swiglu(gu_.get<float>(), T, I, act_.get<float>(), stream_);
  linear(L.down, act_.get<float>(), T, x, D, true);
}

void DeviceContext::fastLinear(const DeviceLinear& L, const GemvIn& in, int64_t n, GemvOut out) {
  for (const DeviceLinear::Part& part : L.parts) {
    out.outOffset = part.outOffset;
    gemvFast(part.w.view, in, n, out, gemvScratch_, multiprocessors_, stream_);
  }
}

// Five launches: QKV (attention norm in, RoPE + KV write out), attention (combining its own
// splits), O (+ residual), gate/up (FFN norm in, SwiGLU out), down (+ residual). A layer whose
// parts cannot take a fused epilogue (q/k norm, a gate/up or q/k/v split across types at
// other than head boundaries) runs that part's separate kernel after a plain fast GEMV.
void DeviceContext::fastLayer(int64_t l, int64_t T) {
  const DeviceLayer& L = m_.layer(l);
  const int64_t D = cfg_.hidden, I = cfg_.intermediate;
  const float eps = static_cast<float>(cfg_.eps);
  float* x = x_.get<float>();
  const RopeKvParams r = ropeParams(l, T);

  GemvOut qkv;
  qkv.y = qkv_.get<float>();
  qkv.ldy = qkvDim_;
  qkv.mode = GemvMode::RopeKv;
  qkv.rope = RopeKvEpilogue{r.heads, r.kvHeads, r.hd, r.neox, r.qScale, r.bias,
                            ropeTable_.get<float2>(), r.positions, r.tokenSeq, r.blockTables, r.blockTableOffsets,
                            r.blockSize, r.kCache, r.vCache};
  bool fuseRope = r.qNorm == nullptr && r.kNorm == nullptr;
  for (const DeviceLinear::Part& part : L.qkv.parts) {
    qkv.outOffset = part.outOffset;
    fuseRope = fuseRope && gemvFastFuses(part.w.view, qkv);
  }
  if (!fuseRope) qkv.mode = GemvMode::Store;
  fastLinear(L.qkv, GemvIn{x, D, nullptr, L.attnNorm.get<float>(), eps}, T, qkv);
  if (!fuseRope) ropeAndStoreKv(r, stream_);

  AttentionParams at = attentionParams(l, T);
  at.counters = attnCounters_.get<int32_t>();
  attention(at, stream_);

  fastLinear(L.o, GemvIn{attn_.get<float>(), m_.qDim(), nullptr, nullptr, 0}, T,
             GemvOut{GemvMode::Accumulate, x, D, 0, {}});

  const GemvIn ffnIn{x, D, nullptr, L.ffnNorm.get<float>(), eps};
  GemvOut gateUp{GemvMode::SwiGlu, act_.get<float>(), I, 0, {}};
  if (L.gateUp.parts.size() == 1 && gemvFastFuses(L.gateUp.parts.front().w.view, gateUp)) {
    fastLinear(L.gateUp, ffnIn, T, gateUp);
  } else {
    fastLinear(L.gateUp, ffnIn, T, GemvOut{GemvMode::Store, gu_.get<float>(), 2 * I, 0, {}});
    swiglu(gu_.get<float>(), T, I, act_.get<float>(), stream_);
  }

  fastLinear(L.down, GemvIn{act_.get<float>(), I, nullptr, nullptr, 0}, T, GemvOut{GemvMode::Accumulate, x, D, 0, {}});
}

void DeviceContext::forward(const pc_step_plan& p) {
  if (p.T < 1 || p.T > opts_.max_batch_tokens || p.S < 1 || p.S > opts_.max_seqs)
    throw Error("step: T or S outside the context's limits");
  useDevice(m_.device());
  forwardDone_ = false;
  T_ = p.T;
  S_ = p.S;
  timer_.start(stream_);
  upload(p);
  if (p.n_block_copies > 0)
    copyKvBlocks(kCache_.get<uint16_t>(), vCache_.get<uint16_t>(), layerStride_, blockStride_, a_.blockCopies,
                 p.n_block_copies / 2, cfg_.layers, stream_);
  if (static_cast<size_t>(rows_ * cfg_.vocab) * sizeof(float) > logits_.bytes()) {
    stream_.synchronize();
    logits_.allocate(static_cast<size_t>(rows_ * cfg_.vocab) * sizeof(float));
    graphs_.clear();
  }
  // Decode steps (one token per sequence) replay a CUDA graph of the whole forward pass per
  // shape: the first step of a shape runs as is (it allocates any scratch and asks cuBLASLt
  // for its algorithms), the second is captured, later ones replay it — one launch instead
  // of ~10 per layer, whose host-side cost would otherwise exceed a 1B model's kernels.
  const bool decode = T_ == S_ && useGraphs_;
  if (!decode) {
    runForward();
  } else {
    const GraphKey key{T_, attentionSplits(T_), rows_};
    DecodeGraph& g = graphs_[key];
    if (g.graph && g.graph->ready()) {
      g.graph->launch(stream_);
      lastLaunches_ = g.graph->kernelNodes();
    } else if (g.runs == 0) {
      g.runs++;
      runForward();
    } else {
      g.graph = std::make_unique<Graph>();
      bool captured = false;
      try {
        g.graph->beginCapture(stream_);
        runForward();
        g.graph->endCapture(stream_);
        captured = true;
      } catch (const std::exception& e) {
        // A step that cannot be captured still runs: end the capture, forget graphs for this
        // context (said once on stderr) and run the forward pass as is.
        g.graph->abandonCapture(stream_);
        graphs_.clear();
        useGraphs_ = false;
        std::fprintf(stderr, "prism: CUDA graphs off for this context (capture failed: %s)\n", e.what());
      }
      if (captured) {
        g.graph->launch(stream_);
        lastLaunches_ = g.graph->kernelNodes();
      } else {
        runForward();
      }
    }
  }
  forwardDone_ = true;
}

void DeviceContext::runForward() {
  const uint64_t launches0 = launchesSoFar();
  const bool fastStep = fast_ && T_ <= kGemvMaxTokens;
  embed(m_.embedding(), a_.tokens, T_, x_.get<float>(), stream_);
  if (fastStep) ropeTable(a_.positions, T_, m_.invFreq(), static_cast<int>(cfg_.head_dim / 2), ropeTable_.get<float2>(), stream_);
  for (int64_t l = 0; l < cfg_.layers; l++) {
    if (fastStep) fastLayer(l, T_);
    else layer(l, T_);
  }
  if (rows_ > 0 && fastStep) {
    // The final norm in the output head's prologue, over the rows that need logits.
    fastLinear(m_.output(), GemvIn{x_.get<float>(), cfg_.hidden, a_.outRows, m_.outputNorm(), static_cast<float>(cfg_.eps)},
               rows_, GemvOut{GemvMode::Store, logits_.get<float>(), cfg_.vocab, 0, {}});
  } else if (rows_ > 0) {
    rmsNorm(x_.get<float>(), a_.outRows, rows_, cfg_.hidden, m_.outputNorm(), static_cast<float>(cfg_.eps),
            xSel_.get<float>(), stream_);
    linear(m_.output(), xSel_.get<float>(), rows_, logits_.get<float>(), cfg_.vocab, false);
  }
  lastLaunches_ = static_cast<int64_t>(launchesSoFar() - launches0);
}

void DeviceContext::sample(const pc_step_plan& p, const int32_t* masks, int64_t maskRows, pc_step_result& out) {
  if (!forwardDone_ || p.T != T_ || p.S != S_) throw Error("sample: no forward pass of this plan ran");
  forwardDone_ = false;
  useDevice(m_.device());
  const int64_t V = cfg_.vocab, S = S_;
  if (p.return_logits != 0 && out.logits) {
    const int64_t n = p.return_logits == 2 ? T_ : S;
    copyToHost(out.logits, logits_.get(), static_cast<size_t>(n * V) * sizeof(float), stream_);
  }
  const int64_t words = (V + 31) / 32;
  if (maskRows > 0) {
    const size_t bytes = static_cast<size_t>(maskRows * words) * 4;
    if (masks_.bytes() < bytes) {
      stream_.synchronize();
      masks_.allocate(bytes);
    }
    copyToDevice(masks_.get(), masks, bytes, stream_);
  }
  int32_t stride = 0;
  for (int64_t s = 0; s < S; s++) stride = std::max(stride, p.top_logprobs[s]);
  uint8_t* dev = resultDev_.get<uint8_t>();
  const size_t oTok = 0, oLp = alignUp(S * 4), oErr = oLp + alignUp(S * 4), oIds = oErr + alignUp(S * 4),
               oVals = oIds + alignUp(static_cast<size_t>(S * stride) * 4), end = oVals + static_cast<size_t>(S * stride) * 4;
  SamplingParams sp;
  sp.logits = logits_.get<float>();
  sp.V = V;
  sp.S = static_cast<int>(S);
  sp.seqRow = a_.seqRow;
  sp.sample = a_.sample;
  sp.temperature = a_.temperature;
  sp.topK = a_.topK;
  sp.topP = a_.topP;
  sp.repetitionPenalty = a_.repetitionPenalty;
  sp.presencePenalty = a_.presencePenalty;
  sp.frequencyPenalty = a_.frequencyPenalty;
  sp.penaltyOffsets = a_.penaltyOffsets;
  sp.penaltyTokens = a_.penaltyTokens;
  sp.penaltyCounts = penaltyCounts_.get<int32_t>();
  sp.masks = maskRows > 0 ? masks_.get<uint32_t>() : nullptr;
  sp.maskRow = a_.maskRow;
  sp.uniform = a_.uniform;
  sp.topLogprobs = a_.topLogprobs;
  sp.topStride = stride;
  sp.outToken = reinterpret_cast<int32_t*>(dev + oTok);
  sp.outLogprob = reinterpret_cast<float*>(dev + oLp);
  sp.outError = reinterpret_cast<int32_t*>(dev + oErr);
  sp.outTopIds = reinterpret_cast<int32_t*>(dev + oIds);
  sp.outTopValues = reinterpret_cast<float*>(dev + oVals);
  pc::sample(sp, stream_);
  copyToHost(resultHost_.get(), dev, end, stream_);
  timer_.stop(stream_);
  stream_.synchronize();
  const uint8_t* h = resultHost_.get<uint8_t>();
  std::memcpy(out.tokens, h + oTok, static_cast<size_t>(S) * 4);
  std::memcpy(out.logprobs, h + oLp, static_cast<size_t>(S) * 4);
  std::memcpy(out.errors, h + oErr, static_cast<size_t>(S) * 4);
  out.top_stride = stride;
  if (stride > 0) {
    std::memcpy(out.top_ids, h + oIds, static_cast<size_t>(S * stride) * 4);
    std::memcpy(out.top_values, h + oVals, static_cast<size_t>(S * stride) * 4);
  }
  lastMs_ = timer_.milliseconds();
}

}  // namespace pc
