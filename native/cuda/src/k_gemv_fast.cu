// The fast decode GEMV with its fused prologue and epilogues (gemv_fast.h says what and why).
#include <algorithm>
#include <string>

#include "gemv_fast.h"

namespace pc {
namespace {

constexpr int kWarps = kFastThreads / kWarp;       // 8
constexpr int kRowsPerWarp = kFastRows / kWarps;   // 2
constexpr size_t kStageBudget = 48 * 1024;         // shared memory for x per block
constexpr int kMaxTokens = 8;

// What the kernel reads of a type: int8 activations and dp4a, or f32 activations; and how
// many values a lane takes per step (one 16-byte load for the float formats).
template <int TYPE>
struct FastTraits {
  static constexpr bool kInt8 = TYPE == kQ8_0 || TYPE == kQ4_0 || TYPE == kQ4_1 || TYPE == kQ4_K;
  static constexpr int kItem = TYPE == kF16 || TYPE == kBF16 ? 8 : TYPE == kF32 ? 4 : 32;
};

bool isInt8Type(int type) { return type == kQ8_0 || type == kQ4_0 || type == kQ4_1 || type == kQ4_K; }

struct FastArgs {
  DeviceWeight W;
  GemvIn in;
  GemvOut out;
  int n = 1, splits = 1;
  int64_t groupsPerSplit = 0, tiles = 0;
  float* partial = nullptr;
  int32_t* counters = nullptr;
};

PC_DEVICE const float* inputRow(const GemvIn& in, int t) { return in.x + (in.rows ? in.rows[t] : t) * in.ldx; }

// The row of W (in this part) that local row lr of tile `tile` computes, or -1.
PC_DEVICE int64_t tileRow(const FastArgs& a, int64_t tile, int lr) {
  const int64_t rows = a.W.rows;
  switch (a.out.mode) {
    case GemvMode::SwiGlu: {
      const int64_t I = rows / 2, j = tile * 8 + (lr & 7);
      if (j >= I) return -1;
      return lr < 8 ? j : I + j;
    }
    case GemvMode::RopeKv: {
      const RopeKvEpilogue& e = a.out.rope;
      const int64_t perHead = e.hd / 16, hp = tile / perHead, k = tile % perHead;
      const int64_t h = a.out.outOffset / e.hd + hp;
      const bool rotated = h < e.heads + e.kvHeads;
      const int64_t dim = rotated && e.neox ? (lr < 8 ? 8 * k + lr : e.hd / 2 + 8 * k + lr - 8) : 16 * k + lr;
      return hp * e.hd + dim;
    }
    default: {
      const int64_t r = tile * kFastRows + lr;
      return r < rows ? r : -1;
    }
  }
}

// ---- the dot products of one row with the staged activations --------------------------------

// f32 activations: xs[t·stride + k - kBeg].
struct F32Stage {
  const float* xs;
  int64_t stride, kBeg;
};
// int8 activations: xq[t·stride + k - kBeg], and per 32 values (d, Σq) at gs[t·gStride + g - g0].
struct Int8Stage {
  const int8_t* xq;
  const float2* gs;
  int64_t stride, gStride, g0;
};

PC_DEVICE void widen8(const uint4& raw, bool bf16, float out[8]) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; i++) {
    const uint16_t lo = static_cast<uint16_t>(w[i] & 0xffff), hi = static_cast<uint16_t>(w[i] >> 16);
    out[2 * i] = bf16 ? bf16ToFloat(lo) : f16ToFloat(lo);
    out[2 * i + 1] = bf16 ? bf16ToFloat(hi) : f16ToFloat(hi);
  }
}

// acc[t] += group gi of W (decoded to f32) · x_t's 32 values at xb + t·stride.
template <int TYPE, int NTOK>
PC_DEVICE void dotGroup(const DeviceWeight& W, int64_t gi, const float* xb, int64_t stride, int n, float (&acc)[NTOK]) {
  float v[32];
  decodeGroup<TYPE>(W, gi, v);
#pragma unroll
  for (int t = 0; t < NTOK; t++) {
    if (t >= n) break;
    acc[t] += dot32(v, xb + t * stride);
  }
}

