// Host-side launchers of the library's kernels. Shapes are stated where declared; every
// pointer is device memory unless it says otherwise. All work is enqueued on `s`.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>

#include "runtime.h"
#include "weights.h"

namespace pc {

// ---- linear layers (k_linear.cu) ----------------------------------------------------------

// Calls f(std::integral_constant<int, TYPE>{}) for the weight type `type` (the kernels are
// templates over it); `what` names the caller in the error for a type without kernels.
template <typename F>
void withWeightType(int type, const char* what, F&& f) {
  using std::integral_constant;
  switch (type) {
    case kF32: return f(integral_constant<int, kF32>{});
    case kF16: return f(integral_constant<int, kF16>{});
    case kBF16: return f(integral_constant<int, kBF16>{});
    case kQ8_0: return f(integral_constant<int, kQ8_0>{});
    case kQ4_0: return f(integral_constant<int, kQ4_0>{});
    case kQ4_1: return f(integral_constant<int, kQ4_1>{});
    case kQ5_0: return f(integral_constant<int, kQ5_0>{});
    case kQ5_1: return f(integral_constant<int, kQ5_1>{});
    case kIQ4_NL: return f(integral_constant<int, kIQ4_NL>{});
    case kQ2_K: return f(integral_constant<int, kQ2_K>{});
    case kQ3_K: return f(integral_constant<int, kQ3_K>{});
    case kQ4_K: return f(integral_constant<int, kQ4_K>{});
    case kQ5_K: return f(integral_constant<int, kQ5_K>{});
    case kQ6_K: return f(integral_constant<int, kQ6_K>{});
    case kIQ4_XS: return f(integral_constant<int, kIQ4_XS>{});
  }
  throw Error(std::string(what) + ": unsupported weight type " + std::to_string(type));
}

// A weight matrix in the device layout (weights.h), owning its memory.
struct WeightStorage {
  DeviceBuffer q, s, qh, sd;
  DeviceWeight view;
  size_t rowBytes = 0;  // the file's bytes per row: what a matmul reads (the roofline)
};
// Allocates storage for [rows × cols] of `type` (cols a multiple of the type's block).
void allocateWeight(int type, int64_t rows, int64_t cols, WeightStorage& w);
// Uploads the file's bytes of rows [rowOffset, rowOffset + rows) (host memory, GGML blocks)
// and rearranges them into the device layout. `staging` is grown as needed.
void uploadWeightRows(WeightStorage& w, int64_t rowOffset, const void* hostBytes, int64_t rows, DeviceBuffer& staging,
                      const Stream& s);

// The largest batch the GEMV kernels take; larger batches use the GEMM path.
constexpr int kGemvMaxTokens = 8;
// y[t·ldy + r] (+)= Σ_k W[r][k]·x[t·ldx + k], t < n ≤ kGemvMaxTokens; f32 activations and
// accumulation (weights decoded exactly). `accumulate`: add to y (the residual).
void gemv(const DeviceWeight& W, const float* x, int64_t ldx, int64_t n, float* y, int64_t ldy, bool accumulate,
          const Stream& s);
// W decoded into bf16 [rows × cols] row-major (the GEMM path's A operand).
void dequantizeToBf16(const DeviceWeight& W, uint16_t* out, const Stream& s);
// W decoded into f32 [rows × cols] (tests, and the embedding lookup's reference).
void dequantizeToF32(const DeviceWeight& W, float* out, const Stream& s);
// out[t·cols + k] = bf16(x[t·ldx + k]) for t < n, k < cols.
void convertToBf16(const float* x, int64_t ldx, int64_t n, int64_t cols, uint16_t* out, const Stream& s);

// ---- per-token layers (k_layer.cu) --------------------------------------------------------

// x[t·D + i] = row tokens[t] of the embedding matrix, t < T.
void embed(const DeviceWeight& E, const int32_t* tokens, int64_t T, float* x, const Stream& s);
// out[r·D + i] = x[rows[r]·D + i] · w[i] / rms(x row), r < R; rows null means rows[r] = r.
void rmsNorm(const float* x, const int32_t* rows, int64_t R, int64_t D, const float* w, float eps, float* out,
             const Stream& s);
// act[t·I + i] = silu(gu[t·2I + i]) · gu[t·2I + I + i]
void swiglu(const float* gu, int64_t T, int64_t I, float* act, const Stream& s);

struct RopeKvParams {
  float* qkv = nullptr;  // [T × (heads + 2·kvHeads)·hd], q and k rotated in place
  int64_t T = 0;
  int heads = 0, kvHeads = 0, hd = 0;
  const float* bias = nullptr;   // [qkvDim] or null
  const float* qNorm = nullptr;  // [hd] per-head RMSNorm of q (qwen3) or null
  const float* kNorm = nullptr;
  float eps = 0;
  const float* invFreq = nullptr;  // [hd/2]
  bool neox = false;
  float qScale = 1;  // folded into q (1/sqrt(hd))
  const int32_t* positions = nullptr;  // [T]
  const int32_t* tokenSeq = nullptr;   // [T]
  const int32_t* blockTables = nullptr;
  const int32_t* blockTableOffsets = nullptr;
  int blockSize = 0;
  uint16_t* kCache = nullptr;  // this layer: [block][kvHead][slot][hd] f16
  uint16_t* vCache = nullptr;
};
// Bias, q/k norm, RoPE and the q scale on the step's q and k; K and V into the paged cache.
void ropeAndStoreKv(const RopeKvParams& p, const Stream& s);

// Copies whole KV blocks (every layer, K and V): pairs[2i] → pairs[2i+1].
void copyKvBlocks(uint16_t* kCache, uint16_t* vCache, int64_t layerStride, int64_t blockStride, const int32_t* pairs,
                  int64_t nPairs, int64_t layers, const Stream& s);

// ---- attention (k_attention.cu) -----------------------------------------------------------

struct AttentionParams {
  const float* q = nullptr;  // q of token t, head h at q[t·ldq + h·hd] (rotated, scaled)
  int64_t ldq = 0;
  const uint16_t* kCache = nullptr;  // this layer
  const uint16_t* vCache = nullptr;
  int heads = 0, kvHeads = 0, hd = 0, blockSize = 0;
  int64_t T = 0;
  // Tiles: runs of up to `tileTokens` consecutive tokens of one sequence.
  const int32_t* tileFirst = nullptr;
  const int32_t* tileCount = nullptr;
  int64_t tiles = 0;
  int tileTokens = 1;
  const int32_t* positions = nullptr;
  const int32_t* tokenSeq = nullptr;
  const int32_t* blockTables = nullptr;
  const int32_t* blockTableOffsets = nullptr;
  int window = 0;           // > 0: a token at p sees p-window+1 .. p only (sliding window)
  int splits = 1;           // ranges of the context attended separately, then combined
  float* partial = nullptr;  // splits × T × heads × (hd + 2) floats when splits > 1
  // tiles × kvHeads zeros (left zero): the last split of each block's rows combines them;
  // null: a second kernel combines the splits.
  int32_t* counters = nullptr;
  float* out = nullptr;  // [T × heads·hd]
};
// Tokens per tile for a GQA group size (rows of a tile = tokens × group ≤ 32).
int attentionTileTokens(int group);
// Causal attention of each token over positions 0..its own (or its window), through the
// block table; blocks wholly before every window of a tile are never read.
void attention(const AttentionParams& p, const Stream& s);

// ---- sampling (k_sampling.cu) -------------------------------------------------------------

struct SamplingParams {
  float* logits = nullptr;  // [rows × V], processed in place
  int64_t V = 0;
  int S = 0;
  const int32_t* seqRow = nullptr;  // per sequence: its logits row, -1 = nothing to do
  const uint8_t* sample = nullptr;
  const float* temperature = nullptr;
  const int32_t* topK = nullptr;
  const float* topP = nullptr;
  const float* repetitionPenalty = nullptr;
  const float* presencePenalty = nullptr;
  const float* frequencyPenalty = nullptr;
  const int32_t* penaltyOffsets = nullptr;  // [S + 1]
  const int32_t* penaltyTokens = nullptr;
  int32_t* penaltyCounts = nullptr;  // kPenaltyBlocks × V, all zero (kept zero)
  const uint32_t* masks = nullptr;   // rows of ceil(V/32) words
  const int32_t* maskRow = nullptr;  // per sequence, -1 = none
  const double* uniform = nullptr;   // per sequence: the draw in [0, 1)
  const int32_t* topLogprobs = nullptr;
  int topStride = 0;
  // Results (device): token, logprob, error code (0 ok, 1 NaN logits, 2 nothing allowed),
  // and topStride ids/values per sequence.
  int32_t* outToken = nullptr;
  float* outLogprob = nullptr;
  int32_t* outError = nullptr;
  int32_t* outTopIds = nullptr;
  float* outTopValues = nullptr;
};
constexpr int kPenaltyBlocks = 64;
void sample(const SamplingParams& p, const Stream& s);

}  // namespace pc
