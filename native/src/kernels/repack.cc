// Weight repacking done once by prepareLinear: GGUF 4-bit blocks → Layout::Q4X and
// Layout::Q4XV, and the group layouts of the int8 kernels (internal.h and q4xv.h say why).
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

#include "kernels/internal.h"
#include "kernels/q4xv.h"

namespace prism::kernels {

namespace {

// Block b of a GGUF row as (32 nibble values, d, m) with value = d*q + m.
void unpackBlock(TensorType type, const uint8_t* row, int64_t b, uint8_t* q, float* d, float* m) {
  switch (type) {
    case TensorType::Q4_0: {
      const uint8_t* p = row + b * kQ4_0Bytes;
      *d = f16ToF32(loadU16(p));
      *m = -8.0f * *d;
      for (int i = 0; i < 16; ++i) {
        q[i] = p[2 + i] & 0xF;
        q[i + 16] = p[2 + i] >> 4;
      }
      return;
    }
    case TensorType::Q4_1: {
      const uint8_t* p = row + b * kQ4_1Bytes;
      *d = f16ToF32(loadU16(p));
      *m = f16ToF32(loadU16(p + 2));
      for (int i = 0; i < 16; ++i) {
        q[i] = p[4 + i] & 0xF;
        q[i + 16] = p[4 + i] >> 4;
      }
      return;
    }
    case TensorType::Q4_K: {
      const uint8_t* sb = row + (b / 8) * kQ4_KBytes;
      int j = static_cast<int>(b % 8);
      uint8_t sc, mn;
      q4kScaleMin(j, sb + 4, &sc, &mn);
      *d = f16ToF32(loadU16(sb)) * sc;
      *m = -f16ToF32(loadU16(sb + 2)) * mn;
      const uint8_t* qs = sb + 16 + 32 * (j / 2);
      for (int i = 0; i < 32; ++i) q[i] = (qs[i] >> ((j & 1) * 4)) & 0xF;
      return;
    }
    default:
      throw std::invalid_argument("repackQ4X: not a 4-bit type");
  }
}

}  // namespace

void repackQ4X(TensorType type, const uint8_t* src, int64_t rows, int64_t cols, uint8_t* dst) {
  const size_t srcRowBytes = typeRowBytes(type, cols);
  const int64_t blocks = cols / kQK;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = src + srcRowBytes * static_cast<size_t>(r);
    Q4XRow out = q4xRow(dst, cols, r);
    uint8_t* nibbles = const_cast<uint8_t*>(out.nibbles);
    float* d = const_cast<float*>(out.d);
    float* m = const_cast<float*>(out.m);
    uint8_t q[kQK];
    for (int64_t b = 0; b < blocks; ++b) {
      unpackBlock(type, row, b, q, &d[b], &m[b]);
      uint8_t* group = nibbles + (b / 2) * 32;
      int shift = (b & 1) * 4;
      for (int i = 0; i < kQK; ++i) {
        if (shift == 0) group[i] = q[i];
        else group[i] = static_cast<uint8_t>(group[i] | (q[i] << 4));
      }
    }
  }
}

Layout repackQ4G(TensorType type, const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst) {
  const size_t srcRowBytes = typeRowBytes(type, cols);
  const int64_t blocks = cols / kQK, groups = q4gGroups(cols), padded = groups * kQ4GBlocks;
  // f16 scales when every d and m of the tensor survives the round trip exactly.
  std::vector<float> d(static_cast<size_t>(rows * padded), 0.0f), m(d.size(), 0.0f);
  std::vector<uint8_t> q(static_cast<size_t>(rows * padded) * kQK, 0);
  bool exactF16 = true;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = src + srcRowBytes * static_cast<size_t>(r);
    for (int64_t b = 0; b < blocks; ++b) {
      const size_t i = static_cast<size_t>(r * padded + b);
      unpackBlock(type, row, b, &q[i * kQK], &d[i], &m[i]);
      exactF16 = exactF16 && f16ToF32(f32ToF16(d[i])) == d[i] && f16ToF32(f32ToF16(m[i])) == m[i];
    }
  }
  const Layout layout = !exactF16 ? Layout::Q4G32 : type == TensorType::Q4_0 ? Layout::Q4G0 : Layout::Q4G16;
  const size_t rowBytes = q4gRowBytes(cols, layout), sb = q4gScaleBytes(layout);
  dst->assign(rowBytes * static_cast<size_t>(rows), 0);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* out = dst->data() + rowBytes * static_cast<size_t>(r);
    uint8_t* ds = out + static_cast<size_t>(groups) * 256;
    uint8_t* ms = ds + static_cast<size_t>(padded) * sb;
    for (int64_t b = 0; b < padded; ++b) {
      const size_t i = static_cast<size_t>(r * padded + b);
      const uint8_t* qb = &q[i * kQK];
      uint8_t* group = out + (b / kQ4GBlocks) * 256;
      const int j = static_cast<int>(b % kQ4GBlocks);
      // value k of the block sits in vector v = k/4 at byte 4j + k%4; vector v is chunk v/2's
      // low (v even) or high (v odd) nibbles.
      for (int k = 0; k < kQK; ++k) {
        const int v = k / 4;
        uint8_t& byte = group[(v / 2) * 64 + 4 * j + k % 4];
        byte = static_cast<uint8_t>(byte | (qb[k] << ((v & 1) * 4)));
      }
      if (sb == 2) {
        const uint16_t hd = f32ToF16(d[i]), hm = f32ToF16(m[i]);
        std::memcpy(ds + b * 2, &hd, 2);
        if (layout != Layout::Q4G0) std::memcpy(ms + b * 2, &hm, 2);
      } else {
        std::memcpy(ds + b * 4, &d[i], 4);
        std::memcpy(ms + b * 4, &m[i], 4);
      }
    }
  }
  return layout;
}