// Adds Σ_k w[k]·x_t[k] over this lane's items of rows r0 and r1 (-1: none) to acc.
template <int TYPE, int NTOK>
PC_DEVICE void dotFloat(const DeviceWeight& W, int64_t r0, int64_t r1, int64_t g0, int64_t g1, int n, const F32Stage& st,
                        float acc[kRowsPerWarp][NTOK]) {
  constexpr int kItem = FastTraits<TYPE>::kItem;
  const int lane = laneId();
  const int64_t K = W.cols, G = K / 32;
  if constexpr (kItem == 32) {
    // Types decoded to f32 a group at a time (decodeGroup, the legacy arithmetic), one row
    // after the other so that one row's 32 values are live at a time.
    for (int64_t g = g0 + lane; g < g1; g += kWarp) {
      const float* xb = st.xs + (g * 32 - st.kBeg);
      if (r0 >= 0) dotGroup<TYPE, NTOK>(W, r0 * G + g, xb, st.stride, n, acc[0]);
      if (r1 >= 0) dotGroup<TYPE, NTOK>(W, r1 * G + g, xb, st.stride, n, acc[1]);
    }
  } else {
    // 16-byte items, two per row in flight (four loads per lane before the first use).
    const int64_t rows[kRowsPerWarp] = {r0, r1};
    const int64_t i0 = g0 * (32 / kItem), i1 = g1 * (32 / kItem);
    const int64_t rowBytes = K * (TYPE == kF32 ? 4 : 2);
    for (int64_t it = i0 + lane; it < i1; it += 2 * kWarp) {
      const bool second = it + kWarp < i1;
      uint4 raw[kRowsPerWarp][2];
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; i++) {
        const uint8_t* base = W.q + rows[i] * rowBytes;
        raw[i][0] = rows[i] >= 0 ? load16(base + it * 16) : uint4{0, 0, 0, 0};
        raw[i][1] = rows[i] >= 0 && second ? load16(base + (it + kWarp) * 16) : uint4{0, 0, 0, 0};
      }
#pragma unroll
      for (int u = 0; u < 2; u++) {
        if (u == 1 && !second) break;
        const int64_t k = (it + u * kWarp) * kItem - st.kBeg;
#pragma unroll
        for (int i = 0; i < kRowsPerWarp; i++) {
          if (rows[i] < 0) continue;
          float w[8];
          if constexpr (TYPE == kF32) {
            w[0] = __uint_as_float(raw[i][u].x);
            w[1] = __uint_as_float(raw[i][u].y);
            w[2] = __uint_as_float(raw[i][u].z);
            w[3] = __uint_as_float(raw[i][u].w);
          } else {
            widen8(raw[i][u], TYPE == kBF16, w);
          }
#pragma unroll
          for (int t = 0; t < NTOK; t++) {
            if (t >= n) break;
            const float4* xp = reinterpret_cast<const float4*>(st.xs + t * st.stride + k);
            float s = 0.0f;
#pragma unroll
            for (int q = 0; q < kItem / 4; q++) {
              const float4 xv = xp[q];
              s += w[4 * q] * xv.x + w[4 * q + 1] * xv.y + w[4 * q + 2] * xv.z + w[4 * q + 3] * xv.w;
            }
            acc[i][t] += s;
          }
        }
      }
    }
  }
}

