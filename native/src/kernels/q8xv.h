// Layout::Q8XV: Q8_0 weights for int16 activations in the exact-integer formulation of
// Layout::Q4XV (q4xv.h), so that every kernel (AVX-512 VNNI for one token and for n tokens)
// computes a token's outputs bit for bit alike whatever its step's shape (shape independence;
// native/q8xv.test.ts checks it). The default model's tied output head (token_embd, Q8_0)
// takes it: an extra token of a verify step then costs a few integer dot instructions per
// 16 rows and block instead of a widen, a dot, a conversion and an FMA per row and block.
//
// Weights: value = d[r][b]·q, q the file's signed int8, d the file's f16. Rows are taken 16 at
// a time (a "group"; the last is padded with rows of q = 0, d = 0 that are never stored to y),
// and each (group g, 32-value block b) is one 544-byte record at (g·blocks + b)·544, a group's
// blocks contiguous, the groups one after the other:
//   bytes [0, 512)   8 quads of 64 bytes; in quad j, byte 4r + i (row r of the group,
//                    i = 0..3) holds q[16g + r][32b + 4j + i]: the VNNI order (32-bit lane r =
//                    row r's 4 values) and one 64-byte row of an AMX B tile.
//   bytes [512, 544) f16 d[16] (row r's scale of block b), as in the file.
// 34 bytes per row and block: the file's bytes. The f16 scales keep the record the file's size
// (the head streams from memory every decode step); one vcvtph2ps per record widens them.
// Records are 32-byte aligned (544 = 8.5 × 64).
//
// Activations: the int16 planes of Q4XVActivations (q4xv.h: q = 256·H + L, L unsigned, H
// signed), and per token and block hiBias = 128·ΣH over the block (see below).
//
// The arithmetic every kernel reproduces bit for bit, per row r and token t:
//   I_b  = Σ_{k in block b} q_w[r][k]·q_x[t][k]   exact int32 (|I_b| ≤ 32·128·32768 < 2^28;
//          (float)I_b may round: it is a function of the exact integer, so still the same bits)
//   acc  = +0
//   for b = 0 .. blocks−1, in increasing order:
//     acc = fma((float)I_b, d_w[r][b]·d_x[t][b] (rounded to f32 first), acc)
//   y[t·ldy + r] = acc
// VNNI computes I_b with q_w signed: Σ q_w·L = vpdpbusd(L as u8, W as s8), and Σ q_w·H from
// vpdpbusd(W ^ 0x80 as u8 = q_w + 128, H as s8) = Σ q_w·H + 128·ΣH, less hiBias; then
// I = 256·Σ q_w·H + Σ q_w·L (exact in int32). q8xvMatmulScalar is the arithmetic written out.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/internal.h"
#include "kernels/q4xv.h"

namespace prism::kernels {

constexpr int kQ8XVRows = 16;              // rows per group
constexpr size_t kQ8XVRecordBytes = 544;   // one (group, block) record
constexpr size_t kQ8XVQuadBytes = 64;      // one quad: 16 rows × 4 values
constexpr size_t kQ8XVScaleOffset = 512;   // f16 d[16]

static inline int64_t q8xvGroups(int64_t rows) { return (rows + kQ8XVRows - 1) / kQ8XVRows; }
// Bytes of a whole [rows × cols] weight (the groups' records).
static inline size_t q8xvBytes(int64_t rows, int64_t cols) {
  return static_cast<size_t>(q8xvGroups(rows)) * static_cast<size_t>(cols / kQK) * kQ8XVRecordBytes;
}
// Bytes of one group's records (a group's blocks are contiguous).
static inline size_t q8xvGroupBytes(int64_t cols) { return static_cast<size_t>(cols / kQK) * kQ8XVRecordBytes; }
// The record of group g, block b.
static inline const uint8_t* q8xvRecord(const uint8_t* base, int64_t blocks, int64_t g, int64_t b) {
  return base + static_cast<size_t>(g * blocks + b) * kQ8XVRecordBytes;
}
// q of row r (0..15) of a record, value k (0..31) of its block.
static inline int q8xvValue(const uint8_t* record, int r, int k) {
  return static_cast<int8_t>(record[kQ8XVQuadBytes * (k / 4) + 4 * r + k % 4]);
}
// d of row r of a record.
static inline float q8xvScale(const uint8_t* record, int r) {
  return f16ToF32(loadU16(record + kQ8XVScaleOffset + 2 * r));
}

// The activations' scratch: q4xvActivationBytes(n, cols) (the planes and the int16
// quantizer's region, q4xv.h), then hiBias as n·blocks int32 (t·blocks + b). A multiple of 64.
static inline size_t q8xvBiasOffset(int64_t n, int64_t cols) { return q4xvActivationBytes(n, cols); }
static inline size_t q8xvActivationBytes(int64_t n, int64_t cols) {
  const size_t bias = static_cast<size_t>(n) * static_cast<size_t>(cols / kQK) * sizeof(int32_t);
  return q8xvBiasOffset(n, cols) + ((bias + 63) & ~size_t(63));
}

// Repacks a GGUF Q8_0 tensor [rows × cols] into Layout::Q8XV (q8xv_reference.cc), sizing `dst`
// (64-byte aligned: WeightBytes).
void repackQ8XV(const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst);
// Dequantizes row `row` of a Layout::Q8XV weight (reference path; d·q per value).
void dequantizeQ8XVRow(const uint8_t* base, int64_t cols, int64_t row, float* out);

// The arithmetic above in scalar C++ (q8xv_reference.cc, baseline flags): the truth the
// vector kernels are tested against, bit for bit; I_b straight from q = 256·H + L, without
// hiBias. Activations from q4xvQuantizeScalar. y[t·ldy + r] for t < n, r < rows.
void q8xvMatmulScalar(const uint8_t* weights, int64_t rows, int64_t cols, const Q4XVActivations& xa, int64_t n,
                      float* y, int64_t ldy);

// The AVX-512 kernels (q8xv_avx512.cc, IsaKernels<Isa::Avx512>::q8xv): every token's outputs
// equal the one-token kernel's and q8xvMatmulScalar's, bit for bit. They quantize x
// themselves (scratch) and run on all threads.

// The AMX-INT8 kernel (amx/q8xv_amx.cc): the same bits for n tokens of already-split
// activations; call only when amxEnabled(). `work`: q8xvAmxScratchBytes(threads) bytes,
// 64-byte aligned. The AVX-512 kernel calls it for n >= kQ8XVAmxMinTokens where the build has
// the layouts' AMX kernels (PRISM_Q4XV_AMX), its room after the activations (q8xvAmxWork).
void q8xvMatmulAmx(const uint8_t* weights, int64_t rows, int64_t cols, const Q4XVActivations& xa, int64_t n, float* y,
                   int64_t ldy, ThreadPool& pool, uint8_t* work);
size_t q8xvAmxScratchBytes(int threads);
static inline uint8_t* q8xvAmxWork(KernelScratch& scratch, int64_t n, int64_t cols) {
  return q4xvScratchBase(scratch) + q8xvActivationBytes(n, cols);
}
// Smallest step that takes the AMX kernel (below it the VNNI kernels are cheaper).
constexpr int64_t kQ8XVAmxMinTokens = 13;

}  // namespace prism::kernels
