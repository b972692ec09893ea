// Bit-plane group layouts for the Q5_0, Q5_1, Q5_K, Q3_K, Q2_K, IQ4_NL and IQ4_XS weights,
// with int8 activations: the kLayoutQ4G group permutation (internal.h) extended by planes.
//
// A row is cut into groups of 16 blocks of 32 values (512 values; the row is padded with
// zero blocks to whole groups). Value 4v + i of block j of a group sits in "vector" v
// (0..7), byte 4j + i, so every 32-bit lane of a vector belongs to one block and one
// dot-product instruction (VNNI dpbusd, or maddubs + madd on AVX2) per vector leaves each
// block's integer sum in its own lane; vectors 0-3 hold values 0-15 of every block (the
// first 16-value sub-block of Q3_K / Q2_K), vectors 4-7 values 16-31. The activations are
// quantized into the same permutation (q4g.h). A group's quantized values are stored in
// planes of 64-byte chunks whose byte p always belongs to byte p of the vectors:
//   nibble plane (256 bytes): chunk c holds vector 2c in its low nibbles, 2c + 1 in its high;
//   pair plane (128 bytes):   chunk e holds vectors 4e..4e+3 at bits 2k..2k+1 (k = v − 4e);
//   bit plane (64 bytes):     bit v of byte p is one more bit of vector v, byte p.
// After every group's planes come the row's scales. A layout keeps each value's integer
// exactly as the file has it and the file's scales (f16 values, 6-bit integers): the
// repacks are lossless and every layout reads the file's bytes per weight (Q5_K, Q3_K and
// IQ4_XS keep their 6-bit scales packed: "six-bit lanes" below).
//
//   layout     type    planes per group        scales after the planes         value
//   kLayoutQ5G0  Q5_0   nibble + bit (320 B)    d[padded] f16                   d·(q − 16)
//   kLayoutQ5G1  Q5_1   nibble + bit            d[padded], m[padded] f16        d·q + m
//   kLayoutQ5GK  Q5_K   nibble + bit            six-bit lanes (sc, mn) per group, d·sc·q − dmin·mn
//                                               then d[supers], dmin[supers] f16
//   kLayoutIQ4G  IQ4_NL nibble (256 B)          d[padded] f16                   d·kIQ4Values[q]
//   kLayoutIQ4GX IQ4_XS nibble                  four-bit lanes + two-bit lanes   d·(ls − 32)·kIQ4Values[q]
//                                               (ls) per group, then d[supers]
//   kLayoutQ3G   Q3_K   pair + bit (192 B)      six-bit lanes (scA, scB) per     d·(sc − 32)·(q − 4), sc = scA
//                                               group, then d[supers] f16        for values 0-15, scB for 16-31
//   kLayoutQ2G   Q2_K   pair (128 B)            32 bytes per group (lane j: scA  d·sc·q − dmin·mn per 16 values
//                                               | mnA << 4, then scB | mnB << 4),
//                                               then d[supers], dmin[supers]
// (q: the value's integer from its planes: nibble | bit << 4 for Q5, pair | bit << 2 for Q3;
// padded = 16 × groups blocks, supers = padded / 8 super-blocks of 256 values.)
//
// Six-bit lanes (24 bytes per group, two 6-bit values a, b per block lane j): byte j holds
// the low 4 bits of a (low nibble) and of b (high nibble), then a 32-bit word holds the high
// 2 bits of a at bits 2j, then one for b. Four-bit + two-bit lanes (12 bytes, one 6-bit
// value per lane): a 64-bit word with the low 4 bits at bits 4j, a 32-bit word with the
// high 2 at bits 2j.
#pragma once
#include "kernels/internal.h"

