// The per-token parts of a layer: embedding lookup, RMSNorm, SwiGLU, and the step's q/k
// preparation (bias, q/k norm, RoPE) with K/V written into the paged cache.
#include <string>

#include "kernels.h"

namespace pc {
namespace {

constexpr int kThreads = 256;

// Block per token: group gi of the token's embedding row, by thread.
template <int TYPE>
__global__ void embedKernel(DeviceWeight E, const int32_t* __restrict__ tokens, float* __restrict__ x) {
  const int64_t t = blockIdx.x;
  const int64_t G = E.cols / 32;
  const int64_t row = tokens[t];
  for (int64_t gi = threadIdx.x; gi < G; gi += blockDim.x) {
    float v[32];
    decodeGroup<TYPE>(E, row * G + gi, v);
    float* o = x + t * E.cols + gi * 32;
    for (int i = 0; i < 32; i++) o[i] = v[i];
  }
}

// Block per row; the sum of squares in f32, as the CPU's rmsNorm.
__global__ void rmsNormKernel(const float* __restrict__ x, const int32_t* __restrict__ rows, int64_t D,
                              const float* __restrict__ w, float eps, float* __restrict__ out) {
  __shared__ float scratch[32];
  const int64_t r = blockIdx.x;
  const float* xr = x + (rows ? rows[r] : r) * D;
  float ss = 0;
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) ss += xr[i] * xr[i];
  ss = blockSum(ss, scratch);
  const float scale = 1.0f / sqrtf(ss / static_cast<float>(D) + eps);
  float* o = out + r * D;
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) o[i] = xr[i] * scale * w[i];
}

__global__ void swigluKernel(const float* __restrict__ gu, int64_t T, int64_t I, float* __restrict__ act) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= T * I) return;
  const int64_t t = i / I, k = i % I;
  const float g = gu[t * 2 * I + k];
  act[i] = g / (1.0f + expf(-g)) * gu[t * 2 * I + I + k];
}

// Block per token, warp per head (q heads, then k heads, then v heads). The head is staged
// in shared memory (bias added, q/k norm applied), then rotated pair by pair; q is written
// back scaled, k and v go to the cache as f16.
__global__ void ropeKvKernel(RopeKvParams p) {
  PC_DYNAMIC_SMEM(float, stage);  // [warps × hd]
  const int64_t t = blockIdx.x;
  const int warps = static_cast<int>(blockDim.x) / 32, w = warpId(), lane = laneId();
  const int hd = p.hd, half = hd / 2;
  const int qDim = p.heads * hd, kvDim = p.kvHeads * hd, qkvDim = qDim + 2 * kvDim;
  float* row = p.qkv + t * qkvDim;
  float* buf = stage + w * hd;
  const int32_t pos = p.positions[t];
  const int32_t seq = p.tokenSeq[t];
  const int32_t block = p.blockTables[p.blockTableOffsets[seq] + pos / p.blockSize];
  const int64_t slot = pos % p.blockSize;
  for (int h = w; h < p.heads + 2 * p.kvHeads; h += warps) {
    const bool isQ = h < p.heads, isK = !isQ && h < p.heads + p.kvHeads;
    float* v = row + static_cast<int64_t>(h) * hd;
    float ss = 0;
    for (int i = lane; i < hd; i += 32) {
      float val = v[i];
      if (p.bias) val += p.bias[h * hd + i];
      buf[i] = val;
      ss += val * val;
    }
    const float* norm = isQ ? p.qNorm : isK ? p.kNorm : nullptr;
    if (norm) {
      ss = warpSum(ss);
      const float scale = 1.0f / sqrtf(ss / static_cast<float>(hd) + p.eps);
      for (int i = lane; i < hd; i += 32) buf[i] = buf[i] * scale * norm[i];
    }
    __syncwarp();
    if (isQ || isK) {
      for (int i = lane; i < half; i += 32) {
        const int ia = p.neox ? i : 2 * i, ib = p.neox ? i + half : 2 * i + 1;
        // The angle in double: positions up to millions times frequencies near 1 lose the
        // fraction in float (as the CPU's ropeTables).
        const double angle = static_cast<double>(pos) * static_cast<double>(p.invFreq[i]);
        const float c = static_cast<float>(cos(angle)), sn = static_cast<float>(sin(angle));
        const float a = buf[ia], b = buf[ib];
        const float ra = a * c - b * sn, rb = a * sn + b * c;
        if (isQ) {
          v[ia] = ra * p.qScale;
          v[ib] = rb * p.qScale;
        } else {
          uint16_t* kd = p.kCache + ((static_cast<int64_t>(block) * p.kvHeads + (h - p.heads)) * p.blockSize + slot) * hd;
          kd[ia] = floatToF16(ra);
          kd[ib] = floatToF16(rb);
        }
      }
    } else {
      uint16_t* vd =
          p.vCache + ((static_cast<int64_t>(block) * p.kvHeads + (h - p.heads - p.kvHeads)) * p.blockSize + slot) * hd;
      for (int i = lane; i < hd; i += 32) vd[i] = floatToF16(buf[i]);
    }
    __syncwarp();  // buf is reused by this warp's next head
  }
}