// The int8 path: per 32-value group, an exact int32 dot of the weights' integers with the
// activations' (dp4a), then the group's scales: Q8_0 d·dx·Σ; Q4_0 d·dx·(Σ − 8·Σx); Q4_1
// d·dx·Σ + m·dx·Σx; Q4_K (d·sc)·dx·Σ − (dmin·m)·dx·Σx.
template <int TYPE, int NTOK>
PC_DEVICE void dotInt8(const DeviceWeight& W, int64_t r0, int64_t r1, int64_t g0, int64_t g1, int n, const Int8Stage& st,
                       float acc[kRowsPerWarp][NTOK]) {
  static_assert(FastTraits<TYPE>::kItem == 32, "the int8 path takes whole groups");
  const int lane = laneId();
  const int64_t G = W.cols / 32;
  const int64_t rows[kRowsPerWarp] = {r0, r1};
  for (int64_t g = g0 + lane; g < g1; g += kWarp) {
    // Both rows' bytes first: two (Q4) or four (Q8_0) 16-byte loads in flight.
    uint4 raw[kRowsPerWarp][2];
    float scale[kRowsPerWarp], offset[kRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; i++) {
      scale[i] = offset[i] = 0.0f;
      raw[i][0] = raw[i][1] = uint4{0, 0, 0, 0};
      if (rows[i] < 0) continue;
      const int64_t gi = rows[i] * G + g;
      if constexpr (TYPE == kQ8_0) {
        raw[i][0] = load16(W.q + gi * 32);
        raw[i][1] = load16(W.q + gi * 32 + 16);
        scale[i] = f16ToFloat(halfAt(W.s + gi * 2));
      } else {
        raw[i][0] = load16(W.q + gi * 16);
        if constexpr (TYPE == kQ4_0) {
          scale[i] = f16ToFloat(halfAt(W.s + gi * 2));
          offset[i] = -8.0f * scale[i];
        } else if constexpr (TYPE == kQ4_1) {
          scale[i] = f16ToFloat(halfAt(W.s + gi * 4));
          offset[i] = f16ToFloat(halfAt(W.s + gi * 4 + 2));
        } else {  // Q4_K: the super-block's header, then sub-block g & 7's (sc, m)
          const uint4 hdr = load16(W.s + (gi >> 3) * 16);
          int sc, m;
          q4kScaleMinOf(static_cast<int>(gi & 7), hdr, &sc, &m);
          scale[i] = f16ToFloat(static_cast<uint16_t>(hdr.x & 0xffff)) * static_cast<float>(sc);
          offset[i] = -f16ToFloat(static_cast<uint16_t>(hdr.x >> 16)) * static_cast<float>(m);
        }
      }
    }
#pragma unroll
    for (int t = 0; t < NTOK; t++) {
      if (t >= n) break;
      const int4* xp = reinterpret_cast<const int4*>(st.xq + t * st.stride + (g - st.g0) * 32);
      const int4 xa = xp[0], xb = xp[1];
      const int x[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
      const float2 gsum = st.gs[t * st.gStride + (g - st.g0)];
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; i++) {
        if (rows[i] < 0) continue;
        const uint32_t w[8] = {raw[i][0].x, raw[i][0].y, raw[i][0].z, raw[i][0].w,
                               raw[i][1].x, raw[i][1].y, raw[i][1].z, raw[i][1].w};
        int dot = 0;
        if constexpr (TYPE == kQ8_0) {
#pragma unroll
          for (int k = 0; k < 8; k++) dot = dot4i8(static_cast<int>(w[k]), x[k], dot);
        } else {
          // Byte k of the group holds value k (low nibble) and value k + 16 (high nibble).
#pragma unroll
          for (int k = 0; k < 4; k++) {
            dot = dot4i8(static_cast<int>(w[k] & 0x0F0F0F0Fu), x[k], dot);
            dot = dot4i8(static_cast<int>((w[k] >> 4) & 0x0F0F0F0Fu), x[4 + k], dot);
          }
        }
        acc[i][t] += gsum.x * (scale[i] * static_cast<float>(dot) + offset[i] * gsum.y);
      }
    }
  }
}

// ---- the kernel ------------------------------------------------------------------------------

