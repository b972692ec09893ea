// Layout::Q4XV: 4-bit weights (Q4_0 / Q4_1 / Q4_K) for int16 activations in an exact-integer
// formulation that every kernel (AVX-512 VNNI for one token and for n tokens, AMX-INT8 for
// n tokens) computes bit for bit alike, so that a token's outputs never depend on how many
// tokens share its step (shape independence; native/kernels.test.ts checks it).
//
// Weights: value = d[r][b]·q + m[r][b], q in 0..15, the same d, m, q as Layout::Q4X (Q4_0:
// m = −8d; Q4_K: d = d·sc, m = −dmin·mn, exact in f32). Rows are taken 16 at a time (a
// "group"; the last is padded with rows of q = 0, d = m = 0 that are never stored to y), and
// each (group g, 32-value block b) is one 384-byte record at (g·blocks + b)·384, so a group's
// blocks are contiguous and the groups follow each other:
//   bytes [0, 256)   4 chunks of 64 bytes; in chunk c, byte 4r + i (row r of the group,
//                    i = 0..3) holds q[16g + r][32b + 8c + i] in its low nibble and
//                    q[16g + r][32b + 8c + 4 + i] in its high nibble. So `v & 0x0F` of a
//                    64-byte load is quad 2c (values 8c..8c+3) and `v >> 4 & 0x0F` quad 2c + 1,
//                    each as 16 rows × 4 bytes: the VNNI order (32-bit lane r = row r's 4
//                    values) and one 64-byte row of an AMX B tile (K/4 rows × 16 columns × 4).
//   bytes [256, 320) float d[16] (row r's scale of block b)
//   bytes [320, 384) float m[16] (row r's offset of block b)
// 24 bytes per row and block, Layout::Q4X's size.
//
// Activations: quantized exactly as the int16 kernels do today (per 32 values d = max|x| /
// 32767, q = round-to-nearest-even(x / d) as int16, s = d·Σq), in natural value order, then
// split into byte planes L = q & 0xFF (unsigned) and H = q >> 8 (arithmetic, signed), so
// q = 256·H + L exactly.
//
// The arithmetic every kernel reproduces bit for bit, per row r and token t:
//   I_b  = Σ_{k in block b} q_w[r][k]·q_x[t][k]   exact int32 (|I_b| < 2^24, so (float)I_b
//          is exact), computed as 256·Σ q_w·H + Σ q_w·L in any order
//   accI = +0, accM = +0
//   for b = 0 .. blocks−1, in increasing order:
//     accI = fma((float)I_b, d_w[r][b]·d_x[t][b] (rounded to f32 first), accI)
//     accM = fma(m_w[r][b], s_x[t][b], accM)
//   y[t·ldy + r] = accI + accM
// (q4xvMatmulScalar below is that arithmetic written out; the tests hold the others to it.)
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/internal.h"

