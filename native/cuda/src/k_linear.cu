// Linear layers: weight upload (GGML blocks → the device layout of weights.h), the decode
// GEMV, and the conversions the GEMM path (gemm.h) needs.
#include <algorithm>
#include <string>

#include "kernels.h"

namespace pc {
namespace {

// ---- upload -------------------------------------------------------------------------------


// The 16 bytes of a 4-bit group from 4-bit GGML rows of 32 bytes (Q4_K / Q5_K): value k of
// the group is the nibble at `shift` of src[k], value k + 16 that of src[16 + k].
PC_DEVICE void packNibbles(const uint8_t* src, int shift, uint8_t* q) {
  for (int k = 0; k < 16; k++) {
    const int lo = (src[k] >> shift) & 0xF, hi = (src[16 + k] >> shift) & 0xF;
    q[k] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

// One bit of each of the 32 bytes at `src` (bit `bit`) as a 32-bit word, bit i from src[i].
PC_DEVICE void packBits(const uint8_t* src, int bit, uint8_t* out) {
  for (int k = 0; k < 4; k++) {
    int b = 0;
    for (int i = 0; i < 8; i++) b |= ((src[8 * k + i] >> bit) & 1) << i;
    out[k] = static_cast<uint8_t>(b);
  }
}

// The 2-bit values at bits 2·j of src[0..32) (Q3_K / Q2_K group j of its 128-value half) in
// the layout's order: byte k holds values k, k+8, k+16, k+24 at bits 2r.
PC_DEVICE void packTwoBits(const uint8_t* src, int j, uint8_t* q) {
  for (int k = 0; k < 8; k++) {
    int b = 0;
    for (int r = 0; r < 4; r++) b |= ((src[k + 8 * r] >> (2 * j)) & 3) << (2 * r);
    q[k] = static_cast<uint8_t>(b);
  }
}

// Thread per group: rearranges the file's blocks of groups [0, groups) into the layout,
// writing at group offset `first` (a whole number of rows, so of super-blocks).
__global__ void repackKernel(int type, const uint8_t* __restrict__ raw, int64_t groups, int64_t first, uint8_t* q,
                             uint8_t* sArr, uint8_t* qh, uint8_t* sd) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= groups) return;
  const int64_t g = first + i;
  // Super-block types: group j of super-block sb of the staged rows.
  const int64_t sb = i >> 3, sbOut = (first >> 3) + sb;
  const int j = static_cast<int>(i & 7);
  switch (type) {
    case kQ8_0:
    case kQ4_0:
    case kQ4_1:
    case kIQ4_NL: {
      const int bytes = type == kQ8_0 ? 34 : type == kQ4_1 ? 20 : 18;
      const int head = type == kQ4_1 ? 4 : 2;
      const uint8_t* src = raw + i * bytes;
      const int nq = bytes - head;
      for (int k = 0; k < nq; k++) q[g * nq + k] = src[head + k];
      for (int k = 0; k < head; k++) sArr[g * head + k] = src[k];
      return;
    }
    case kQ5_0:
    case kQ5_1: {  // d [, m], qh[4], qs[16]
      const int head = type == kQ5_1 ? 4 : 2;
      const uint8_t* src = raw + i * (head + 20);
      for (int k = 0; k < head; k++) sArr[g * head + k] = src[k];
      for (int k = 0; k < 4; k++) qh[g * 4 + k] = src[head + k];
      for (int k = 0; k < 16; k++) q[g * 16 + k] = src[head + 4 + k];
      return;
    }
    case kQ4_K:
    case kQ5_K: {  // d, dmin, scales[12], [Q5_K: qh[32]], qs[128]
      const uint8_t* src = raw + sb * (type == kQ4_K ? 144 : 176);
      if (j == 0)
        for (int k = 0; k < 16; k++) sArr[sbOut * 16 + k] = src[k];
      const uint8_t* qs = src + (type == kQ4_K ? 16 : 48);
      packNibbles(qs + 32 * (j >> 1), 4 * (j & 1), q + g * 16);
      if (type == kQ5_K) packBits(src + 16, j, qh + g * 4);
      return;
    }
    case kIQ4_XS: {  // d, scales_h, scales_l[4], qs[128] (16 per group, nibbles as IQ4_NL)
      const uint8_t* src = raw + sb * 136;
      if (j == 0)
        for (int k = 0; k < 8; k++) sArr[sbOut * 8 + k] = src[k];
      for (int k = 0; k < 16; k++) q[g * 16 + k] = src[8 + 16 * j + k];
      return;
    }
    case kQ3_K: {  // hmask[32], qs[64], scales[12], d: value 32j + l has its low bits at bits
                   // 2(j % 4) of qs[32(j / 4) + l], its high bit at bit j of hmask[l]
      const uint8_t* src = raw + sb * 110;
      packTwoBits(src + 32 + 32 * (j >> 2), j & 3, q + g * 8);
      packBits(src, j, qh + g * 4);
      for (int k = 0; k < 2; k++) sArr[g * 2 + k] = static_cast<uint8_t>(static_cast<int8_t>(q3kScale(2 * j + k, src + 96) - 32));
      if (j == 0)
        for (int k = 0; k < 2; k++) sd[sbOut * 2 + k] = src[108 + k];
      return;
    }
    case kQ2_K: {  // scales[16] (scale | min << 4), qs[64] (as Q3_K's), d, dmin
      const uint8_t* src = raw + sb * 84;
      packTwoBits(src + 16 + 32 * (j >> 2), j & 3, q + g * 8);
      for (int k = 0; k < 2; k++) sArr[g * 2 + k] = src[2 * j + k];
      if (j == 0)
        for (int k = 0; k < 4; k++) sd[sbOut * 4 + k] = src[80 + k];
      return;
    }
    case kQ6_K: {
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
        sd[sbOut * 2] = src[208];
        sd[sbOut * 2 + 1] = src[209];
      }
      return;
    }
  }
}

// Bytes of one row in the file's GGML blocks.
size_t rawRowBytes(int type, int64_t cols) {
  const size_t blocks32 = static_cast<size_t>(cols / 32), blocks256 = static_cast<size_t>(cols / 256);
  switch (type) {
    case kF32: return static_cast<size_t>(cols) * 4;
    case kF16:
    case kBF16: return static_cast<size_t>(cols) * 2;
    case kQ8_0: return blocks32 * 34;
    case kQ4_0: return blocks32 * 18;
    case kQ4_1: return blocks32 * 20;
    case kQ5_0: return blocks32 * 22;
    case kQ5_1: return blocks32 * 24;
    case kIQ4_NL: return blocks32 * 18;
    case kQ2_K: return blocks256 * 84;
    case kQ3_K: return blocks256 * 110;
    case kQ4_K: return blocks256 * 144;
    case kQ5_K: return blocks256 * 176;
    case kQ6_K: return blocks256 * 210;
    case kIQ4_XS: return blocks256 * 136;
  }
  throw Error(std::string("weight type ") + weightTypeName(type) + " (GGML type " + std::to_string(type) +
              ") is not supported on the CUDA device");
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
      acc[t] += dot32(v, x + t * ldx + gi * 32);
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
  withWeightType(W.type, "dequantize", [&](auto type) {
    launch("dequantize", dequantizeKernel<decltype(type)::value, OUT>, grid, block, 0, s, W, out);
  });
}

__global__ void toBf16Kernel(const float* __restrict__ x, int64_t ldx, int64_t n, int64_t cols, uint16_t* __restrict__ out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * cols) return;
  const int64_t t = i / cols, k = i % cols;
  out[i] = floatToBf16(x[t * ldx + k]);
}

}  // namespace

