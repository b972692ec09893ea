// Linear layers: weight upload (GGML blocks → the device layout of weights.h), the decode
// GEMV, and the conversions the GEMM path (gemm.h) needs.
#include <algorithm>
#include <string>

#include "kernels.h"

namespace pc {
namespace {

// ---- upload -------------------------------------------------------------------------------


// Thread per group: rearranges the file's blocks of groups [0, groups) into the layout,
// writing at group offset `first`.
__global__ void repackKernel(int type, const uint8_t* __restrict__ raw, int64_t groups, int64_t first, uint8_t* q,
                             uint8_t* sArr, uint8_t* qh, uint8_t* sd) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= groups) return;
  const int64_t g = first + i;
  if (type == kQ8_0 || type == kQ4_0 || type == kQ4_1) {
    const int bytes = type == kQ8_0 ? 34 : type == kQ4_0 ? 18 : 20;
    const int head = type == kQ4_1 ? 4 : 2;
    const uint8_t* src = raw + i * bytes;
    const int nq = bytes - head;
    for (int k = 0; k < nq; k++) q[g * nq + k] = src[head + k];
    for (int k = 0; k < head; k++) sArr[g * head + k] = src[k];
  } else if (type == kQ4_K) {
    const int64_t sb = i >> 3;
    const int j = static_cast<int>(i & 7);
    const uint8_t* src = raw + sb * 144;
    if (j == 0)
      for (int k = 0; k < 16; k++) sArr[((first >> 3) + sb) * 16 + k] = src[k];
    const uint8_t* qs = src + 16 + 32 * (j >> 1);
    const int shift = 4 * (j & 1);
    for (int k = 0; k < 16; k++) {
      const int lo = (qs[k] >> shift) & 0xF, hi = (qs[16 + k] >> shift) & 0xF;
      q[g * 16 + k] = static_cast<uint8_t>(lo | (hi << 4));
    }
  } else if (type == kQ6_K) {
    const int64_t sb = i >> 3;
    const int j = static_cast<int>(i & 7);
    const uint8_t* src = raw + sb * 210;
    const int h = j >> 2, part = j & 3;
    const uint8_t* ql = src + 64 * h + 32 * (part & 1);
    const uint8_t* qhr = src + 128 + 32 * h;
    const int loShift = 4 * (part >> 1), hiShift = 2 * part;
    for (int k = 0; k < 16; k++) {
      const int lo0 = (ql[k] >> loShift) & 0xF, lo1 = (ql[k + 16] >> loShift) & 0xF;
      q[g * 16 + k] = static_cast<uint8_t>(lo0 | (lo1 << 4));
    }
    for (int k = 0; k < 8; k++) {
      int b = 0;
      for (int r = 0; r < 4; r++) b |= ((qhr[k + 8 * r] >> hiShift) & 3) << (2 * r);
      qh[g * 8 + k] = static_cast<uint8_t>(b);
    }
    sArr[g * 2] = src[192 + 2 * j];
    sArr[g * 2 + 1] = src[192 + 2 * j + 1];
    if (j == 0) {
      sd[((first >> 3) + sb) * 2] = src[208];
      sd[((first >> 3) + sb) * 2 + 1] = src[209];
    }
  }
}

size_t rawRowBytes(int type, int64_t cols) {
  switch (type) {
    case kF32: return static_cast<size_t>(cols) * 4;
    case kF16:
    case kBF16: return static_cast<size_t>(cols) * 2;
    case kQ8_0: return static_cast<size_t>(cols / 32) * 34;
    case kQ4_0: return static_cast<size_t>(cols / 32) * 18;
    case kQ4_1: return static_cast<size_t>(cols / 32) * 20;
    case kQ4_K: return static_cast<size_t>(cols / 256) * 144;
    case kQ6_K: return static_cast<size_t>(cols / 256) * 210;
  }
  throw Error("unsupported weight type " + std::to_string(type));
}

// ---- GEMV ---------------------------------------------------------------------------------

constexpr int kGemvWarps = 4;

// One warp per output row; lane l takes groups l, l+32, ... of the row (a warp reads 512
// contiguous bytes of a 4-bit row per step), decodes them to f32 and multiplies them by
// up to NTOK activation rows (read through L1: every row of the block reuses them).
template <int TYPE, int NTOK>
__global__ void __launch_bounds__(kGemvWarps * 32)
    gemvKernel(DeviceWeight W, const float* __restrict__ x, int64_t ldx, int n, float* __restrict__ y, int64_t ldy,
               int accumulate) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kGemvWarps + warpId();
  if (row >= W.rows) return;  // the whole warp leaves together
  const int64_t G = W.cols / 32;
  const int lane = laneId();
  float acc[NTOK];