template <int TYPE, int NTOK>
__global__ void __launch_bounds__(kFastThreads, 1) gemvFastKernel(FastArgs a) {
  using Tr = FastTraits<TYPE>;
  PC_DYNAMIC_SMEM(uint8_t, smem);
  __shared__ float scale[kMaxTokens];
  __shared__ float red[32];
  __shared__ float res[kFastRows][kMaxTokens];
  __shared__ int isLast;
  const DeviceWeight& W = a.W;
  const int64_t K = W.cols, G = K / 32;
  const int tid = static_cast<int>(threadIdx.x), lane = laneId(), warp = warpId();
  const int64_t tile = blockIdx.x;
  const int split = static_cast<int>(blockIdx.y);
  const int64_t g0 = split * a.groupsPerSplit, g1 = g0 + a.groupsPerSplit < G ? g0 + a.groupsPerSplit : G;
  const int n = a.n;

  // 1. RMSNorm's scale of each token over the whole row (rmsNormKernel's order of additions).
  for (int t = 0; t < n; t++) {
    float sc = 1.0f;
    if (a.in.normWeight) {
      const float* xr = inputRow(a.in, t);
      float ss = 0.0f;
      for (int64_t k = tid; k < K; k += kFastThreads) ss += xr[k] * xr[k];
      ss = blockSum(ss, red);
      sc = 1.0f / sqrtf(ss / static_cast<float>(K) + a.in.eps);
    }
    if (tid == 0) scale[t] = sc;
  }
  __syncthreads();

  // 2. This split's columns of x, staged once for the block's 16 rows.
  const int64_t stride = a.groupsPerSplit * 32, kBeg = g0 * 32;
  if constexpr (!Tr::kInt8) {
    float* xs = reinterpret_cast<float*>(smem);
    for (int t = 0; t < n; t++) {
      const float* xr = inputRow(a.in, t);
      const float sc = scale[t];
      for (int64_t k = tid; k < (g1 - g0) * 32; k += kFastThreads) {
        const float v = xr[kBeg + k];
        xs[t * stride + k] = a.in.normWeight ? v * sc * a.in.normWeight[kBeg + k] : v;
      }
    }
  } else {
    // Per 32 values: d = max|x| / 127, q = round(x / d), and Σq; 4 lanes per group, 8 values
    // each. The loop is warp-uniform (the shuffles need every lane).
    int8_t* xq = reinterpret_cast<int8_t*>(smem);
    float2* gs = reinterpret_cast<float2*>(smem + static_cast<size_t>(n) * stride);
    const int64_t items = (g1 - g0) * 4;
    for (int t = 0; t < n; t++) {
      const float* xr = inputRow(a.in, t);
      const float sc = scale[t];
      for (int64_t base = static_cast<int64_t>(warp) * kWarp; base < items; base += kFastThreads) {
        const int64_t it = base + lane;
        const bool on = it < items;
        float v[8];
        float amax = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; i++) {
          v[i] = 0.0f;
          if (on) {
            const int64_t k = kBeg + it * 8 + i;
            v[i] = a.in.normWeight ? xr[k] * sc * a.in.normWeight[k] : xr[k];
          }
          amax = fmaxf(amax, fabsf(v[i]));
        }
        amax = fmaxf(amax, shflXor(amax, 1));
        amax = fmaxf(amax, shflXor(amax, 2));
        const float d = amax / 127.0f, inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        int sum = 0;
        uint32_t packed[2] = {0, 0};
#pragma unroll
        for (int i = 0; i < 8; i++) {
          const int q = roundToInt(v[i] * inv);
          sum += q;
          packed[i >> 2] |= static_cast<uint32_t>(q & 0xff) << (8 * (i & 3));
        }
        sum += shflXor(sum, 1);
        sum += shflXor(sum, 2);
        if (on) {
          uint32_t* out = reinterpret_cast<uint32_t*>(xq + t * stride + it * 8);
          out[0] = packed[0];
          out[1] = packed[1];
          if ((it & 3) == 0) gs[t * a.groupsPerSplit + it / 4] = float2{d, static_cast<float>(sum)};
        }
      }
    }
  }
  __syncthreads();

  // 3. Each warp's two rows over this split's groups.
  float acc[kRowsPerWarp][NTOK];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; i++)
#pragma unroll
    for (int t = 0; t < NTOK; t++) acc[i][t] = 0.0f;
  const int lr0 = kRowsPerWarp * warp;
  const int64_t r0 = tileRow(a, tile, lr0), r1 = tileRow(a, tile, lr0 + 1);
  if constexpr (Tr::kInt8) {
    const Int8Stage st{reinterpret_cast<const int8_t*>(smem),
                       reinterpret_cast<const float2*>(smem + static_cast<size_t>(n) * stride), stride,
                       a.groupsPerSplit, g0};
    dotInt8<TYPE, NTOK>(W, r0, r1, g0, g1, n, st, acc);
  } else {
    const F32Stage st{reinterpret_cast<const float*>(smem), stride, kBeg};
    dotFloat<TYPE, NTOK>(W, r0, r1, g0, g1, n, st, acc);
  }

  // 4. Row sums: the block's own, or, split along K, every split's added in split order by
  //    the split that arrives last.
  const int64_t tileRows = a.tiles * kFastRows;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; i++)