// Block per (pair, layer, K or V): copies one cache block.
__global__ void copyBlocksKernel(uint16_t* kCache, uint16_t* vCache, int64_t layerStride, int64_t blockStride,
                                 const int32_t* __restrict__ pairs) {
  const int64_t pair = blockIdx.x, layer = blockIdx.y;
  uint16_t* base = (blockIdx.z == 0 ? kCache : vCache) + layer * layerStride;
  const int64_t src = pairs[2 * pair], dst = pairs[2 * pair + 1];
  if (src == dst) return;
  const uint4* from = reinterpret_cast<const uint4*>(base + src * blockStride);
  uint4* to = reinterpret_cast<uint4*>(base + dst * blockStride);
  for (int64_t i = threadIdx.x; i < blockStride / 8; i += blockDim.x) to[i] = from[i];
}

}  // namespace

void embed(const DeviceWeight& E, const int32_t* tokens, int64_t T, float* x, const Stream& s) {
  const dim3 grid(static_cast<unsigned>(T)), block(128);
  withWeightType(E.type, "embed", [&](auto type) {
    launch("embed", embedKernel<decltype(type)::value>, grid, block, 0, s, E, tokens, x);
  });
}

void rmsNorm(const float* x, const int32_t* rows, int64_t R, int64_t D, const float* w, float eps, float* out,
             const Stream& s) {
  launch("rmsNorm", rmsNormKernel, dim3(static_cast<unsigned>(R)), dim3(kThreads), 0, s, x, rows, D, w, eps, out);
}

void swiglu(const float* gu, int64_t T, int64_t I, float* act, const Stream& s) {
  launch("swiglu", swigluKernel, dim3(static_cast<unsigned>(ceilDiv64(T * I, kThreads))), dim3(kThreads), 0, s, gu, T, I,
         act);
}

void ropeAndStoreKv(const RopeKvParams& p, const Stream& s) {
  const int warps = 8;
  launch("ropeAndStoreKv", ropeKvKernel, dim3(static_cast<unsigned>(p.T)), dim3(warps * 32),
         static_cast<size_t>(warps) * p.hd * sizeof(float), s, p);
}

void copyKvBlocks(uint16_t* kCache, uint16_t* vCache, int64_t layerStride, int64_t blockStride, const int32_t* pairs,
                  int64_t nPairs, int64_t layers, const Stream& s) {
  if (nPairs == 0) return;
  launch("copyKvBlocks", copyBlocksKernel, dim3(static_cast<unsigned>(nPairs), static_cast<unsigned>(layers), 2),
         dim3(256), 0, s, kCache, vCache, layerStride, blockStride, pairs);
}

}  // namespace pc