#pragma unroll
  for (int t = 0; t < NTOK; t++) acc[t] = 0.0f;
  for (int64_t gi = lane; gi < G; gi += 32) {
    float v[32];
    decodeGroup<TYPE>(W, row * G + gi, v);
#pragma unroll
    for (int t = 0; t < NTOK; t++) {
      if (t >= n) break;
      const float4* xp = reinterpret_cast<const float4*>(x + t * ldx + gi * 32);
      float a = 0.0f;
#pragma unroll
      for (int k = 0; k < 8; k++) {
        const float4 xv = xp[k];
        a += v[4 * k] * xv.x + v[4 * k + 1] * xv.y + v[4 * k + 2] * xv.z + v[4 * k + 3] * xv.w;
      }
      acc[t] += a;
    }
  }
#pragma unroll
  for (int t = 0; t < NTOK; t++) acc[t] = warpSum(acc[t]);
  if (lane == 0) {
#pragma unroll
    for (int t = 0; t < NTOK; t++) {
      if (t >= n) break;
      float* out = y + t * ldy + row;
      *out = accumulate ? *out + acc[t] : acc[t];
    }
  }
}

template <int TYPE>
void gemvFor(const DeviceWeight& W, const float* x, int64_t ldx, int64_t n, float* y, int64_t ldy, bool accumulate,
             const Stream& s) {
  const dim3 grid(static_cast<unsigned>(ceilDiv64(W.rows, kGemvWarps))), block(kGemvWarps * 32);
  const int nn = static_cast<int>(n), acc = accumulate ? 1 : 0;
  if (n <= 1) launch("gemv", gemvKernel<TYPE, 1>, grid, block, 0, s, W, x, ldx, nn, y, ldy, acc);
  else if (n <= 2) launch("gemv", gemvKernel<TYPE, 2>, grid, block, 0, s, W, x, ldx, nn, y, ldy, acc);
  else if (n <= 4) launch("gemv", gemvKernel<TYPE, 4>, grid, block, 0, s, W, x, ldx, nn, y, ldy, acc);
  else launch("gemv", gemvKernel<TYPE, 8>, grid, block, 0, s, W, x, ldx, nn, y, ldy, acc);
}

// ---- conversions --------------------------------------------------------------------------

template <int TYPE, typename OUT>
__global__ void dequantizeKernel(DeviceWeight W, OUT* __restrict__ out) {
  const int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= W.rows * (W.cols / 32)) return;
  float v[32];
  decodeGroup<TYPE>(W, g, v);
  OUT* o = out + g * 32;
  for (int i = 0; i < 32; i++) {
    if constexpr (sizeof(OUT) == 2) o[i] = floatToBf16(v[i]);
    else o[i] = v[i];
  }
}

template <typename OUT>
void dequantizeAny(const DeviceWeight& W, OUT* out, const Stream& s) {
  const int64_t groups = W.rows * (W.cols / 32);
  const dim3 grid(static_cast<unsigned>(ceilDiv64(groups, 256))), block(256);
  switch (W.type) {
    case kF32: return launch("dequantize", dequantizeKernel<kF32, OUT>, grid, block, 0, s, W, out);
    case kF16: return launch("dequantize", dequantizeKernel<kF16, OUT>, grid, block, 0, s, W, out);
    case kBF16: return launch("dequantize", dequantizeKernel<kBF16, OUT>, grid, block, 0, s, W, out);
    case kQ8_0: return launch("dequantize", dequantizeKernel<kQ8_0, OUT>, grid, block, 0, s, W, out);
    case kQ4_0: return launch("dequantize", dequantizeKernel<kQ4_0, OUT>, grid, block, 0, s, W, out);
    case kQ4_1: return launch("dequantize", dequantizeKernel<kQ4_1, OUT>, grid, block, 0, s, W, out);
    case kQ4_K: return launch("dequantize", dequantizeKernel<kQ4_K, OUT>, grid, block, 0, s, W, out);
    case kQ6_K: return launch("dequantize", dequantizeKernel<kQ6_K, OUT>, grid, block, 0, s, W, out);
  }
  throw Error("dequantize: unsupported weight type " + std::to_string(W.type));
}

__global__ void toBf16Kernel(const float* __restrict__ x, int64_t ldx, int64_t n, int64_t cols, uint16_t* __restrict__ out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * cols) return;
  const int64_t t = i / cols, k = i % cols;
  out[i] = floatToBf16(x[t * ldx + k]);
}

}  // namespace

