// The decode GEMV of the "fast" kernel set (k_gemv_fast.cu): y = W·x for n ≤ 8 tokens, with
// the neighbouring per-token work folded into the same launch so that a decode layer is five
// kernels (context.cu, fastLayer):
//   prologue  RMSNorm of x (the layer's attention or FFN norm, the final norm) applied while
//             the block stages x in shared memory, optionally gathering rows (the output head
//             reads only the rows that need logits);
//   epilogue  store, accumulate (the residual), SwiGLU of the gate/up pair, or RoPE of q and
//             k with K and V written into the paged cache (the QKV projection).
//
// A block of 256 threads (8 warps) computes 16 rows ("a tile"); each warp owns 2 rows and its
// lanes walk the row's items (8 values of BF16/F16, 4 of F32, a 32-value group otherwise) in
// order, so a warp's 16-byte loads cover 512 contiguous bytes of the row in the upload layout
// of weights.h (groups of a row are contiguous there: no second layout is needed). The block
// stages its part of x once for all 16 rows: f32 for float weights (BF16, F16, F32 and the
// types decoded to f32 by decodeGroup), int8 with a scale and sum per 32 values for Q8_0,
// Q4_0, Q4_1 and Q4_K, whose dot products are dp4a on the packed nibbles or bytes.
// Narrow matrices, and inputs too wide to stage at once, are split along K over blockIdx.y:
// each split writes its partial sums, and the last split of a tile to arrive (an arrival
// counter, reset by that block) adds them in split order, so the sums never depend on the
// order blocks ran (no float atomics).
#pragma once
#include <cstdint>

#include "kernels.h"

namespace pc {

// Which kernels a model's steps use (pc_model_config.kernels): the issue-29 kernels, or the
// fast set (this GEMV, the fused decode layer, attention that combines its own splits).
enum class KernelSet : int { Legacy = 0, Fast = 1 };

constexpr int kFastRows = 16;
constexpr int kFastThreads = 256;
constexpr int kFastMaxSplits = 16;

// The activations: row t of n at x + (rows ? rows[t] : t)·ldx; normWeight set: RMSNorm first.
struct GemvIn {
  const float* x = nullptr;
  int64_t ldx = 0;
  const int32_t* rows = nullptr;
  const float* normWeight = nullptr;  // [cols]
  float eps = 0;
};

enum class GemvMode : int {
  Store = 0,       // y[t·ldy + outOffset + r] = (W·x)_r
  Accumulate = 1,  // y[...] += (W·x)_r (the residual)
  SwiGlu = 2,      // W = [gate (I rows); up (I rows)]: y[t·ldy + j] = silu(gate_j)·up_j
  RopeKv = 3,      // W = rows of whole q, k or v heads of the QKV projection (see RopeKvEpilogue)
};

// The QKV projection's epilogue, ropeAndStoreKv's arithmetic: bias, RoPE of q and k with this
// step's cos/sin table, q (scaled) into y at its row, k and v into the paged cache as f16.
struct RopeKvEpilogue {
  int heads = 0, kvHeads = 0, hd = 0;
  bool neox = false;
  float qScale = 1;
  const float* bias = nullptr;      // [qkvDim] or null
  const float2* cosSin = nullptr;   // [T × hd/2], row t for token t (ropeTable)
  const int32_t* positions = nullptr;
  const int32_t* tokenSeq = nullptr;
  const int32_t* blockTables = nullptr;
  const int32_t* blockTableOffsets = nullptr;
  int blockSize = 0;
  uint16_t* kCache = nullptr;  // this layer
  uint16_t* vCache = nullptr;
};

struct GemvOut {
  GemvMode mode = GemvMode::Store;
  float* y = nullptr;
  int64_t ldy = 0;
  int64_t outOffset = 0;  // where this part's rows start in y (a linear layer of several parts)
  RopeKvEpilogue rope;
};

// Split-K scratch: partial sums, and one arrival counter per tile (zero before a launch and
// left zero after it).
struct GemvScratch {
  float* partial = nullptr;
  int64_t partialFloats = 0;
  int32_t* counters = nullptr;
  int64_t counterCount = 0;
};
// The most partial floats and counters any launch over `rows` rows and n ≤ 8 tokens uses.
int64_t gemvFastPartialFloats(int64_t rows);
int64_t gemvFastCounters(int64_t rows);

// Whether `out.mode` can be fused for this part: RopeKv needs whole heads of a head dim that
// is a multiple of 16; SwiGlu needs both halves in the part (an even number of rows).
bool gemvFastFuses(const DeviceWeight& W, const GemvOut& out);

// y (by out.mode) = W·x for n ∈ [1, 8] tokens. `splits` 0: chosen from the tile count and the
// staging size; > 0: forced (the kernel check's split-K case).
void gemvFast(const DeviceWeight& W, const GemvIn& in, int64_t n, const GemvOut& out, const GemvScratch& scratch,
              int multiprocessors, const Stream& s, int splits = 0);

// The step's RoPE table: cosSin[t·half + i] = (cos, sin) of positions[t]·invFreq[i], the angle
// in double as ropeAndStoreKv computes it.
void ropeTable(const int32_t* positions, int64_t T, const float* invFreq, int half, float2* cosSin, const Stream& s);

}  // namespace pc