void allocateWeight(int type, int64_t rows, int64_t cols, WeightStorage& w) {
  if (!weightTypeSupported(type))
    throw Error(std::string("weight type ") + weightTypeName(type) + " (GGML type " + std::to_string(type) +
                ") is not supported on the CUDA device");
  if (cols <= 0 || rows <= 0 || cols % blockValues(type) != 0 || cols % 32 != 0)
    throw Error("weight of " + std::to_string(rows) + " x " + std::to_string(cols) +
                ": columns must be a positive multiple of 32 and of the type's block");
  const int64_t groups = rows * (cols / 32);  // a multiple of 8 for the super-block types
  w.q.allocate(static_cast<size_t>(groups) * groupQBytes(type));
  const int64_t sBytes = groups * groupSBytes(type) + groups / 8 * superSBytes(type);
  if (sBytes) w.s.allocate(static_cast<size_t>(sBytes));
  if (groupQhBytes(type)) w.qh.allocate(static_cast<size_t>(groups) * groupQhBytes(type));
  if (superSdBytes(type)) w.sd.allocate(static_cast<size_t>(groups / 8) * superSdBytes(type));
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
  withWeightType(W.type, "gemv",
                 [&](auto type) { gemvFor<decltype(type)::value>(W, x, ldx, n, y, ldy, accumulate, s); });
}

void dequantizeToBf16(const DeviceWeight& W, uint16_t* out, const Stream& s) { dequantizeAny(W, out, s); }
void dequantizeToF32(const DeviceWeight& W, float* out, const Stream& s) { dequantizeAny(W, out, s); }

void convertToBf16(const float* x, int64_t ldx, int64_t n, int64_t cols, uint16_t* out, const Stream& s) {
  launch("convertToBf16", toBf16Kernel, dim3(static_cast<unsigned>(ceilDiv64(n * cols, 256))), dim3(256), 0, s, x, ldx,
         n, cols, out);
}

}  // namespace pc