void allocateWeight(int type, int64_t rows, int64_t cols, WeightStorage& w) {
  if (!weightTypeSupported(type)) throw Error("weight type " + std::to_string(type) + " is not supported on the device");
  if (cols <= 0 || rows <= 0 || cols % blockValues(type) != 0 || cols % 32 != 0)
    throw Error("weight of " + std::to_string(rows) + " x " + std::to_string(cols) +
                ": columns must be a positive multiple of 32 and of the type's block");
  const int64_t groups = rows * (cols / 32);
  w.q.allocate(static_cast<size_t>(groups) * groupQBytes(type));
  const int sb = groupSBytes(type);
  if (sb) w.s.allocate(static_cast<size_t>(type == kQ4_K ? groups / 8 * 16 : groups * sb));
  if (type == kQ6_K) {
    w.qh.allocate(static_cast<size_t>(groups) * 8);
    w.sd.allocate(static_cast<size_t>(groups / 8) * 2);
  }
  w.view.type = type;
  w.view.rows = rows;
  w.view.cols = cols;
  w.view.q = w.q.get<uint8_t>();
  w.view.s = w.s.get<uint8_t>();
  w.view.qh = w.qh.get<uint8_t>();
  w.view.sd = w.sd.get<uint8_t>();
  w.rowBytes = rawRowBytes(type, cols);
}

void uploadWeightRows(WeightStorage& w, int64_t rowOffset, const void* hostBytes, int64_t rows, DeviceBuffer& staging,
                      const Stream& s) {
  const DeviceWeight& v = w.view;
  if (rowOffset < 0 || rows < 0 || rowOffset + rows > v.rows) throw Error("uploadWeightRows: rows out of range");
  const int64_t G = v.cols / 32;
  const size_t bytes = static_cast<size_t>(rows) * rawRowBytes(v.type, v.cols);
  if (v.type == kF32 || v.type == kF16 || v.type == kBF16) {
    copyToDevice(w.q.get<uint8_t>() + static_cast<size_t>(rowOffset * G) * groupQBytes(v.type), hostBytes, bytes, s);
    return;
  }
  if (staging.bytes() < bytes) {
    s.synchronize();  // the old staging buffer may still be read
    staging.allocate(bytes);
  }
  copyToDevice(staging.get(), hostBytes, bytes, s);
  const int64_t groups = rows * G;
  launch("repack", repackKernel, dim3(static_cast<unsigned>(ceilDiv64(groups, 256))), dim3(256), 0, s, v.type,
         staging.get<const uint8_t>(), groups, rowOffset * G, w.q.get<uint8_t>(), w.s.get<uint8_t>(), w.qh.get<uint8_t>(),
         w.sd.get<uint8_t>());
}

void gemv(const DeviceWeight& W, const float* x, int64_t ldx, int64_t n, float* y, int64_t ldy, bool accumulate,
          const Stream& s) {
  if (n < 1 || n > kGemvMaxTokens) throw Error("gemv: n must be in [1, 8]");
  switch (W.type) {
    case kF32: return gemvFor<kF32>(W, x, ldx, n, y, ldy, accumulate, s);
    case kF16: return gemvFor<kF16>(W, x, ldx, n, y, ldy, accumulate, s);
    case kBF16: return gemvFor<kBF16>(W, x, ldx, n, y, ldy, accumulate, s);
    case kQ8_0: return gemvFor<kQ8_0>(W, x, ldx, n, y, ldy, accumulate, s);
    case kQ4_0: return gemvFor<kQ4_0>(W, x, ldx, n, y, ldy, accumulate, s);
    case kQ4_1: return gemvFor<kQ4_1>(W, x, ldx, n, y, ldy, accumulate, s);
    case kQ4_K: return gemvFor<kQ4_K>(W, x, ldx, n, y, ldy, accumulate, s);
    case kQ6_K: return gemvFor<kQ6_K>(W, x, ldx, n, y, ldy, accumulate, s);
  }
  throw Error("gemv: unsupported weight type " + std::to_string(W.type));
}

void dequantizeToBf16(const DeviceWeight& W, uint16_t* out, const Stream& s) { dequantizeAny(W, out, s); }
void dequantizeToF32(const DeviceWeight& W, float* out, const Stream& s) { dequantizeAny(W, out, s); }

void convertToBf16(const float* x, int64_t ldx, int64_t n, int64_t cols, uint16_t* out, const Stream& s) {
  launch("convertToBf16", toBf16Kernel, dim3(static_cast<unsigned>(ceilDiv64(n * cols, 256))), dim3(256), 0, s, x, ldx,
         n, cols, out);
}

}  // namespace pc
