// Bit-plane group layouts for the Q5_0, Q5_1, Q5_K, Q3_K, Q2_K, IQ4_NL and IQ4_XS weights,
// with int8 activations: the Layout::Q4G group permutation (internal.h) extended by planes.
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
//   Layout::Q5G0  Q5_0   nibble + bit (320 B)    d[padded] f16                   d·(q − 16)
//   Layout::Q5G1  Q5_1   nibble + bit            d[padded], m[padded] f16        d·q + m
//   Layout::Q5GK  Q5_K   nibble + bit            six-bit lanes (sc, mn) per group, d·sc·q − dmin·mn
//                                               then d[supers], dmin[supers] f16
//   Layout::IQ4G  IQ4_NL nibble (256 B)          d[padded] f16                   d·kIQ4Values[q]
//   Layout::IQ4GX IQ4_XS nibble                  four-bit lanes + two-bit lanes   d·(ls − 32)·kIQ4Values[q]
//                                               (ls) per group, then d[supers]
//   Layout::Q3G   Q3_K   pair + bit (192 B)      six-bit lanes (scA, scB) per     d·(sc − 32)·(q − 4), sc = scA
//                                               group, then d[supers] f16        for values 0-15, scB for 16-31
//   Layout::Q2G   Q2_K   pair (128 B)            32 bytes per group (lane j: scA  d·sc·q − dmin·mn per 16 values
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

// The plane layouts' shapes, one row each (in Layout order, from Q5G0): bytes of a group's
// planes, of its scale lanes and of the scales after the lanes (per group), and whether d
// (and m) are per block or per 256-value super-block.
struct PlaneShape {
  Layout layout;
  TensorType type;  // the GGUF type prepareLinear repacks into it
  size_t planeBytes, laneBytes, scaleBytes;
  bool perBlock;
};
constexpr PlaneShape kPlaneShapes[] = {
    {Layout::Q5G0, TensorType::Q5_0, 320, 0, 16 * 2, true},
    {Layout::Q5G1, TensorType::Q5_1, 320, 0, 16 * 4, true},
    {Layout::Q5GK, TensorType::Q5_K, 320, 24, 2 * 4, false},  // six-bit lanes; d, dmin of 2 super-blocks
    {Layout::IQ4G, TensorType::IQ4_NL, 256, 0, 16 * 2, true},
    {Layout::IQ4GX, TensorType::IQ4_XS, 256, 12, 4, false},
    {Layout::Q3G, TensorType::Q3_K, 192, 24, 4, false},
    {Layout::Q2G, TensorType::Q2_K, 128, 32, 2 * 4, false},
};

constexpr bool planeShapesInOrder() {
  int i = static_cast<int>(Layout::Q5G0);
  for (const PlaneShape& s : kPlaneShapes)
    if (static_cast<int>(s.layout) != i++) return false;
  return i == static_cast<int>(Layout::Q2G) + 1;
}
static_assert(planeShapesInOrder(), "kPlaneShapes: one row per plane layout, in Layout order");

constexpr const PlaneShape& planeShape(Layout layout) {
  return kPlaneShapes[static_cast<int>(layout) - static_cast<int>(Layout::Q5G0)];
}

// Bytes of one group's planes.
constexpr size_t planeGroupBytes(Layout layout) { return planeShape(layout).planeBytes; }
// Bytes of one group's scale lanes (six-bit / four+two-bit / Q2 lanes; 0: none).
constexpr size_t planeLaneBytes(Layout layout) { return planeShape(layout).laneBytes; }

static inline size_t planeRowBytes(int64_t cols, Layout layout) {
  const PlaneShape& s = planeShape(layout);
  return static_cast<size_t>(q4gGroups(cols)) * (s.planeBytes + s.laneBytes + s.scaleBytes);
}

// Where the parts of a plane-layout row start (all per row; scale arrays indexed by block or
// super-block of the padded row, lane arrays by group).
struct PlaneRow {
  const uint8_t* planes;  // group g: planes + g * planeGroupBytes
  const uint8_t* lanes;   // six-bit / four+two-bit / Q2 scale lanes: group g at lanes + g * laneBytes
  const uint8_t* d;       // f16 per block (Q5G0/Q5G1/IQ4G) or per super-block (K types, IQ4GX)
  const uint8_t* m;       // f16 per block (Q5G1) or per super-block (dmin: Q5GK, Q2G)
};

static inline PlaneRow planeRow(const uint8_t* base, int64_t cols, Layout layout, int64_t row) {
  const PlaneShape& s = planeShape(layout);
  const size_t groups = static_cast<size_t>(q4gGroups(cols));
  const uint8_t* p = base + planeRowBytes(cols, layout) * static_cast<size_t>(row);
  PlaneRow r;
  r.planes = p;
  r.lanes = p + groups * s.planeBytes;
  const uint8_t* after = r.lanes + groups * s.laneBytes;
  const size_t count = s.perBlock ? groups * 16 : groups * 2;  // blocks or super-blocks
  r.d = after;
  r.m = after + count * 2;
  return r;
}

// The plane layout prepareLinear uses for a GGUF type with int8 activations (Layout::Gguf
// when the type has none).
static inline Layout planeLayoutFor(TensorType t) {
  for (const PlaneShape& s : kPlaneShapes)
    if (s.type == t) return s.layout;
  return Layout::Gguf;
}

// Repacks a GGUF tensor of `type` (rows × cols) into its plane layout (planes_repack.cc).
void repackPlanes(TensorType type, const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst);
// Dequantizes one row of a plane layout (the reference path, and the repack's check).
void dequantizePlaneRow(const uint8_t* base, int64_t cols, Layout layout, int64_t row, float* out);

}  // namespace prism::kernels
