// Private declarations shared by the kernel files (types, reference code, per-ISA kernels).
//
// Everything defined in this header is `static inline`: it is included both by files built
// for AVX2 and by *_avx512.cc, and a shared (ODR-merged) inline copy compiled with AVX-512
// flags could otherwise be picked by the linker for the AVX2 path.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/layout.h"

namespace prism::kernels {

// Raw GGML block layouts (sizes are asserted in types.cc).
constexpr int kQK = 32;    // values per Q4_0 / Q4_1 / Q8_0 block
constexpr int kQKK = 256;  // values per K-quant super-block
constexpr size_t kQ4_0Bytes = 2 + 16;
constexpr size_t kQ4_1Bytes = 2 + 2 + 16;
constexpr size_t kQ8_0Bytes = 2 + 32;
constexpr size_t kQ4_KBytes = 2 + 2 + 12 + 128;
constexpr size_t kQ6_KBytes = 128 + 64 + 16 + 2;
// Q5_0: d, qh[4] (bit i: high bit of value i), qs[16] (value i low nibble of byte i % 16,
// high nibble for i >= 16). Q5_1: d, m, then as Q5_0.
constexpr size_t kQ5_0Bytes = 2 + 4 + 16;
constexpr size_t kQ5_1Bytes = 2 + 2 + 4 + 16;
// Q5_K: d, dmin, 12 bytes of 6-bit scales/mins (as Q4_K), qh[32], qs[128].
constexpr size_t kQ5_KBytes = 2 + 2 + 12 + 32 + 128;
// Q3_K: hmask[32], qs[64], 12 bytes of 6-bit scales (one per 16 values), d.
constexpr size_t kQ3_KBytes = 32 + 64 + 12 + 2;
// Q2_K: scales[16] (4-bit scale | 4-bit min << 4, one per 16 values), qs[64], d, dmin.
constexpr size_t kQ2_KBytes = 16 + 64 + 2 + 2;
// IQ4_NL: d, qs[16] (indices into kIQ4Values, nibbles as Q4_0). IQ4_XS: d, scales_h
// (2 high bits per 32-value block), scales_l[4] (4 low bits per block), qs[128].
constexpr size_t kIQ4_NLBytes = 2 + 16;
constexpr size_t kIQ4_XSBytes = 2 + 2 + 4 + 128;
// The 16 values an IQ4 index stands for (GGML's kvalues_iq4nl).
constexpr int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

static inline float f16ToF32(uint16_t h) { return _cvtsh_ss(h); }
static inline uint16_t f32ToF16(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }
static inline float bf16ToF32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
static inline uint16_t loadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Q4_K: 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes (GGML's
// get_scale_min_k4).
static inline void q4kScaleMin(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q3_K: the 6-bit scale (0..63, standing for −32..31) of 16-value sub-block s (0..15) from
// the block's 12 scale bytes: low 4 bits in byte s % 8 (high nibble from s = 8 on), high 2
// bits at bits 2·(s / 4) of byte 8 + s % 4 (GGML's kmask unpacking, one value at a time).
static inline int q3kScale(int s, const uint8_t* sc) {
  return ((sc[s % 8] >> (s < 8 ? 0 : 4)) & 0xF) | (((sc[8 + s % 4] >> (2 * (s / 4))) & 3) << 4);
}
// IQ4_XS: the 6-bit scale (standing for −32..31) of 32-value block ib (0..7) of the
// super-block at `b`: low 4 bits from scales_l, high 2 from scales_h.
static inline int iq4xsScale(int ib, const uint8_t* b) {
  return ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((loadU16(b + 2) >> (2 * ib)) & 3) << 4);
}

// Reference (de)quantizers of the Q5_0, Q5_1, Q5_K, Q3_K, Q2_K, IQ4_NL and IQ4_XS blocks
// (reference_blocks.cc), one row of `cols` values; false for any other type.
bool dequantizeBlocksRow(TensorType type, const uint8_t* row, int64_t cols, float* out);
bool quantizeBlocksRow(TensorType type, const float* x, int64_t cols, uint8_t* out);

// The weight layouts of the int8 group order and Layout::Q4X (layout.h names every layout;
// layout_traits.h holds their traits).
//
// Layout::Q4X: Q4_0, Q4_1 and Q4_K rows repacked by prepareLinear into one 4-bit form with
// f32 per-32 scales, value = d[b] * q + m[b] (Q4_0: m = -8d; Q4_K: d = d·sc_j, m = -dmin·m_j,
// both exact in f32). Per row: pairs = ceil(blocks/2) groups of 32 bytes where byte i holds
// value i of block 2p in its low nibble and value i of block 2p+1 in its high nibble (one
// load + two masks unpack two blocks, no lane shuffles), then d[blocks], then m[blocks].
// The separate m[] lets the kernels compute Σ_b m[b]·s[b] as a vector dot product.

// Layout::Q4G16 / Layout::Q4G32: the same 4-bit weights for int8 activations, laid out so that
// one integer dot-product instruction covers 16 blocks at once and never needs a horizontal
// sum per block. Blocks are taken 16 at a time (a "group", 512 values; the row is padded
// with zero blocks to whole groups). A group's 512 nibbles fill 4 chunks of 64 bytes; chunk
// c yields two 64-byte vectors, v = 2c (low nibbles) and v = 2c + 1 (high nibbles). Byte p
// of vector v holds value 4v + p%4 of block p/4 of the group: every 32-bit lane j of every
// vector belongs to block j, so after the 8 vectors lane j holds block j's whole integer
// dot product (VNNI dpbusd, or maddubs + madd on AVX2, whose 128-bit halves take blocks
// 0-7 and 8-15). The activations are quantized into the same permutation (q4g.h). After
// the nibbles of all groups: d[groups*16], then m[groups*16], value = d*q + m, as f16 when
// every scale of the tensor is exactly an f16 (Q4_1: 20 bytes per 32 values, as the file;
// Q4_0 drops m, see Layout::Q4G0) else f32 (24 bytes; Q4_K has its own Layout::Q4GK).
// Layout::Q4G0: Q4_0 in Layout::Q4G16 without the m array (m = -8·d for every block): 18 bytes
// per 32 values, the file's own size.
constexpr int kQ4GBlocks = 16;  // blocks per group

static inline int64_t q4gGroups(int64_t cols) { return (cols / kQK + kQ4GBlocks - 1) / kQ4GBlocks; }
static inline size_t q4gScaleBytes(Layout layout) { return layout == Layout::Q4G32 ? 4 : 2; }
static inline size_t q4gRowBytes(int64_t cols, Layout layout) {
  const size_t g = static_cast<size_t>(q4gGroups(cols));
  return g * 256 + g * kQ4GBlocks * (layout == Layout::Q4G0 ? 1 : 2) * q4gScaleBytes(layout);
}
static inline const uint8_t* q4gRow(const uint8_t* base, int64_t cols, Layout layout, int64_t row) {
  return base + q4gRowBytes(cols, layout) * static_cast<size_t>(row);
}

// Layout::Q4GK: Q4_K in the Q4G nibble order with Q4_K's own scale encoding kept (its d·sc
// products are not exact in f16, and f32 would cost 8 bytes per block): after the nibbles,
// sc[padded] and mn[padded] (6-bit values as bytes), then d[padded/8] and dmin[padded/8]
// (f16, one per 256-value super-block): value = d·sc·q − dmin·mn. 18.5 bytes per 32 values
// (the file: 18).
static inline size_t q4gkRowBytes(int64_t cols) {
  const size_t g = static_cast<size_t>(q4gGroups(cols));
  return g * 256 + g * kQ4GBlocks * 2 + g * 2 * 4;
}
Layout repackQ4GK(const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst);
void dequantizeQ4GKRow(const uint8_t* base, int64_t cols, int64_t row, float* out);

// Layout::Q6G: Q6_K weights for int8 activations in the same group permutation. Per group:
// 4 chunks of 64 bytes of low nibbles (as Q4G), then 2 chunks of 64 bytes of high 2-bit
// pairs (chunk e, bits 2k..2k+1 of byte p: vector 4e + k, byte p), so q = lo | hi << 4 in
// 0..63. Vectors 0-3 hold values 0-15 of each block (Q6_K's first 16-value sub-block),
// vectors 4-7 values 16-31 (the second). After all groups: scA[padded], scB[padded] (int8
// sub-block scales), then d[padded / 8] (f16, one per 256-value super-block, as the file):
// value = d·sc·(q − 32), exactly Q6_K's. 26.25 bytes per 32 values, the file's.
static inline size_t q6gRowBytes(int64_t cols) {
  const size_t g = static_cast<size_t>(q4gGroups(cols));
  return g * 384 + g * kQ4GBlocks * 2 + g * 2 * 2;
}
// Layout::Q8G: Q8_0 weights for int8 activations in the group permutation: per group 8
// vectors of 64 bytes (byte p of vector v: value 4v + p%4 of block p/4) holding w + 128 as
// unsigned bytes (VNNI multiplies unsigned by signed; the +128 comes back out through the
// activation sums), then d[padded] as f16 after all groups. 34 bytes per 32 values, as the file.
static inline size_t q8gRowBytes(int64_t cols) {
  const size_t g = static_cast<size_t>(q4gGroups(cols));
  return g * 512 + g * kQ4GBlocks * 2;
}
Layout repackQ8G(const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst);
void dequantizeQ8GRow(const uint8_t* base, int64_t cols, int64_t row, float* out);

Layout repackQ6G(const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst);
void dequantizeQ6GRow(const uint8_t* base, int64_t cols, int64_t row, float* out);

// Scratch of n tokens' activations in the Q4G permutation: int8 values (groups × 512
// bytes per token), then d and s per (padded) block, as in BlockActivations.
static inline size_t q4gActivationBytes(int64_t n, int64_t cols) {
  const size_t g = static_cast<size_t>(q4gGroups(cols));
  return static_cast<size_t>(n) * (g * 512 + 4 * sizeof(float) * g * kQ4GBlocks) + 128;
}

// Repacks a GGUF Q4_0 / Q4_1 / Q4_K tensor into Layout::Q4G0, Q4G16 or Q4G32 (repack.cc);
// returns the layout it chose (f16 scales when exact) after sizing `dst`.
Layout repackQ4G(TensorType type, const uint8_t* src, int64_t rows, int64_t cols, WeightBytes* dst);
void dequantizeQ4GRow(const uint8_t* base, int64_t cols, Layout layout, int64_t row, float* out);

struct Q4XRow {
  const uint8_t* nibbles;
  const float* d;
  const float* m;
};

static inline size_t q4xRowBytes(int64_t cols) {
  int64_t blocks = cols / kQK;
  return static_cast<size_t>((blocks + 1) / 2) * 32 + static_cast<size_t>(blocks) * 8;
}

static inline Q4XRow q4xRow(const uint8_t* base, int64_t cols, int64_t row) {
  const uint8_t* p = base + q4xRowBytes(cols) * static_cast<size_t>(row);
  int64_t blocks = cols / kQK;
  const float* d = reinterpret_cast<const float*>(p + static_cast<size_t>((blocks + 1) / 2) * 32);
  return {p, d, d + blocks};
}

// Repacks rows of a GGUF Q4_0 / Q4_1 / Q4_K tensor into Layout::Q4X (repack.cc).
void repackQ4X(TensorType type, const uint8_t* src, int64_t rows, int64_t cols, uint8_t* dst);
// Dequantizes one Layout::Q4X row (reference path).
void dequantizeQ4XRow(const uint8_t* base, int64_t cols, int64_t row, float* out);

// Activations quantized in blocks of 32 to Q = int8 (ActivationPrecision::Int8, scale
// max|x|/127) or Q = int16 (Int16, scale max|x|/32767): for token t, qs[t*cols ..] holds cols
// values, d[t*blocks + b] the block scale and s[t*blocks + b] = d * (sum of the block's 32
// integer values) — the term a weight type with a per-block offset (Q4_1's min, Q4_0's -8,
// Q4_K's min) multiplies; sa / sb the same over values 0-15 / 16-31 (Q2_K's offsets are per
// 16 values; written by the int16 quantizer only).
template <class Q>
struct BlockActivations {
  Q* qs = nullptr;
  float* d = nullptr;
  float* s = nullptr;
  float* sa = nullptr;
  float* sb = nullptr;
  int64_t n = 0;
  int64_t cols = 0;
  int64_t blocks = 0;
};
using QuantizedActivations = BlockActivations<int8_t>;
using QuantizedActivations16 = BlockActivations<int16_t>;

// Bytes of scratch the block-32 activation quantization of n × cols needs, with values of
// `valueBytes` bytes (1: int8, 2: int16).
static inline size_t quantizedActivationBytes(int64_t n, int64_t cols, size_t valueBytes = 1) {
  int64_t blocks = (cols + kQK - 1) / kQK;
  return static_cast<size_t>(n) * (static_cast<size_t>(blocks) * kQK * valueBytes + 4 * sizeof(float) * blocks) + 64;
}

// Lays out `qa` (n × cols values, then d, s, sa, sb) in `buf` of quantizedActivationBytes().
template <class Q>
static inline void placeActivations(uint8_t* buf, int64_t n, int64_t cols, BlockActivations<Q>* qa) {
  qa->n = n;
  qa->cols = cols;
  qa->blocks = cols / kQK;
  qa->qs = reinterpret_cast<Q*>(buf);
  qa->d = reinterpret_cast<float*>(buf + ((static_cast<size_t>(n * cols) * sizeof(Q) + 63) & ~size_t(63)));
  qa->s = qa->d + n * qa->blocks;
  qa->sa = qa->s + n * qa->blocks;
  qa->sb = qa->sa + n * qa->blocks;
}

// Cache blocking shared by the quantized kernels: rows are walked in groups whose weights
// fit in about a quarter of L2 (so every token chunk re-reads them from L2, not L3/DRAM),
// and tokens in chunks whose int8 activations fit in about half of L1.
static inline int64_t rowGroupFor(size_t rowBytes, int rowTile) {
  int64_t rows = static_cast<int64_t>((128u << 10) / (rowBytes ? rowBytes : 1));
  rows = rows / rowTile * rowTile;
  return rows > rowTile ? rows : rowTile;
}
static inline int64_t tokenChunkFor(int64_t cols, int tokenTile) {
  int64_t chunk = (16 << 10) / (cols > 0 ? cols : 1);
  chunk = chunk < 4 * tokenTile ? 4 * tokenTile : (chunk > 64 ? 64 : chunk);
  return chunk / tokenTile * tokenTile;
}

// The reference matmul (matmul_reference.cc).
void matmulReference(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y,
                     int64_t ldy, ThreadPool& pool);

// The int16 activation quantizer of the AVX-512 int16 kernels (Layout::Q4XV, Q8XV), tokens
// [t0, t1) of x into `qa` (natural value order; bit-identical to the AVX2 int16 quantizer).
// AVX-512 callers only.
void quantizeInt16Avx512(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations16& qa);

// What the CPU reports (dispatch.cc).
bool cpuHasAvx2();
bool cpuHasAvx512();  // F, BW, VL, DQ and VNNI: the "avx512" family

}  // namespace prism::kernels