#pragma unroll
    for (int t = 0; t < NTOK; t++) {
      const float v = warpSum(acc[i][t]);
      if (lane == 0 && t < n) {
        if (a.splits == 1) res[lr0 + i][t] = v;
        else a.partial[(static_cast<int64_t>(split) * n + t) * tileRows + tile * kFastRows + lr0 + i] = v;
      }
    }
  if (a.splits > 1) {
    __threadfence();
    __syncthreads();
    if (tid == 0) {
      const int arrived = atomicAdd(&a.counters[tile], 1);
      isLast = arrived == a.splits - 1;
      if (isLast) a.counters[tile] = 0;
    }
    __syncthreads();
    if (!isLast) return;
    __threadfence();
    for (int i = tid; i < kFastRows * n; i += kFastThreads) {
      const int lr = i % kFastRows, t = i / kFastRows;
      float s = 0.0f;
      for (int sp = 0; sp < a.splits; sp++)
        s += loadL2(a.partial + (static_cast<int64_t>(sp) * n + t) * tileRows + tile * kFastRows + lr);
      res[lr][t] = s;
    }
  }
  __syncthreads();

  // 5. The epilogue.
  const GemvOut& o = a.out;
  if (o.mode == GemvMode::Store || o.mode == GemvMode::Accumulate) {
    for (int i = tid; i < kFastRows * n; i += kFastThreads) {
      const int lr = i % kFastRows, t = i / kFastRows;
      const int64_t r = tileRow(a, tile, lr);
      if (r < 0) continue;
      float* y = o.y + t * o.ldy + o.outOffset + r;
      *y = o.mode == GemvMode::Accumulate ? *y + res[lr][t] : res[lr][t];
    }
  } else if (o.mode == GemvMode::SwiGlu) {
    const int64_t I = W.rows / 2;
    for (int i = tid; i < 8 * n; i += kFastThreads) {
      const int lr = i % 8, t = i / 8;
      const int64_t j = tile * 8 + lr;
      if (j >= I) continue;
      const float g = res[lr][t], u = res[lr + 8][t];
      o.y[t * o.ldy + j] = g / (1.0f + expf(-g)) * u;
    }
  } else {
    const RopeKvEpilogue& e = o.rope;
    const int64_t perHead = e.hd / 16, hp = tile / perHead, k = tile % perHead;
    const int h = static_cast<int>(o.outOffset / e.hd + hp);
    const bool isQ = h < e.heads, isK = !isQ && h < e.heads + e.kvHeads;
    for (int i = tid; i < 8 * n; i += kFastThreads) {
      const int m = i % 8, t = i / 8;
      // The pair (a, b) a rotation mixes: rows 8k + m and hd/2 + 8k + m (neox) or 2i, 2i + 1.
      const int la = isQ || isK ? (e.neox ? m : 2 * m) : 2 * m, lb = isQ || isK ? (e.neox ? m + 8 : 2 * m + 1) : 2 * m + 1;
      const int64_t ra = o.outOffset + tileRow(a, tile, la), rb = o.outOffset + tileRow(a, tile, lb);
      float va = res[la][t], vb = res[lb][t];
      if (e.bias) {
        va += e.bias[ra];
        vb += e.bias[rb];
      }
      const int64_t da = ra - static_cast<int64_t>(h) * e.hd, db = rb - static_cast<int64_t>(h) * e.hd;
      if (isQ || isK) {
        const float2 cs = e.cosSin[t * (e.hd / 2) + 8 * k + m];
        const float x0 = va * cs.x - vb * cs.y, x1 = va * cs.y + vb * cs.x;
        va = x0;
        vb = x1;
      }
      if (isQ) {
        o.y[t * o.ldy + ra] = va * e.qScale;
        o.y[t * o.ldy + rb] = vb * e.qScale;
      } else {
        const int32_t pos = e.positions[t];
        const int32_t block = e.blockTables[e.blockTableOffsets[e.tokenSeq[t]] + pos / e.blockSize];
        const int kvh = isK ? h - e.heads : h - e.heads - e.kvHeads;
        uint16_t* dst = (isK ? e.kCache : e.vCache) +
                        ((static_cast<int64_t>(block) * e.kvHeads + kvh) * e.blockSize + pos % e.blockSize) * e.hd;
        dst[da] = floatToF16(va);
        dst[db] = floatToF16(vb);
      }
    }
  }
}

__global__ void ropeTableKernel(const int32_t* __restrict__ positions, int64_t T, const float* __restrict__ invFreq,
                                int half, float2* __restrict__ cosSin) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= T * half) return;
  const int64_t t = i / half;
  const int f = static_cast<int>(i % half);
  // The angle in double: positions up to millions times frequencies near 1 lose the
  // fraction in float (as ropeAndStoreKv and the CPU's ropeTables).
  const double angle = static_cast<double>(positions[t]) * static_cast<double>(invFreq[f]);
  cosSin[i] = float2{static_cast<float>(cos(angle)), static_cast<float>(sin(angle))};
}

