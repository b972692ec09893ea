// GGUF Q5_0 / Q5_1 / Q5_K / Q3_K / Q2_K / IQ4_NL / IQ4_XS rows → the bit-plane group layouts
// of planes.h, and back (the reference path reads the layouts through dequantizePlaneRow).
// Each 32-value block is first unpacked to its integers and the file's own scale fields
// (unpackBlock), then written into the planes and scale arrays: nothing is rounded.
#include <cstring>
#include <stdexcept>

#include "kernels/planes.h"

namespace prism::kernels {

namespace {

// One 32-value block of a GGUF row: the integer of each value (as the planes hold it) and
// the block's scale fields, still in the file's encoding.
struct Block {
  uint8_t q[kQK];
  uint16_t d = 0, m = 0;  // f16 bits: d and m (Q5_1) / dmin (Q5_K, Q2_K), per block or super-block
  uint8_t a = 0, b = 0;   // 6-bit sc, mn (Q5_K); scA, scB (Q3_K); ls (IQ4_XS, in a)
  uint8_t a2 = 0, b2 = 0; // Q2_K: scA | mnA << 4, scB | mnB << 4
};

void unpackBlock(TensorType type, const uint8_t* row, int64_t blk, Block* out) {
  switch (type) {
    case TensorType::Q5_0:
    case TensorType::Q5_1: {
      const bool withMin = type == TensorType::Q5_1;
      const uint8_t* p = row + blk * (withMin ? kQ5_1Bytes : kQ5_0Bytes);
      out->d = loadU16(p);
      if (withMin) out->m = loadU16(p + 2);
      const uint8_t* qhp = p + (withMin ? 4 : 2);
      uint32_t qh;
      std::memcpy(&qh, qhp, 4);
      for (int i = 0; i < kQK; ++i)
        out->q[i] = static_cast<uint8_t>(((qhp[4 + i % 16] >> (i < 16 ? 0 : 4)) & 0xF) | (((qh >> i) & 1) << 4));
      return;
    }
    case TensorType::Q5_K: {
      const uint8_t* sb = row + (blk / 8) * kQ5_KBytes;
      const int j = static_cast<int>(blk % 8);
      out->d = loadU16(sb);
      out->m = loadU16(sb + 2);
      q4kScaleMin(j, sb + 4, &out->a, &out->b);
      const uint8_t* qh = sb + 16;
      const uint8_t* ql = sb + 48 + 32 * (j / 2);
      for (int l = 0; l < kQK; ++l)
        out->q[l] = static_cast<uint8_t>(((ql[l] >> (4 * (j & 1))) & 0xF) | (((qh[l] >> j) & 1) << 4));
      return;
    }
    case TensorType::IQ4_NL: {
      const uint8_t* p = row + blk * kIQ4_NLBytes;
      out->d = loadU16(p);
      for (int i = 0; i < 16; ++i) {
        out->q[i] = p[2 + i] & 0xF;
        out->q[i + 16] = p[2 + i] >> 4;
      }
      return;
    }
    case TensorType::IQ4_XS: {
      const uint8_t* sb = row + (blk / 8) * kIQ4_XSBytes;
      const int ib = static_cast<int>(blk % 8);
      out->d = loadU16(sb);
      out->a = static_cast<uint8_t>(iq4xsScale(ib, sb));
      const uint8_t* qs = sb + 8 + 16 * ib;
      for (int i = 0; i < 16; ++i) {
        out->q[i] = qs[i] & 0xF;
        out->q[i + 16] = qs[i] >> 4;
      }
      return;
    }
    case TensorType::Q3_K: {
      const uint8_t* sb = row + (blk / 8) * kQ3_KBytes;
      const int b8 = static_cast<int>(blk % 8), n = b8 / 4, j = b8 % 4;  // values 32·b8 ..: half n, shift j
      out->d = loadU16(sb + 108);
      out->a = static_cast<uint8_t>(q3kScale(2 * b8, sb + 96));
      out->b = static_cast<uint8_t>(q3kScale(2 * b8 + 1, sb + 96));
      for (int l = 0; l < kQK; ++l)
        out->q[l] = static_cast<uint8_t>(((sb[32 + 32 * n + l] >> (2 * j)) & 3) | (((sb[l] >> (4 * n + j)) & 1) << 2));
      return;
    }
    case TensorType::Q2_K: {
      const uint8_t* sb = row + (blk / 8) * kQ2_KBytes;
      const int b8 = static_cast<int>(blk % 8), n = b8 / 4, j = b8 % 4;
      out->d = loadU16(sb + 80);
      out->m = loadU16(sb + 82);
      out->a2 = sb[2 * b8];
      out->b2 = sb[2 * b8 + 1];
      for (int l = 0; l < kQK; ++l) out->q[l] = static_cast<uint8_t>((sb[16 + 32 * n + l] >> (2 * j)) & 3);
      return;
    }
    default:
      throw std::invalid_argument("repackPlanes: no plane layout for this type");
  }
}

// Byte of vector v (0..7) holding value k (0..31) of lane j: 4j + k % 4 (v = k / 4).
inline int laneByte(int j, int k) { return 4 * j + k % 4; }

void putBits(uint8_t* word, int bitOffset, int bits, uint32_t value) {
  for (int i = 0; i < bits; ++i)
    if ((value >> i) & 1) word[(bitOffset + i) / 8] = static_cast<uint8_t>(word[(bitOffset + i) / 8] | (1 << ((bitOffset + i) % 8)));
}
uint32_t getBits(const uint8_t* word, int bitOffset, int bits) {
  uint32_t v = 0;
  for (int i = 0; i < bits; ++i) v |= static_cast<uint32_t>((word[(bitOffset + i) / 8] >> ((bitOffset + i) % 8)) & 1) << i;
  return v;
}

}  // namespace

void repackPlanes(TensorType type, const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst) {
  const Layout layout = planeLayoutFor(type);
  if (layout == Layout::Gguf) throw std::invalid_argument("repackPlanes: no plane layout for this type");
  const size_t srcRowBytes = typeRowBytes(type, cols);
  const int64_t blocks = cols / kQK;
  const size_t rowBytes = planeRowBytes(cols, layout), groupBytes = planeGroupBytes(layout);
  const size_t laneBytes = planeLaneBytes(layout);
  dst->assign(rowBytes * static_cast<size_t>(rows), 0);  // padding blocks: zero values and scales
  Block blk;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = src + srcRowBytes * static_cast<size_t>(r);
    const PlaneRow pr = planeRow(dst->data(), cols, layout, r);
    uint8_t* planes = const_cast<uint8_t*>(pr.planes);
    uint8_t* lanes = const_cast<uint8_t*>(pr.lanes);
    uint8_t* ds = const_cast<uint8_t*>(pr.d);
    uint8_t* ms = const_cast<uint8_t*>(pr.m);
    for (int64_t b = 0; b < blocks; ++b) {
      unpackBlock(type, row, b, &blk);
      const int64_t g = b / kQ4GBlocks;
      const int j = static_cast<int>(b % kQ4GBlocks);
      uint8_t* grp = planes + g * groupBytes;
      for (int k = 0; k < kQK; ++k) {
        const int v = k / 4, p = laneByte(j, k), q = blk.q[k];
        switch (layout) {
          case Layout::Q5G0:
          case Layout::Q5G1:
          case Layout::Q5GK:
            grp[(v / 2) * 64 + p] = static_cast<uint8_t>(grp[(v / 2) * 64 + p] | ((q & 0xF) << (4 * (v & 1))));
            grp[256 + p] = static_cast<uint8_t>(grp[256 + p] | ((q >> 4) << v));
            break;
          case Layout::IQ4G:
          case Layout::IQ4GX:
            grp[(v / 2) * 64 + p] = static_cast<uint8_t>(grp[(v / 2) * 64 + p] | (q << (4 * (v & 1))));
            break;
          case Layout::Q3G:
            grp[(v / 4) * 64 + p] = static_cast<uint8_t>(grp[(v / 4) * 64 + p] | ((q & 3) << (2 * (v % 4))));
            grp[128 + p] = static_cast<uint8_t>(grp[128 + p] | ((q >> 2) << v));
            break;
          default:  // Layout::Q2G
            grp[(v / 4) * 64 + p] = static_cast<uint8_t>(grp[(v / 4) * 64 + p] | (q << (2 * (v % 4))));
        }
      }
      uint8_t* lane = lanes + g * laneBytes;
      switch (layout) {
        case Layout::Q5G0:
        case Layout::IQ4G:
          std::memcpy(ds + b * 2, &blk.d, 2);
          break;
        case Layout::Q5G1:
          std::memcpy(ds + b * 2, &blk.d, 2);
          std::memcpy(ms + b * 2, &blk.m, 2);
          break;
        case Layout::Q5GK:
        case Layout::Q3G:
          lane[j] = static_cast<uint8_t>((blk.a & 0xF) | ((blk.b & 0xF) << 4));
          putBits(lane + 16, 2 * j, 2, blk.a >> 4);
          putBits(lane + 20, 2 * j, 2, blk.b >> 4);
          break;
        case Layout::IQ4GX:
          putBits(lane, 4 * j, 4, blk.a & 0xF);
          putBits(lane + 8, 2 * j, 2, blk.a >> 4);
          break;
        default:  // Layout::Q2G
          lane[j] = blk.a2;
          lane[16 + j] = blk.b2;
      }
      if (layout != Layout::Q5G0 && layout != Layout::Q5G1 && layout != Layout::IQ4G && b % 8 == 0) {
        std::memcpy(ds + (b / 8) * 2, &blk.d, 2);
        if (layout == Layout::Q5GK || layout == Layout::Q2G) std::memcpy(ms + (b / 8) * 2, &blk.m, 2);  // dmin
      }
    }
  }
}