namespace prism::kernels {

constexpr int kQ4XVRows = 16;              // rows per group
constexpr size_t kQ4XVRecordBytes = 384;   // one (group, block) record
constexpr size_t kQ4XVNibbleBytes = 256;   // its 4 chunks of nibbles
constexpr size_t kQ4XVScaleOffset = 256;   // d[16]
constexpr size_t kQ4XVOffsetOffset = 320;  // m[16]

static inline int64_t q4xvGroups(int64_t rows) { return (rows + kQ4XVRows - 1) / kQ4XVRows; }
static inline int64_t q4xvBlocks(int64_t cols) { return cols / kQK; }
// Bytes of a whole [rows × cols] weight (the groups' records).
static inline size_t q4xvBytes(int64_t rows, int64_t cols) {
  return static_cast<size_t>(q4xvGroups(rows)) * static_cast<size_t>(q4xvBlocks(cols)) * kQ4XVRecordBytes;
}
// Bytes of one group's records (a group's blocks are contiguous).
static inline size_t q4xvGroupBytes(int64_t cols) { return static_cast<size_t>(q4xvBlocks(cols)) * kQ4XVRecordBytes; }
// The record of group g, block b.
static inline const uint8_t* q4xvRecord(const uint8_t* base, int64_t blocks, int64_t g, int64_t b) {
  return base + static_cast<size_t>(g * blocks + b) * kQ4XVRecordBytes;
}
static inline const float* q4xvScales(const uint8_t* record) {
  return reinterpret_cast<const float*>(record + kQ4XVScaleOffset);
}
static inline const float* q4xvOffsets(const uint8_t* record) {
  return reinterpret_cast<const float*>(record + kQ4XVOffsetOffset);
}
// q of row r (0..15) of a record, value k (0..31) of its block.
static inline int q4xvNibble(const uint8_t* record, int r, int k) {
  const int c = k / 8, i = k % 8;
  const uint8_t byte = record[64 * c + 4 * r + (i & 3)];
  return i < 4 ? byte & 0x0F : byte >> 4;
}

// n tokens' activations: lo[t·stride + k], hi[t·stride + k] (k = value index 0..cols−1;
// stride ≥ cols, a multiple of 64), d[t·blocks + b], s[t·blocks + b].
struct Q4XVActivations {
  const uint8_t* lo = nullptr;
  const int8_t* hi = nullptr;
  int64_t stride = 0;
  const float* d = nullptr;
  const float* s = nullptr;
  int64_t blocks = 0;
};

static inline int64_t q4xvActivationStride(int64_t cols) { return (cols + 63) / 64 * 64; }

// The activations' scratch, one layout for every quantizer: lo planes (n·stride bytes), hi
// planes (n·stride), then the int16 quantizer's own region (quantizedActivationBytes: the
// int16 values, then d, s, sa, sb per token and block), which Q4XVActivations::d / s point
// into. Starts 64-byte aligned; its size is a multiple of 64.
static inline size_t q4xvActivationBytes(int64_t n, int64_t cols) {
  const size_t planes = 2 * static_cast<size_t>(n) * static_cast<size_t>(q4xvActivationStride(cols));
  return (planes + quantizedActivationBytes(n, cols, sizeof(int16_t)) + 63) & ~size_t(63);
}

// Repacks a GGUF Q4_0 / Q4_1 / Q4_K tensor [rows × cols] into Layout::Q4XV (repack.cc),
// sizing `dst` (64-byte aligned: WeightBytes).
void repackQ4XV(TensorType type, const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst);
// Dequantizes row `row` of a Layout::Q4XV weight (reference path; d·q + m per value).
void dequantizeQ4XVRow(const uint8_t* base, int64_t cols, int64_t row, float* out);

// The arithmetic above in scalar C++ (q4xv_reference.cc, built with the baseline flags): the
// truth the vector and tile kernels are tested against, bit for bit. y[t·ldy + r] for
// t < n, r < rows.
void q4xvMatmulScalar(const uint8_t* weights, int64_t rows, int64_t cols, const Q4XVActivations& xa, int64_t n,
                      float* y, int64_t ldy);
// The int16 activation quantization in scalar C++ (bit-identical to the AVX-512 and AVX2
// int16 quantizers), split into the planes: n tokens of x (row stride ldx) into `buf`
// (64-byte aligned, q4xvActivationBytes(n, cols) bytes); returns the activations in it.
Q4XVActivations q4xvQuantizeScalar(const float* x, int64_t n, int64_t ldx, int64_t cols, uint8_t* buf);

// The AVX-512 kernels (q4xv_avx512.cc, IsaKernels<Isa::Avx512>::q4xv): every token's outputs
// equal the one-token kernel's and q4xvMatmulScalar's, bit for bit. They quantize x
// themselves (scratch) and run on all threads.

// Tokens [t0, t1) of x: the int16 quantization of the other int16 kernels
// (quantizeInt16Avx512) into qa, then its values split into the byte planes L = q & 0xFF and
// H = q >> 8 at lo / hi + t·stride (q4xv_avx512.cc; Layout::Q8XV's kernels use it too).
void q4xvQuantizePlanesAvx512(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations16& qa,
                              uint8_t* lo, int8_t* hi, int64_t stride);

// The AMX-INT8 kernel (amx/q4xv_amx.cc, by its own work item): the same bits for n tokens of
// already-split activations; call only when amxEnabled(). Its own scratch is the
// q4xvAmxScratchBytes(n, cols, threads) bytes at q4xvAmxWork(scratch, n, cols) (64-byte
// aligned): the caller keeps the activations at q4xvScratchBase(scratch) and sized the buffer
// for both (+ 64) before quantizing, so KernelScratch::bytes never grows, and moves them, in
// between.
// The AVX-512 kernel calls it for n >= kQ4XVAmxMinTokens where the build has it
// (PRISM_Q4XV_AMX defined: q4xv_avx512.cc).
void q4xvMatmulAmx(const uint8_t* weights, int64_t rows, int64_t cols, const Q4XVActivations& xa, int64_t n, float* y,
                   int64_t ldy, ThreadPool& pool, KernelScratch& scratch);
size_t q4xvAmxScratchBytes(int64_t n, int64_t cols, int threads);
// Where the activations start: scratch.bytes() rounded up to 64 bytes (callers size the
// buffer 64 bytes larger than they use).
static inline uint8_t* q4xvScratchBase(KernelScratch& scratch) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(scratch.bytes(0)) + 63) & ~uintptr_t(63));
}
static inline uint8_t* q4xvAmxWork(KernelScratch& scratch, int64_t n, int64_t cols) {
  return q4xvScratchBase(scratch) + q4xvActivationBytes(n, cols);
}
// Smallest step that takes the AMX kernel (below it the VNNI kernels are cheaper): default
// model, verify steps of 1 + 1..31 drafts with both builds in one process
// (bench/kernels/verify-steps.ts, 2 threads, docs/benchmarks.md "Session 8 (q4xvamx)"): the
// tiles' step / the VNNI step read 1.05 at 8 and 10 tokens, 0.99-1.01 at 12, 0.97-0.99 at 14,
// 0.95-0.97 at 16, 0.91 at 24, 0.84 at 32.
constexpr int64_t kQ4XVAmxMinTokens = 13;

}  // namespace prism::kernels