namespace prism::kernels {

constexpr int kLayoutQ5G0 = 8;
constexpr int kLayoutQ5G1 = 9;
constexpr int kLayoutQ5GK = 10;
constexpr int kLayoutIQ4G = 11;
constexpr int kLayoutIQ4GX = 12;
constexpr int kLayoutQ3G = 13;
constexpr int kLayoutQ2G = 14;

static inline bool isPlaneLayout(int layout) { return layout >= kLayoutQ5G0 && layout <= kLayoutQ2G; }

// Bytes of one group's planes.
static inline size_t planeGroupBytes(int layout) {
  switch (layout) {
    case kLayoutQ5G0:
    case kLayoutQ5G1:
    case kLayoutQ5GK:
      return 320;
    case kLayoutIQ4G:
    case kLayoutIQ4GX:
      return 256;
    case kLayoutQ3G:
      return 192;
    default:
      return 128;  // kLayoutQ2G
  }
}

// Bytes of the scales after the planes, per group.
static inline size_t planeScaleBytes(int layout) {
  switch (layout) {
    case kLayoutQ5G0:
    case kLayoutIQ4G:
      return 16 * 2;
    case kLayoutQ5G1:
      return 16 * 4;
    case kLayoutQ5GK:
      return 24 + 2 * 4;  // six-bit lanes + d, dmin of the group's two super-blocks
    case kLayoutIQ4GX:
      return 12 + 4;
    case kLayoutQ3G:
      return 24 + 4;
    default:
      return 32 + 2 * 4;  // kLayoutQ2G
  }
}

static inline size_t planeRowBytes(int64_t cols, int layout) {
  return static_cast<size_t>(q4gGroups(cols)) * (planeGroupBytes(layout) + planeScaleBytes(layout));
}

// Where the parts of a plane-layout row start (all per row; scale arrays indexed by block or
// super-block of the padded row, lane arrays by group).
struct PlaneRow {
  const uint8_t* planes;  // group g: planes + g * planeGroupBytes
  const uint8_t* lanes;   // six-bit / four+two-bit / Q2 scale lanes: group g at lanes + g * laneBytes
  const uint8_t* d;       // f16 per block (Q5G0/Q5G1/IQ4G) or per super-block (K types, IQ4GX)
  const uint8_t* m;       // f16 per block (Q5G1) or per super-block (dmin: Q5GK, Q2G)
};

static inline size_t planeLaneBytes(int layout) {
  switch (layout) {
    case kLayoutQ5GK:
    case kLayoutQ3G:
      return 24;
    case kLayoutIQ4GX:
      return 12;
    case kLayoutQ2G:
      return 32;
    default:
      return 0;
  }
}

static inline PlaneRow planeRow(const uint8_t* base, int64_t cols, int layout, int64_t row) {
  const size_t groups = static_cast<size_t>(q4gGroups(cols));
  const uint8_t* p = base + planeRowBytes(cols, layout) * static_cast<size_t>(row);
  PlaneRow r;
  r.planes = p;
  r.lanes = p + groups * planeGroupBytes(layout);
  const uint8_t* after = r.lanes + groups * planeLaneBytes(layout);
  const bool perBlock = layout == kLayoutQ5G0 || layout == kLayoutQ5G1 || layout == kLayoutIQ4G;
  const size_t count = perBlock ? groups * 16 : groups * 2;  // blocks or super-blocks
  r.d = after;
  r.m = after + count * 2;
  return r;
}

// The layout prepareLinear uses for a GGUF type (0 when the type has none here).
static inline int planeLayoutFor(TensorType t) {
  switch (t) {
    case TensorType::Q5_0:
      return kLayoutQ5G0;
    case TensorType::Q5_1:
      return kLayoutQ5G1;
    case TensorType::Q5_K:
      return kLayoutQ5GK;
    case TensorType::IQ4_NL:
      return kLayoutIQ4G;
    case TensorType::IQ4_XS:
      return kLayoutIQ4GX;
    case TensorType::Q3_K:
      return kLayoutQ3G;
    case TensorType::Q2_K:
      return kLayoutQ2G;
    default:
      return 0;
  }
}

// Repacks a GGUF tensor of `type` (rows × cols) into its plane layout (planes_repack.cc).
void repackPlanes(TensorType type, const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst);
// Dequantizes one row of a plane layout (the reference path, and the repack's check).
void dequantizePlaneRow(const uint8_t* base, int64_t cols, int layout, int64_t row, float* out);

// Plane-layout matmuls with int8 activations (planes_avx2.cc, planes_avx512.cc).
void planeMatmulAvx2(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                     ThreadPool& pool, KernelScratch& scratch);
void planeMatmulAvx512(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                       ThreadPool& pool, KernelScratch& scratch);

}  // namespace prism::kernels