void dequantizeQ4GRow(const uint8_t* base, int64_t cols, Layout layout, int64_t row, float* out) {
  const uint8_t* p = q4gRow(base, cols, layout, row);
  const int64_t groups = q4gGroups(cols), padded = groups * kQ4GBlocks;
  const size_t sb = q4gScaleBytes(layout);
  const uint8_t* ds = p + static_cast<size_t>(groups) * 256;
  const uint8_t* ms = ds + static_cast<size_t>(padded) * sb;
  for (int64_t b = 0; b < cols / kQK; ++b) {
    float d, m;
    if (sb == 2) {
      d = f16ToF32(loadU16(ds + b * 2));
      m = layout == Layout::Q4G0 ? -8.0f * d : f16ToF32(loadU16(ms + b * 2));
    } else {
      std::memcpy(&d, ds + b * 4, 4);
      std::memcpy(&m, ms + b * 4, 4);
    }
    const uint8_t* group = p + (b / kQ4GBlocks) * 256;
    const int j = static_cast<int>(b % kQ4GBlocks);
    for (int k = 0; k < kQK; ++k) {
      const int v = k / 4;
      const int q = (group[(v / 2) * 64 + 4 * j + k % 4] >> ((v & 1) * 4)) & 0xF;
      out[b * kQK + k] = d * static_cast<float>(q) + m;
    }
  }
}

namespace {
// Value k (0..31) of 32-value block b of a Q6_K row: 6-bit q, and the block's two
// sub-block scales and super-block d.
void unpackQ6K(const uint8_t* row, int64_t b, uint8_t* q, int8_t* scA, int8_t* scB, uint16_t* d) {
  const uint8_t* sb = row + (b / 8) * kQ6_KBytes;
  const uint8_t* ql = sb;
  const uint8_t* qh = sb + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(sb + 192);
  const int e0 = static_cast<int>(b % 8) * 32;
  for (int k = 0; k < kQK; ++k) {
    const int e = e0 + k, h = e / 128, s = (e % 128) / 64, i = e % 64;
    const int lo = (ql[h * 64 + i] >> (4 * s)) & 0xF;
    const int hi = (qh[h * 32 + i % 32] >> (2 * (2 * s + i / 32))) & 3;
    q[k] = static_cast<uint8_t>(lo | (hi << 4));
  }
  *scA = sc[e0 / 16];
  *scB = sc[e0 / 16 + 1];
  *d = loadU16(sb + 208);
}
}  // namespace

Layout repackQ6G(const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst) {
  const size_t srcRowBytes = typeRowBytes(TensorType::Q6_K, cols);
  const int64_t blocks = cols / kQK, groups = q4gGroups(cols), padded = groups * kQ4GBlocks;
  const size_t rowBytes = q6gRowBytes(cols);
  dst->assign(rowBytes * static_cast<size_t>(rows), 0);
  uint8_t q[kQK];
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = src + srcRowBytes * static_cast<size_t>(r);
    uint8_t* out = dst->data() + rowBytes * static_cast<size_t>(r);
    int8_t* sa = reinterpret_cast<int8_t*>(out + static_cast<size_t>(groups) * 384);
    int8_t* sbs = sa + padded;
    uint8_t* ds = reinterpret_cast<uint8_t*>(sbs + padded);
    for (int64_t b = 0; b < blocks; ++b) {
      uint16_t d;
      unpackQ6K(row, b, q, &sa[b], &sbs[b], &d);
      if (b % 8 == 0) std::memcpy(ds + (b / 8) * 2, &d, 2);
      uint8_t* group = out + (b / kQ4GBlocks) * 384;
      const int j = static_cast<int>(b % kQ4GBlocks);
      for (int k = 0; k < kQK; ++k) {
        const int v = k / 4, p = 4 * j + k % 4;
        group[(v / 2) * 64 + p] = static_cast<uint8_t>(group[(v / 2) * 64 + p] | ((q[k] & 0xF) << ((v & 1) * 4)));
        group[256 + (v / 4) * 64 + p] = static_cast<uint8_t>(group[256 + (v / 4) * 64 + p] | ((q[k] >> 4) << (2 * (v % 4))));
      }
    }
  }
  return Layout::Q6G;
}

