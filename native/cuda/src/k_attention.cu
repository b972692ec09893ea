// Causal attention over the paged KV cache, for prefill chunks and decode tokens alike,
// optionally limited to a sliding window (a token at p sees p-W+1 .. p).
//
// A block takes one tile (up to `tileTokens` consecutive tokens of one sequence), one KV
// head and one split of the context: the tile's rows are its tokens × the query heads that
// share the KV head (GQA), at most 32. The block walks its range of positions 32 at a time:
// the chunk's K and V (f16 in the cache) are widened into shared memory once and used by
// every row; each warp keeps the softmax state (max, sum) and the output accumulators of its
// rows in registers and updates them online (FlashAttention's recurrence), so scores never
// go to memory. With one split the block writes the normalised output; with several (decode:
// few tiles, long contexts) each writes its unnormalised part and a second kernel combines
// them, so a single long sequence still spreads over the whole GPU (flash-decoding); given
// arrival counters (the fast kernel set) the split that finishes last combines them instead.
// Scores and sums are f32 on plain FMA units; K/V are read once per tile.
#include <string>

#include "kernels.h"

namespace pc {
namespace {

constexpr int kWarps = 4;
constexpr int kChunk = 32;  // positions per step: one per lane
constexpr int kMaxRows = 32;
constexpr int kRowsPerWarp = kMaxRows / kWarps;

size_t sharedBytes(int hd) {
  return static_cast<size_t>(kMaxRows * hd + kChunk * (hd + 1) + kChunk * hd + kMaxRows * kChunk) * sizeof(float);
}

PC_DEVICE void widen8(const uint4& raw, float out[8]) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; i++) {
    out[2 * i] = f16ToFloat(static_cast<uint16_t>(w[i] & 0xffff));
    out[2 * i + 1] = f16ToFloat(static_cast<uint16_t>(w[i] >> 16));
  }
}

// Dimension d of one (token, head) merged from the splits' partial outputs at `base` (split s
// at base + s·stride: hd values, then m and l), in split order.
PC_DEVICE float combined(const float* base, int splits, int64_t stride, int hd, int d) {
  float mMax = -INFINITY;
  for (int s = 0; s < splits; s++) mMax = fmaxf(mMax, loadL2(base + s * stride + hd));
  float total = 0.0f, acc = 0.0f;
  for (int s = 0; s < splits; s++) {
    const float ms = loadL2(base + s * stride + hd);
    if (ms == -INFINITY) continue;
    const float w = expf(ms - mMax);
    total += w * loadL2(base + s * stride + hd + 1);
    acc += w * loadL2(base + s * stride + d);
  }
  return acc / total;
}