int64_t tilesFor(const DeviceWeight& W, const GemvOut& out) {
  switch (out.mode) {
    case GemvMode::SwiGlu: return ceilDiv64(W.rows / 2, 8);
    case GemvMode::RopeKv: return W.rows / 16;
    default: return ceilDiv64(W.rows, kFastRows);
  }
}

template <int TYPE, int NTOK>
void launchFast(const FastArgs& a, size_t smem, const Stream& s) {
  launch("gemv fast", gemvFastKernel<TYPE, NTOK>,
         dim3(static_cast<unsigned>(a.tiles), static_cast<unsigned>(a.splits)), dim3(kFastThreads), smem, s, a);
}

}  // namespace

int64_t gemvFastPartialFloats(int64_t rows) { return int64_t{kFastMaxSplits} * kMaxTokens * (ceilDiv64(rows, kFastRows) + 1) * kFastRows; }
int64_t gemvFastCounters(int64_t rows) { return ceilDiv64(rows, kFastRows) + 1; }

bool gemvFastFuses(const DeviceWeight& W, const GemvOut& out) {
  switch (out.mode) {
    case GemvMode::SwiGlu: return W.rows % 2 == 0;
    case GemvMode::RopeKv: {
      const int hd = out.rope.hd;
      return hd > 0 && hd % 16 == 0 && out.outOffset % hd == 0 && W.rows % hd == 0 && out.rope.cosSin != nullptr;
    }
    default: return true;
  }
}

void gemvFast(const DeviceWeight& W, const GemvIn& in, int64_t n, const GemvOut& out, const GemvScratch& scratch,
              int multiprocessors, const Stream& s, int splits) {
  if (n < 1 || n > kMaxTokens) throw Error("gemv fast: n must be in [1, 8]");
  if (!gemvFastFuses(W, out)) throw Error("gemv fast: this part cannot take the fused epilogue");
  const int64_t G = W.cols / 32;
  FastArgs a;
  a.W = W;
  a.in = in;
  a.out = out;
  a.n = static_cast<int>(n);
  a.tiles = tilesFor(W, out);
  const bool int8 = isInt8Type(W.type);
  const size_t bytesPerGroup = static_cast<size_t>(n) * (int8 ? 32 + sizeof(float2) : 32 * sizeof(float));
  if (splits <= 0) {
    // Enough blocks for every multiprocessor twice over, and x's slice within the budget.
    const int64_t want = 2 * static_cast<int64_t>(std::max(multiprocessors, 1));
    const int64_t forBlocks = a.tiles < want ? ceilDiv64(want, a.tiles) : 1;
    const int64_t forStage = ceilDiv64(static_cast<int64_t>(G * bytesPerGroup), static_cast<int64_t>(kStageBudget));
    splits = static_cast<int>(std::max(forBlocks, forStage));
  }
  splits = static_cast<int>(std::clamp<int64_t>(splits, 1, std::min<int64_t>(kFastMaxSplits, G)));
  a.groupsPerSplit = ceilDiv64(G, splits);
  a.splits = static_cast<int>(ceilDiv64(G, a.groupsPerSplit));
  if (a.splits > 1) {
    if (scratch.partial == nullptr || a.splits * n * a.tiles * kFastRows > scratch.partialFloats ||
        scratch.counters == nullptr || a.tiles > scratch.counterCount)
      throw Error("gemv fast: split-K scratch too small");
    a.partial = scratch.partial;
    a.counters = scratch.counters;
  }
  const size_t smem = static_cast<size_t>(a.groupsPerSplit) * bytesPerGroup;
  withWeightType(W.type, "gemv fast", [&](auto type) {
    constexpr int T = decltype(type)::value;
    if (n <= 1) launchFast<T, 1>(a, smem, s);
    else if (n <= 2) launchFast<T, 2>(a, smem, s);
    else if (n <= 4) launchFast<T, 4>(a, smem, s);
    else launchFast<T, 8>(a, smem, s);
  });
}

void ropeTable(const int32_t* positions, int64_t T, const float* invFreq, int half, float2* cosSin, const Stream& s) {
  launch("rope table", ropeTableKernel, dim3(static_cast<unsigned>(ceilDiv64(T * half, 256))), dim3(256), 0, s, positions,
         T, invFreq, half, cosSin);
}

}  // namespace pc