void dequantizeQ6GRow(const uint8_t* base, int64_t cols, int64_t row, float* out) {
  const int64_t groups = q4gGroups(cols), padded = groups * kQ4GBlocks;
  const uint8_t* p = base + q6gRowBytes(cols) * static_cast<size_t>(row);
  const int8_t* sa = reinterpret_cast<const int8_t*>(p + static_cast<size_t>(groups) * 384);
  const int8_t* sbs = sa + padded;
  const uint8_t* ds = reinterpret_cast<const uint8_t*>(sbs + padded);
  for (int64_t b = 0; b < cols / kQK; ++b) {
    const float d = f16ToF32(loadU16(ds + (b / 8) * 2));
    const uint8_t* group = p + (b / kQ4GBlocks) * 384;
    const int j = static_cast<int>(b % kQ4GBlocks);
    for (int k = 0; k < kQK; ++k) {
      const int v = k / 4, pp = 4 * j + k % 4;
      const int lo = (group[(v / 2) * 64 + pp] >> ((v & 1) * 4)) & 0xF;
      const int hi = (group[256 + (v / 4) * 64 + pp] >> (2 * (v % 4))) & 3;
      out[b * kQK + k] = d * static_cast<float>(k < 16 ? sa[b] : sbs[b]) * static_cast<float>((lo | (hi << 4)) - 32);
    }
  }
}

Layout repackQ4GK(const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst) {
  const size_t srcRowBytes = typeRowBytes(TensorType::Q4_K, cols);
  const int64_t blocks = cols / kQK, groups = q4gGroups(cols), padded = groups * kQ4GBlocks;
  const size_t rowBytes = q4gkRowBytes(cols);
  dst->assign(rowBytes * static_cast<size_t>(rows), 0);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = src + srcRowBytes * static_cast<size_t>(r);
    uint8_t* out = dst->data() + rowBytes * static_cast<size_t>(r);
    uint8_t* scs = out + static_cast<size_t>(groups) * 256;
    uint8_t* mns = scs + padded;
    uint8_t* ds = mns + padded;
    uint8_t* dmins = ds + padded / 8 * 2;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* sb = row + (b / 8) * kQ4_KBytes;
      const int j = static_cast<int>(b % 8);
      q4kScaleMin(j, sb + 4, &scs[b], &mns[b]);
      if (j == 0) {
        std::memcpy(ds + (b / 8) * 2, sb, 2);
        std::memcpy(dmins + (b / 8) * 2, sb + 2, 2);
      }
      const uint8_t* qs = sb + 16 + 32 * (j / 2);
      uint8_t* group = out + (b / kQ4GBlocks) * 256;
      const int gj = static_cast<int>(b % kQ4GBlocks);
      for (int k = 0; k < kQK; ++k) {
        const int v = k / 4;
        const uint8_t q = (qs[k] >> ((j & 1) * 4)) & 0xF;
        uint8_t& byte = group[(v / 2) * 64 + 4 * gj + k % 4];
        byte = static_cast<uint8_t>(byte | (q << ((v & 1) * 4)));
      }
    }
  }
  return Layout::Q4GK;
}

void dequantizeQ4GKRow(const uint8_t* base, int64_t cols, int64_t row, float* out) {
  const int64_t groups = q4gGroups(cols), padded = groups * kQ4GBlocks;
  const uint8_t* p = base + q4gkRowBytes(cols) * static_cast<size_t>(row);
  const uint8_t* scs = p + static_cast<size_t>(groups) * 256;
  const uint8_t* mns = scs + padded;
  const uint8_t* ds = mns + padded;
  const uint8_t* dmins = ds + padded / 8 * 2;
  for (int64_t b = 0; b < cols / kQK; ++b) {
    const float d = f16ToF32(loadU16(ds + (b / 8) * 2)) * scs[b];
    const float m = -f16ToF32(loadU16(dmins + (b / 8) * 2)) * mns[b];
    const uint8_t* group = p + (b / kQ4GBlocks) * 256;
    const int j = static_cast<int>(b % kQ4GBlocks);
    for (int k = 0; k < kQK; ++k) {
      const int v = k / 4;
      const int q = (group[(v / 2) * 64 + 4 * j + k % 4] >> ((v & 1) * 4)) & 0xF;
      out[b * kQK + k] = d * static_cast<float>(q) + m;
    }
  }
}