// DPL: output dims per lane (hd ≤ 32·DPL).
template <int DPL>
__global__ void __launch_bounds__(kWarps * 32) attentionKernel(AttentionParams p) {
  PC_DYNAMIC_SMEM(float, smem);
  const int hd = p.hd, group = p.heads / p.kvHeads, ldk = hd + 1;
  float* qs = smem;                  // [kMaxRows × hd]
  float* ks = qs + kMaxRows * hd;    // [kChunk × ldk]: padded, lanes read different rows
  float* vs = ks + kChunk * ldk;     // [kChunk × hd]
  float* ps = vs + kChunk * hd;      // [kMaxRows × kChunk]: a row's probabilities
  const int tile = static_cast<int>(blockIdx.x), kvh = static_cast<int>(blockIdx.y), split = static_cast<int>(blockIdx.z);
  const int t0 = p.tileFirst[tile], nt = p.tileCount[tile];
  const int rows = nt * group;
  const int32_t* table = p.blockTables + p.blockTableOffsets[p.tokenSeq[t0]];
  const int pos0 = p.positions[t0];
  const int nPos = pos0 + nt;  // the tile sees positions 0 .. pos0 + nt - 1
  // Under a sliding window, from its first token's window on: earlier positions (whose pages
  // the engine may have released and reused) are never loaded. Splits cover whole chunks.
  const int first = p.window > 0 && pos0 - p.window + 1 > 0 ? pos0 - p.window + 1 : 0;
  const int base = first / kChunk * kChunk;
  const int perSplit = ceilDiv(ceilDiv(nPos - base, kChunk), p.splits) * kChunk;
  const int begin = base + split * perSplit;
  const int end = nPos < begin + perSplit ? nPos : begin + perSplit;
  const int lane = laneId(), w = warpId();

  for (int e = static_cast<int>(threadIdx.x); e < kMaxRows * hd; e += static_cast<int>(blockDim.x)) {
    const int r = e / hd, d = e % hd;
    float val = 0.0f;
    if (r < rows) val = p.q[(t0 + r / group) * p.ldq + (kvh * group + r % group) * hd + d];
    qs[e] = val;
  }
  float o[kRowsPerWarp][DPL], m[kRowsPerWarp], l[kRowsPerWarp];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; i++) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int k = 0; k < DPL; k++) o[i][k] = 0.0f;
  }

  const int vecs = hd / 8;
  for (int c0 = begin; c0 < end; c0 += kChunk) {
    __syncthreads();  // the previous chunk is consumed (and, the first time, q is in)
    for (int e = static_cast<int>(threadIdx.x); e < kChunk * vecs; e += static_cast<int>(blockDim.x)) {
      const int j = e / vecs, d8 = (e % vecs) * 8, pos = c0 + j;
      float kv[8], vv[8];
      if (pos >= first && pos < end) {
        const int64_t blk = table[pos / p.blockSize];
        const int64_t off = ((blk * p.kvHeads + kvh) * p.blockSize + pos % p.blockSize) * hd + d8;
        widen8(*reinterpret_cast<const uint4*>(p.kCache + off), kv);
        widen8(*reinterpret_cast<const uint4*>(p.vCache + off), vv);
      } else {
#pragma unroll
        for (int i = 0; i < 8; i++) kv[i] = vv[i] = 0.0f;
      }
#pragma unroll
      for (int i = 0; i < 8; i++) {
        ks[j * ldk + d8 + i] = kv[i];
        vs[j * hd + d8 + i] = vv[i];
      }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; i++) {
      const int r = w + kWarps * i;
      if (r < rows) {  // the same for the whole warp
        const int pos = c0 + lane;
        float sc = -INFINITY;
        const int own = pos0 + r / group;  // token r/group's position
        // Causal, and inside the token's window.
        if (pos >= first && pos < end && pos <= own && (p.window <= 0 || pos > own - p.window)) {
          const float* qr = qs + r * hd;
          const float* kr = ks + lane * ldk;
          float a = 0.0f;
          for (int d = 0; d < hd; d++) a += qr[d] * kr[d];
          sc = a;
        }
        const float mNew = fmaxf(m[i], warpMax(sc));
        float pj = 0.0f, corr = 1.0f;
        if (mNew != -INFINITY) {
          pj = sc == -INFINITY ? 0.0f : expf(sc - mNew);
          corr = expf(m[i] - mNew);  // 0 when m was -inf
        }
        l[i] = l[i] * corr + warpSum(pj);
        m[i] = mNew;
        ps[r * kChunk + lane] = pj;
        __syncwarp();
#pragma unroll
        for (int k = 0; k < DPL; k++) o[i][k] *= corr;
        for (int j = 0; j < kChunk; j++) {
          const float pw = ps[r * kChunk + j];
          const float* vr = vs + j * hd;
#pragma unroll
          for (int k = 0; k < DPL; k++) {
            const int d = lane + 32 * k;
            if (d < hd) o[i][k] += pw * vr[d];
          }
        }
        __syncwarp();
      }
    }
  }