void dequantizePlaneRow(const uint8_t* base, int64_t cols, Layout layout, int64_t row, float* out) {
  const PlaneRow pr = planeRow(base, cols, layout, row);
  const size_t groupBytes = planeGroupBytes(layout), laneBytes = planeLaneBytes(layout);
  for (int64_t b = 0; b < cols / kQK; ++b) {
    const int64_t g = b / kQ4GBlocks;
    const int j = static_cast<int>(b % kQ4GBlocks);
    const uint8_t* grp = pr.planes + g * groupBytes;
    const uint8_t* lane = pr.lanes + g * laneBytes;
    // d per block (Q5_0, Q5_1, IQ4_NL) or per super-block (the others).
    const bool perBlock = planeShape(layout).perBlock;
    const float dBlock = perBlock ? f16ToF32(loadU16(pr.d + b * 2)) : 0.0f;
    const float dSuper = perBlock ? 0.0f : f16ToF32(loadU16(pr.d + (b / 8) * 2));
    for (int k = 0; k < kQK; ++k) {
      const int v = k / 4, p = laneByte(j, k);
      float value;
      switch (layout) {
        case Layout::Q5G0:
        case Layout::Q5G1:
        case Layout::Q5GK: {
          const int q = ((grp[(v / 2) * 64 + p] >> (4 * (v & 1))) & 0xF) | (((grp[256 + p] >> v) & 1) << 4);
          if (layout == Layout::Q5G0) {
            value = static_cast<float>(q - 16) * dBlock;
          } else if (layout == Layout::Q5G1) {
            value = static_cast<float>(q) * dBlock + f16ToF32(loadU16(pr.m + b * 2));
          } else {
            const int sc = (lane[j] & 0xF) | static_cast<int>(getBits(lane + 16, 2 * j, 2) << 4);
            const int mn = (lane[j] >> 4) | static_cast<int>(getBits(lane + 20, 2 * j, 2) << 4);
            value = dSuper * static_cast<float>(sc) * static_cast<float>(q) -
                    f16ToF32(loadU16(pr.m + (b / 8) * 2)) * static_cast<float>(mn);
          }
          break;
        }
        case Layout::IQ4G:
        case Layout::IQ4GX: {
          const int q = (grp[(v / 2) * 64 + p] >> (4 * (v & 1))) & 0xF;
          if (layout == Layout::IQ4G) {
            value = dBlock * static_cast<float>(kIQ4Values[q]);
          } else {
            const int ls = static_cast<int>(getBits(lane, 4 * j, 4) | (getBits(lane + 8, 2 * j, 2) << 4));
            value = dSuper * static_cast<float>(ls - 32) * static_cast<float>(kIQ4Values[q]);
          }
          break;
        }
        case Layout::Q3G: {
          const int q = ((grp[(v / 4) * 64 + p] >> (2 * (v % 4))) & 3) | (((grp[128 + p] >> v) & 1) << 2);
          const int half = k < 16 ? 0 : 1;
          const int sc = ((lane[j] >> (4 * half)) & 0xF) | static_cast<int>(getBits(lane + 16 + 4 * half, 2 * j, 2) << 4);
          value = dSuper * static_cast<float>(sc - 32) * static_cast<float>(q - 4);
          break;
        }
        default: {  // Layout::Q2G
          const int q = (grp[(v / 4) * 64 + p] >> (2 * (v % 4))) & 3;
          const uint8_t s = lane[(k < 16 ? 0 : 16) + j];
          value = dSuper * static_cast<float>(s & 0xF) * static_cast<float>(q) -
                  f16ToF32(loadU16(pr.m + (b / 8) * 2)) * static_cast<float>(s >> 4);
        }
      }
      out[b * kQK + k] = value;
    }
  }
}

}  // namespace prism::kernels