Layout repackQ8G(const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst) {
  const size_t srcRowBytes = typeRowBytes(TensorType::Q8_0, cols);
  const int64_t blocks = cols / kQK, groups = q4gGroups(cols);
  const size_t rowBytes = q8gRowBytes(cols);
  dst->assign(rowBytes * static_cast<size_t>(rows), 0);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = src + srcRowBytes * static_cast<size_t>(r);
    uint8_t* out = dst->data() + rowBytes * static_cast<size_t>(r);
    uint8_t* ds = out + static_cast<size_t>(groups) * 512;
    // Padding blocks keep d = 0 (their bytes are 0, i.e. w = -128, times d = 0).
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* blk = row + b * kQ8_0Bytes;
      std::memcpy(ds + b * 2, blk, 2);
      uint8_t* group = out + (b / kQ4GBlocks) * 512;
      const int j = static_cast<int>(b % kQ4GBlocks);
      for (int k = 0; k < kQK; ++k)
        group[(k / 4) * 64 + 4 * j + k % 4] = static_cast<uint8_t>(static_cast<int8_t>(blk[2 + k]) + 128);
    }
  }
  return Layout::Q8G;
}

void dequantizeQ8GRow(const uint8_t* base, int64_t cols, int64_t row, float* out) {
  const int64_t groups = q4gGroups(cols);
  const uint8_t* p = base + q8gRowBytes(cols) * static_cast<size_t>(row);
  const uint8_t* ds = p + static_cast<size_t>(groups) * 512;
  for (int64_t b = 0; b < cols / kQK; ++b) {
    const float d = f16ToF32(loadU16(ds + b * 2));
    const uint8_t* group = p + (b / kQ4GBlocks) * 512;
    const int j = static_cast<int>(b % kQ4GBlocks);
    for (int k = 0; k < kQK; ++k)
      out[b * kQK + k] = d * static_cast<float>(static_cast<int>(group[(k / 4) * 64 + 4 * j + k % 4]) - 128);
  }
}

void dequantizeQ4XRow(const uint8_t* base, int64_t cols, int64_t row, float* out) {
  Q4XRow r = q4xRow(base, cols, row);
  for (int64_t b = 0; b < cols / kQK; ++b) {
    const uint8_t* group = r.nibbles + (b / 2) * 32;
    int shift = (b & 1) * 4;
    for (int i = 0; i < kQK; ++i) out[b * kQK + i] = r.d[b] * ((group[i] >> shift) & 0xF) + r.m[b];
  }
}

}  // namespace prism::kernels

namespace prism::kernels {

void repackQ4XV(TensorType type, const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst) {
  const size_t srcRowBytes = typeRowBytes(type, cols);
  const int64_t blocks = q4xvBlocks(cols);
  dst->assign(q4xvBytes(rows, cols), 0);  // padding rows: q = 0, d = m = 0
  uint8_t q[kQK];
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = src + srcRowBytes * static_cast<size_t>(r);
    const int64_t g = r / kQ4XVRows;
    const int rr = static_cast<int>(r % kQ4XVRows);
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* rec = dst->data() + static_cast<size_t>(g * blocks + b) * kQ4XVRecordBytes;
      float d, m;
      unpackBlock(type, row, b, q, &d, &m);
      for (int c = 0; c < 4; ++c)
        for (int i = 0; i < 4; ++i)
          rec[64 * c + 4 * rr + i] = static_cast<uint8_t>(q[8 * c + i] | (q[8 * c + 4 + i] << 4));
      std::memcpy(rec + kQ4XVScaleOffset + 4 * rr, &d, 4);
      std::memcpy(rec + kQ4XVOffsetOffset + 4 * rr, &m, 4);
    }
  }
}

void dequantizeQ4XVRow(const uint8_t* base, int64_t cols, int64_t row, float* out) {
  const int64_t blocks = q4xvBlocks(cols), g = row / kQ4XVRows;
  const int r = static_cast<int>(row % kQ4XVRows);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* rec = q4xvRecord(base, blocks, g, b);
    float d, m;
    std::memcpy(&d, rec + kQ4XVScaleOffset + 4 * r, 4);
    std::memcpy(&m, rec + kQ4XVOffsetOffset + 4 * r, 4);
    for (int k = 0; k < kQK; ++k) out[b * kQK + k] = d * static_cast<float>(q4xvNibble(rec, r, k)) + m;
  }
}

}  // namespace prism::kernels