#pragma unroll
  for (int i = 0; i < kRowsPerWarp; i++) {
    const int r = w + kWarps * i;
    if (r < rows) {
      const int64_t t = t0 + r / group;
      const int h = kvh * group + r % group;
      if (p.splits == 1) {
        float* out = p.out + t * p.heads * hd + static_cast<int64_t>(h) * hd;
        const float inv = 1.0f / l[i];
#pragma unroll
        for (int k = 0; k < DPL; k++) {
          const int d = lane + 32 * k;
          if (d < hd) out[d] = o[i][k] * inv;
        }
      } else {
        float* part = p.partial + ((static_cast<int64_t>(split) * p.T + t) * p.heads + h) * (hd + 2);
#pragma unroll
        for (int k = 0; k < DPL; k++) {
          const int d = lane + 32 * k;
          if (d < hd) part[d] = o[i][k];
        }
        if (lane == 0) {
          part[hd] = m[i];
          part[hd + 1] = l[i];
        }
      }
    }
  }
  // With arrival counters (the fast kernel set), the last split of this (tile, KV head) to
  // finish merges every split's part for its rows, in split order: no combine launch.
  if (p.splits == 1 || p.counters == nullptr) return;
  __shared__ int isLast;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t* counter = p.counters + static_cast<int64_t>(tile) * p.kvHeads + kvh;
    const int arrived = atomicAdd(counter, 1);
    isLast = arrived == p.splits - 1;
    if (isLast) *counter = 0;
  }
  __syncthreads();
  if (!isLast) return;
  __threadfence();
  const int64_t stride = p.T * p.heads * (hd + 2);
  for (int e = static_cast<int>(threadIdx.x); e < rows * hd; e += static_cast<int>(blockDim.x)) {
    const int r = e / hd, d = e % hd;
    const int64_t t = t0 + r / group;
    const int h = kvh * group + r % group;
    p.out[t * p.heads * hd + static_cast<int64_t>(h) * hd + d] =
        combined(p.partial + (t * p.heads + h) * (hd + 2), p.splits, stride, hd, d);
  }
}

// Block per (token, head): merges the splits' partial outputs.
__global__ void combineKernel(const float* __restrict__ partial, int splits, int64_t T, int heads, int hd,
                              float* __restrict__ out) {
  const int64_t t = blockIdx.x;
  const int h = static_cast<int>(blockIdx.y);
  const int64_t stride = static_cast<int64_t>(T) * heads * (hd + 2);
  const float* base = partial + (t * heads + h) * (hd + 2);
  for (int d = static_cast<int>(threadIdx.x); d < hd; d += static_cast<int>(blockDim.x))
    out[t * heads * hd + static_cast<int64_t>(h) * hd + d] = combined(base, splits, stride, hd, d);
}

}  // namespace

int attentionTileTokens(int group) { return group >= kMaxRows ? 1 : kMaxRows / group; }

void attention(const AttentionParams& p, const Stream& s) {
  const int group = p.heads / p.kvHeads;
  if (group * p.tileTokens > kMaxRows) throw Error("attention: a tile has more than 32 rows");
  if (p.hd % 8 != 0 || p.hd > 256) throw Error("attention: head dim must be a multiple of 8 and at most 256");
  if (p.splits < 1 || (p.splits > 1 && p.partial == nullptr)) throw Error("attention: bad split count");
  const dim3 grid(static_cast<unsigned>(p.tiles), static_cast<unsigned>(p.kvHeads), static_cast<unsigned>(p.splits));
  const dim3 block(kWarps * 32);
  const size_t smem = sharedBytes(p.hd);
  if (p.hd <= 64) launch("attention", attentionKernel<2>, grid, block, smem, s, p);
  else if (p.hd <= 96) launch("attention", attentionKernel<3>, grid, block, smem, s, p);
  else if (p.hd <= 128) launch("attention", attentionKernel<4>, grid, block, smem, s, p);
  else launch("attention", attentionKernel<8>, grid, block, smem, s, p);
  if (p.splits > 1 && p.counters == nullptr)
    launch("attention combine", combineKernel, dim3(static_cast<unsigned>(p.T), static_cast<unsigned>(p.heads)), dim3(128),
           0, s, p.partial, p.splits, p.T, p.heads, p.hd, p.out);
}

}  // namespace pc
