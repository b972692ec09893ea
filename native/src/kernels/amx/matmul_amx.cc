// The AMX int8 prefill driver (amx.h) and the panel unpackers of the layouts it serves.
// Built with -mamx-tile -mamx-int8 and the AVX-512 flags; only ever called after
// cpuHasAmxInt8() (amx_support.cc, built with the baseline flags).
//
// TDPBUSD (TDPBSSD) multiplies a tile A of unsigned (signed) bytes (M ≤ 16 rows × K bytes)
// by a tile B of signed bytes in VNNI order (K/4 rows × N ≤ 16 columns × 4 bytes) into C
// (M × N int32): C[m][n] += Σ_k Σ_i A[m][4k + i] · B[k][4n + i]. Prism's quantized weights
// are small integers with a per-block scale (and offset) and its activations are int8 per
// 32 values with a per-token scale, so one 32-value block is one tile product: A = 16 weight
// rows × the block's 32 values, B = the block's 32 values of 16 tokens, C = their 256 integer
// dot products, which AVX-512 then turns into floats: acc[r][t] += dw[r]·dx[t]·C[r][t] +
// mw[r]·sx[t] (dw, mw: the weight block's scale and offset; dx, sx = dx·Σq: the activation
// block's scale and scaled sum). Layouts with a zero point (IQ4_XS, Q8_0, Q6_K, Q4_0) are
// unpacked as signed values (value − zero) and take TDPBSSD, so no zero-point term is left
// to subtract; the others (Q5_K, Q4_K, Q4_1: 0..31 / 0..15 with an offset) take TDPBUSD.
// The integer sums are exact; only the f32 accumulation order differs from the VNNI path.
//
// A weight panel (16 rows) is unpacked once per thread into A tiles, block after block,
// and then meets every 16-token tile of the batch. Every layout served here (the Q4G family
// of internal.h: Q4_0, Q4_1, Q4_K, Q8_0; the bit planes of planes.h: Q5_K, IQ4_XS) mixes
// the 16 blocks of a group inside each 64-byte vector (32-bit lane j = block j), so the
// unpacked vectors are transposed (8 × 16 lanes → 16 blocks × 32 bytes) into the panel.
// Q6_K scales every 16 values: its blocks take two half-block products (K = 16). Not served
// (the VNNI kernels run): Q3_K / Q2_K (the half-block form would fit; llama.cpp has no AMX
// kernel for them and Prism's VNNI prefill already leads there), Q5_0 / Q5_1 / IQ4_NL (no
// unpacker written yet).
#include <immintrin.h>

#include <algorithm>
#include <stdexcept>

#include "kernels/amx/amx.h"
#include "kernels/isa_kernels.h"
#include "kernels/amx/tile_scope.h"
#include "kernels/amx/transpose16.h"
#include "kernels/internal.h"
#include "kernels/planes.h"

namespace prism::kernels {
namespace {

// GCC 12's AVX-512 intrinsics (the reductions) trip these on their own placeholder values.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

constexpr int kTile = 16;         // weight rows per panel, tokens per token tile
constexpr int kBlockBytes = 32;   // values (K bytes) per tile product: one block
constexpr int kPanelBlock = kTile * kBlockBytes;  // bytes of one block's A tile (16 × 32)
constexpr int kActBlock = 8 * 64;                 // bytes of one block's B tile (8 × 64)

// Tile registers: tmm0 / tmm1 A, tmm4 / tmm5 B, tmm2 / tmm3 C (16 × 16 int32). A and B hold
// one block (16 × 32 bytes, 8 × 64), or for the layouts whose scales change every 16 values
// (`halves`) half a block (16 × 16 bytes, 4 × 64). Loaded per task through TileScope
// (tile_scope.h).
TileConfig int8TileConfig(bool halves) {
  TileConfig cfg;
  const int k = halves ? kBlockBytes / 2 : kBlockBytes;
  for (int a : {0, 1}) {
    cfg.colsb[a] = static_cast<uint16_t>(k);
    cfg.rows[a] = kTile;
  }
  for (int c : {2, 3}) {
    cfg.colsb[c] = kTile * 4;
    cfg.rows[c] = kTile;
  }
  for (int b : {4, 5}) {
    cfg.colsb[b] = kTile * 4;
    cfg.rows[b] = static_cast<uint8_t>(k / 4);
  }
  return cfg;
}

// ---- activations: B tiles per (token tile, block), block-major scales ------------------

// n tokens quantized as the VNNI kernels quantize them (q4g.h: per 32 values d = max|x|/127,
// q = round-to-nearest-even(x / d)), laid out for the tiles: token tile u, block b holds
// B at b(u, b) (value 4k + i of token t at byte 64k + 4t + i), and 16-token vectors of d
// and s = d·Σq. Tokens past n (the last tile's padding) are zero.
struct TileActivations {
  int8_t* q = nullptr;
  float* d = nullptr;
  float* s = nullptr;
  int64_t tiles = 0, blocks = 0;
  const int8_t* b(int64_t u, int64_t blk) const { return q + (u * blocks + blk) * kActBlock; }
  int64_t at(int64_t u, int64_t blk) const { return (u * blocks + blk) * kTile; }
};

size_t tileActivationBytes(int64_t n, int64_t cols) {
  const size_t tiles = static_cast<size_t>((n + kTile - 1) / kTile), blocks = static_cast<size_t>(cols / kQK);
  return tiles * blocks * (kActBlock + 2 * kTile * sizeof(float));
}

TileActivations placeActivations(uint8_t* buf, int64_t n, int64_t cols) {
  TileActivations a;
  a.tiles = (n + kTile - 1) / kTile;
  a.blocks = cols / kQK;
  a.q = reinterpret_cast<int8_t*>(buf);
  a.d = reinterpret_cast<float*>(buf + static_cast<size_t>(a.tiles * a.blocks) * kActBlock);
  a.s = a.d + a.tiles * a.blocks * kTile;
  return a;
}

void quantizeTokens(const float* x, int64_t ldx, int64_t n, int64_t t0, int64_t t1, const TileActivations& a) {
  const __m512 signBit = _mm512_set1_ps(-0.0f);
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t u = t / kTile, lane = t % kTile;
    for (int64_t blk = 0; blk < a.blocks; ++blk) {
      int8_t* dst = const_cast<int8_t*>(a.b(u, blk)) + 4 * lane;
      const int64_t at = a.at(u, blk) + lane;
      if (t >= n) {  // padding token
        for (int k = 0; k < 8; ++k) std::memset(dst + 64 * k, 0, 4);
        a.d[at] = 0.0f;
        a.s[at] = 0.0f;
        continue;
      }
      const float* p = x + t * ldx + blk * kQK;
      const __m512 v0 = _mm512_loadu_ps(p), v1 = _mm512_loadu_ps(p + 16);
      const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(signBit, v0), _mm512_andnot_ps(signBit, v1)));
      const __m512 id = _mm512_set1_ps(amax != 0 ? 127.0f / amax : 0.0f);
      const __m512i i0 = _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(v0, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      const __m512i i1 = _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(v1, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      const int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
      alignas(32) int32_t words[8];
      _mm_store_si128(reinterpret_cast<__m128i*>(words), _mm512_cvtsepi32_epi8(i0));
      _mm_store_si128(reinterpret_cast<__m128i*>(words + 4), _mm512_cvtsepi32_epi8(i1));
      for (int k = 0; k < 8; ++k) std::memcpy(dst + 64 * k, &words[k], 4);
      const float dd = amax / 127.0f;
      a.d[at] = dd;
      a.s[at] = dd * static_cast<float>(sum);
    }
  }
}

// ---- weight panels ---------------------------------------------------------------------

// One thread's unpacked panel: A tile of block b at a + b·512 (row r at + 32r), and per block
// b the 16 rows' scales dw and offsets mw at dw/mw + 16b (one cache line each).
struct Panel {
  uint8_t* a = nullptr;
  float* dw = nullptr;
  float* mw = nullptr;
};

size_t panelBytes(int64_t blocks) {
  return static_cast<size_t>(blocks) * kPanelBlock + 2 * static_cast<size_t>(kTile * blocks) * sizeof(float);
}

inline __m512i ld(const void* p) { return _mm512_loadu_si512(p); }

// Vectors w[0..7] of one row's group (byte 4j + i of vector v: value 4v + i of block j)
// become blocks j = 0..15 of 32 bytes in value order: an 8 × 16 transpose of 32-bit lanes
// in three rounds of two-source permutes (pairs, quads, octets of vectors).
void storeGroupTransposed(const __m512i* w, uint8_t* panel, int64_t firstBlock, int64_t blocks, int row) {
  const __m512i pairLo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i pairHi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  __m512i p[2][4];  // [blocks 0-7 | 8-15][vector pair m]: qword j = (w[2m], w[2m+1]) of block j
  for (int m = 0; m < 4; ++m) {
    p[0][m] = _mm512_permutex2var_epi32(w[2 * m], pairLo, w[2 * m + 1]);
    p[1][m] = _mm512_permutex2var_epi32(w[2 * m], pairHi, w[2 * m + 1]);
  }
  const __m512i quad[2] = {_mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15)};
  const __m512i oct[2] = {_mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15)};
  for (int h = 0; h < 2; ++h) {
    for (int q = 0; q < 2; ++q) {
      // 128-bit lane j: vectors 0-3 (lo) / 4-7 (hi) of block 8h + 4q + j.
      const __m512i lo = _mm512_permutex2var_epi64(p[h][0], quad[q], p[h][1]);
      const __m512i hi = _mm512_permutex2var_epi64(p[h][2], quad[q], p[h][3]);
      for (int o = 0; o < 2; ++o) {
        const __m512i blocks2 = _mm512_permutex2var_epi64(lo, oct[o], hi);  // blocks 8h + 4q + 2o, +1
        const int64_t b = firstBlock + 8 * h + 4 * q + 2 * o;
        if (b < blocks)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(panel + b * kPanelBlock + row * kBlockBytes),
                              _mm512_castsi512_si256(blocks2));
        if (b + 1 < blocks)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(panel + (b + 1) * kPanelBlock + row * kBlockBytes),
                              _mm512_extracti64x4_epi64(blocks2, 1));
      }
    }
  }
}

// A layout's panel unpacker L supplies: kSigned (its values are signed bytes: TDPBSSD) and
// kOffset (whether mw is used); Row L::row(base, cols, r) (where row r's parts are) and L::rowBytes(cols);
// L::unpack(row, g, w) (group g's 8 vectors of unsigned values, the group order of q4g.h);
// L::scales(row, g, j, &dw, &mw) (block j of group g).

// The bit-plane layouts (planes.h) find their parts through PlaneRow.
template <Layout L>
struct PlaneLayout {
  using Row = PlaneRow;
  static Row row(const uint8_t* base, int64_t cols, int64_t r) { return planeRow(base, cols, L, r); }
  static size_t rowBytes(int64_t cols) { return planeRowBytes(cols, L); }
  static const uint8_t* group(const Row& row, int64_t g) { return row.planes + g * planeGroupBytes(L); }
};

// The 8 vectors of a 256-byte nibble group (Q4G's order, also the planes' nibble plane):
// chunk c holds vector 2c in its low nibbles and 2c + 1 in its high ones.
inline void nibbles(const uint8_t* grp, __m512i* w) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  for (int c = 0; c < 4; ++c) {
    const __m512i nib = ld(grp + 64 * c);
    w[2 * c] = _mm512_and_si512(nib, low);
    w[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(nib, 4), low);
  }
}

// Q5_K (Layout::Q5GK): vector v = its nibble | (bit v of the bit plane) << 4, 0..31; value =
// d·sc·q − dmin·mn: dw = d·sc, mw = −dmin·mn.
struct Q5KPanel : PlaneLayout<Layout::Q5GK> {
  static constexpr bool kSigned = false;
  static constexpr bool kOffset = true;
  static void unpack(const Row& row, int64_t g, __m512i* w) {
    const uint8_t* grp = group(row, g);
    const __m512i low = _mm512_set1_epi8(0x0F), bit = _mm512_set1_epi8(0x10), h = ld(grp + 256);
    for (int c = 0; c < 4; ++c) {
      const __m512i nib = ld(grp + 64 * c);
      for (int s = 0; s < 2; ++s) {
        const int v = 2 * c + s;
        const __m512i q = _mm512_and_si512(s == 0 ? nib : _mm512_srli_epi16(nib, 4), low);
        const __m512i hb = v <= 4 ? _mm512_slli_epi16(h, 4 - v) : _mm512_srli_epi16(h, v - 4);
        w[v] = _mm512_ternarylogic_epi32(q, hb, bit, 0xF8);  // q | (hb & bit)
      }
    }
  }
  // Block j of group g: six-bit lanes (planes.h) give sc (a) and mn (b).
  static void scales(const PlaneRow& row, int64_t g, int j, float* dw, float* mw) {
    const uint8_t* l = row.lanes + g * 24;
    uint32_t ha, hb;
    std::memcpy(&ha, l + 16, 4);
    std::memcpy(&hb, l + 20, 4);
    const int sc = (l[j] & 0x0F) | (((ha >> (2 * j)) & 3) << 4);
    const int mn = (l[j] >> 4) | (((hb >> (2 * j)) & 3) << 4);
    const int64_t super = 2 * g + j / 8;
    *dw = f16ToF32(loadU16(row.d + 2 * super)) * static_cast<float>(sc);
    *mw = -f16ToF32(loadU16(row.m + 2 * super)) * static_cast<float>(mn);
  }
};

// IQ4_XS (Layout::IQ4GX): the nibble indexes kIQ4Values (signed, −127..113); value =
// d·(ls − 32)·v: dw = d·(ls − 32), no offset.
struct IQ4XSPanel : PlaneLayout<Layout::IQ4GX> {
  static constexpr bool kSigned = true;
  static constexpr bool kOffset = false;
  static void unpack(const Row& row, int64_t g, __m512i* w) {
    alignas(16) int8_t table[16];
    for (int i = 0; i < 16; ++i) table[i] = kIQ4Values[i];
    const __m512i lut = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(table)));
    nibbles(group(row, g), w);
    for (int v = 0; v < 8; ++v) w[v] = _mm512_shuffle_epi8(lut, w[v]);
  }
  // Four-bit + two-bit lanes (planes.h): ls of block j.
  static void scales(const PlaneRow& row, int64_t g, int j, float* dw, float* mw) {
    const uint8_t* l = row.lanes + g * 12;
    uint64_t lo;
    uint32_t hi;
    std::memcpy(&lo, l, 8);
    std::memcpy(&hi, l + 8, 4);
    const int ls = static_cast<int>((lo >> (4 * j)) & 0x0F) | static_cast<int>(((hi >> (2 * j)) & 3) << 4);
    *dw = f16ToF32(loadU16(row.d + 2 * (2 * g + j / 8))) * static_cast<float>(ls - 32);
    *mw = 0.0f;
  }
};

// The Q4G family (internal.h): a row is its groups' bytes, then its scales.
struct GroupRow {
  const uint8_t* p;  // the row's first group
  int64_t groups, padded;
};

// Q4_0 / Q4_1 (Layout::Q4G0 / Q4G16 / Q4G32): nibbles, then d[padded] (and m[padded]) as f16
// (f32 for Q4G32): value = d·q + m; Q4G0 has m = −8·d: unpacked as q − 8, no offset.
template <Layout L>
struct Q4GPanel {
  using Row = GroupRow;
  static constexpr bool kSigned = L == Layout::Q4G0;
  static constexpr bool kOffset = L != Layout::Q4G0;
  static Row row(const uint8_t* base, int64_t cols, int64_t r) {
    const int64_t groups = q4gGroups(cols);
    return {q4gRow(base, cols, L, r), groups, groups * kQ4GBlocks};
  }
  static size_t rowBytes(int64_t cols) { return q4gRowBytes(cols, L); }
  static void unpack(const Row& row, int64_t g, __m512i* w) {
    nibbles(row.p + g * 256, w);
    if constexpr (kSigned)
      for (int v = 0; v < 8; ++v) w[v] = _mm512_sub_epi8(w[v], _mm512_set1_epi8(8));
  }
  static void scales(const Row& row, int64_t g, int j, float* dw, float* mw) {
    const int64_t b = g * kQ4GBlocks + j;
    const uint8_t* ds = row.p + row.groups * 256;
    if constexpr (L == Layout::Q4G32) {
      std::memcpy(dw, ds + 4 * b, 4);
      std::memcpy(mw, ds + 4 * row.padded + 4 * b, 4);
    } else {
      *dw = f16ToF32(loadU16(ds + 2 * b));
      *mw = L == Layout::Q4G0 ? 0.0f : f16ToF32(loadU16(ds + 2 * row.padded + 2 * b));
    }
  }
};

// Q4_K (Layout::Q4GK): nibbles, then sc[padded], mn[padded] bytes, d and dmin per super-block
// (f16): value = d·sc·q − dmin·mn.
struct Q4KPanel {
  using Row = GroupRow;
  static constexpr bool kSigned = false;
  static constexpr bool kOffset = true;
  static Row row(const uint8_t* base, int64_t cols, int64_t r) {
    const int64_t groups = q4gGroups(cols);
    return {base + q4gkRowBytes(cols) * static_cast<size_t>(r), groups, groups * kQ4GBlocks};
  }
  static size_t rowBytes(int64_t cols) { return q4gkRowBytes(cols); }
  static void unpack(const Row& row, int64_t g, __m512i* w) { nibbles(row.p + g * 256, w); }
  static void scales(const Row& row, int64_t g, int j, float* dw, float* mw) {
    const int64_t b = g * kQ4GBlocks + j;
    const uint8_t* scs = row.p + row.groups * 256;
    const uint8_t* ds = scs + 2 * row.padded;
    *dw = f16ToF32(loadU16(ds + 2 * (b / 8))) * static_cast<float>(scs[b]);
    *mw = -f16ToF32(loadU16(ds + row.padded / 8 * 2 + 2 * (b / 8))) * static_cast<float>(scs[row.padded + b]);
  }
};

// Q8_0 (Layout::Q8G): the group's 8 vectors hold w + 128 (unpacked back to w), then d[padded]
// f16.
struct Q8Panel {
  using Row = GroupRow;
  static constexpr bool kSigned = true;
  static constexpr bool kOffset = false;
  static Row row(const uint8_t* base, int64_t cols, int64_t r) {
    const int64_t groups = q4gGroups(cols);
    return {base + q8gRowBytes(cols) * static_cast<size_t>(r), groups, groups * kQ4GBlocks};
  }
  static size_t rowBytes(int64_t cols) { return q8gRowBytes(cols); }
  static void unpack(const Row& row, int64_t g, __m512i* w) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int v = 0; v < 8; ++v) w[v] = _mm512_xor_si512(ld(row.p + g * 512 + 64 * v), flip);
  }
  static void scales(const Row& row, int64_t g, int j, float* dw, float* mw) {
    *dw = f16ToF32(loadU16(row.p + row.groups * 512 + 2 * (g * kQ4GBlocks + j)));
    *mw = 0.0f;
  }
};

// Q6_K (Layout::Q6G): nibbles, then 2 chunks of 2-bit pairs (chunk e, bits 2k: vector
// 4e + k), q = lo | hi << 4 in 0..63; after the groups scA[padded], scB[padded] (int8, values
// 0-15 / 16-31 of each block) and d per super-block (f16): value = d·sc·(q − 32), unpacked
// as q − 32.
struct Q6Panel {
  using Row = GroupRow;
  static constexpr bool kSigned = true;
  static constexpr bool kOffset = false;
  static constexpr bool kHalves = true;
  static Row row(const uint8_t* base, int64_t cols, int64_t r) {
    const int64_t groups = q4gGroups(cols);
    return {base + q6gRowBytes(cols) * static_cast<size_t>(r), groups, groups * kQ4GBlocks};
  }
  static size_t rowBytes(int64_t cols) { return q6gRowBytes(cols); }
  static void unpack(const Row& row, int64_t g, __m512i* w) {
    const uint8_t* grp = row.p + g * 384;
    nibbles(grp, w);
    const __m512i three = _mm512_set1_epi8(3);
    for (int e = 0; e < 2; ++e) {
      const __m512i t = ld(grp + 256 + 64 * e);
      for (int k = 0; k < 4; ++k) {
        const __m512i hi = _mm512_and_si512(k == 0 ? t : _mm512_srli_epi16(t, 2 * k), three);
        w[4 * e + k] = _mm512_sub_epi8(_mm512_or_si512(w[4 * e + k], _mm512_slli_epi16(hi, 4)), _mm512_set1_epi8(32));
      }
    }
  }
  static void scales(const Row& row, int64_t g, int j, float* dw, float* mw) {
    const int64_t b = g * kQ4GBlocks + j;
    const uint8_t* sa = row.p + row.groups * 384;
    const float d = f16ToF32(loadU16(sa + 2 * row.padded + 2 * (b / 8)));
    *dw = d * static_cast<float>(static_cast<int8_t>(sa[b]));
    *mw = d * static_cast<float>(static_cast<int8_t>(sa[row.padded + b]));
  }
};

// Unpacks weight rows [r0, r0 + 16) (rows past W.rows: zero) into `panel`.
template <class L>
void unpackPanel(const LinearWeight& W, int64_t r0, int64_t blocks, const Panel& panel) {
  const int64_t groups = q4gGroups(W.cols);
  for (int r = 0; r < kTile; ++r) {
    if (r0 + r >= W.rows) {
      for (int64_t b = 0; b < blocks; ++b) {
        std::memset(panel.a + b * kPanelBlock + r * kBlockBytes, 0, kBlockBytes);
        panel.dw[b * kTile + r] = 0.0f;
        panel.mw[b * kTile + r] = 0.0f;
      }
      continue;
    }
    const typename L::Row row = L::row(weightData(W), W.cols, r0 + r);
    for (int64_t g = 0; g < groups; ++g) {
      __m512i w[8];
      L::unpack(row, g, w);
      storeGroupTransposed(w, panel.a, g * kQ4GBlocks, blocks, r);
      for (int j = 0; j < kQ4GBlocks && g * kQ4GBlocks + j < blocks; ++j) {
        const int64_t b = g * kQ4GBlocks + j;
        L::scales(row, g, j, panel.dw + b * kTile + r, panel.mw + b * kTile + r);
      }
    }
  }
}

// ---- the tile loop ---------------------------------------------------------------------

// Layouts with a scale per 16 values (kHalves): dw holds the first half's, mw the second's.
template <class L>
constexpr bool halves() {
  if constexpr (requires { L::kHalves; }) return L::kHalves;
  else return false;
}

// A tile's 16 sums per row become f32 in acc[r] (16 tokens each). The accumulators stay in
// registers only if every index is a constant: the loops are unrolled and acc is passed by
// reference to always-inlined code (a spilled accumulator costs a load and a store per row
// and block, and the stores compete with the tile stores for the store port).
using Acc = __m512[kTile];

// Block products c (row r at c + 16r): acc[r] += dx·dw[r]·c[r] (+ sx·mw[r]).
template <class L>
[[gnu::always_inline]] inline void scaleBlock(const int32_t* c, const float* dw, const float* mw, __m512 dx, __m512 sx,
                                              Acc& acc) {
#pragma GCC unroll 16
  for (int r = 0; r < kTile; ++r) {
    const __m512 scale = _mm512_mul_ps(dx, _mm512_set1_ps(dw[r]));
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + kTile * r)), scale, acc[r]);
    if constexpr (L::kOffset) acc[r] = _mm512_fmadd_ps(sx, _mm512_set1_ps(mw[r]), acc[r]);
  }
}

// Half-block products ca, cb: acc[r] += dx·(dwA[r]·ca[r] + dwB[r]·cb[r]) (dwB in mw).
[[gnu::always_inline]] inline void scaleHalves(const int32_t* ca, const int32_t* cb, const float* dwA,
                                               const float* dwB, __m512 dx, Acc& acc) {
#pragma GCC unroll 16
  for (int r = 0; r < kTile; ++r) {
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(ca + kTile * r)), _mm512_mul_ps(dx, _mm512_set1_ps(dwA[r])),
                             acc[r]);
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cb + kTile * r)), _mm512_mul_ps(dx, _mm512_set1_ps(dwB[r])),
                             acc[r]);
  }
}

// The scales of one stage (products stored at c) starting at block blk: `tiles` blocks, or
// for kHalves layouts one block's two halves.
template <class L>
[[gnu::always_inline]] inline void scaleStage(const int32_t* c, const Panel& panel, const TileActivations& a,
                                              int64_t u, int64_t blk, int tiles, Acc& acc) {
  if constexpr (halves<L>()) {
    scaleHalves(c, c + kTile * kTile, panel.dw + blk * kTile, panel.mw + blk * kTile, _mm512_loadu_ps(a.d + a.at(u, blk)),
                acc);
  } else {
    for (int i = 0; i < tiles; ++i) {
      const int64_t at = a.at(u, blk + i);
      const __m512 sx = L::kOffset ? _mm512_loadu_ps(a.s + at) : _mm512_setzero_ps();
      scaleBlock<L>(c + i * kTile * kTile, panel.dw + (blk + i) * kTile, panel.mw + (blk + i) * kTile,
                    _mm512_loadu_ps(a.d + at), sx, acc);
    }
  }
}

// The tiles of one stage: products A0·B0 into tmm2 and (when `second`) A1·B1 into tmm3,
// signed or unsigned weights as the layout's values are. Each C tile's previous products
// (`prevTiles` of them, the stage before) are stored to `prev` just before the tile is
// zeroed: the tile registers are not renamed (a load, store, zero or product waits for
// every earlier use of its tiles), and this order lets the tile unit start on this stage
// while the older stage's sums go out.
template <class L>
[[gnu::always_inline]] inline void stageTiles(const uint8_t* a0, const int8_t* b0, const uint8_t* a1, const int8_t* b1,
                                              bool second, int32_t* prev, int prevTiles) {
  _tile_loadd(0, a0, kBlockBytes);
  _tile_loadd(4, b0, 64);
  if (prevTiles > 0) _tile_stored(2, prev, 64);
  _tile_zero(2);
  if constexpr (L::kSigned) _tile_dpbssd(2, 0, 4);
  else _tile_dpbusd(2, 0, 4);
  if (second) {
    _tile_loadd(1, a1, kBlockBytes);
    _tile_loadd(5, b1, 64);
  }
  if (prevTiles > 1) _tile_stored(3, prev + kTile * kTile, 64);
  if (second) {
    _tile_zero(3);
    if constexpr (L::kSigned) _tile_dpbssd(3, 1, 5);
    else _tile_dpbusd(3, 1, 5);
  }
}

// One panel (rows r0.. r0 + rowsHere) against token tile u. A stage is two tile products:
// two blocks, or (kHalves) one block's two halves. Software-pipelined: each stage's tiles
// first store the stage before's products, and AVX-512 scales those while the tile unit
// computes this stage. Two buffers of sums, so a tile store never waits on the scale loads
// of the stage before.
template <class L>
void panelTile(const Panel& panel, int64_t blocks, const TileActivations& a, int64_t u, int64_t n, int64_t r0,
               int rowsHere, float* y, int64_t ldy) {
  alignas(64) int32_t c[2][2 * kTile * kTile];
  Acc acc;
#pragma GCC unroll 16
  for (int r = 0; r < kTile; ++r) acc[r] = _mm512_setzero_ps();
  int64_t prevBlk = 0;
  int prevTiles = 0, s = 0;
  for (int64_t blk = 0; blk < blocks; s ^= 1) {
    const uint8_t* ap = panel.a + blk * kPanelBlock;
    const int8_t* bp = a.b(u, blk);
    int tiles, step;
    if constexpr (halves<L>()) {
      // Values 0-15: bytes 0-15 of each A row and rows 0-3 of the B tile; 16-31 the rest.
      stageTiles<L>(ap, bp, ap + kBlockBytes / 2, bp + 4 * 64, true, c[s], prevTiles);
      tiles = 2;
      step = 1;
    } else {
      const bool second = blk + 1 < blocks;
      stageTiles<L>(ap, bp, ap + kPanelBlock, bp + kActBlock, second, c[s], prevTiles);
      tiles = step = second ? 2 : 1;
    }
    if (prevTiles > 0) scaleStage<L>(c[s], panel, a, u, prevBlk, prevTiles, acc);
    prevBlk = blk;
    prevTiles = tiles;
    blk += step;
  }
  _tile_stored(2, c[s], 64);
  if (prevTiles > 1) _tile_stored(3, c[s] + kTile * kTile, 64);
  scaleStage<L>(c[s], panel, a, u, prevBlk, prevTiles, acc);
  // acc[r] lane t = y of token 16u + t, row r0 + r; transposed, acc[t] lane r.
  transpose16(acc);
  const __mmask16 rows = static_cast<__mmask16>((1u << rowsHere) - 1);
  const int64_t t0 = u * kTile, tokens = std::min<int64_t>(kTile, n - t0);
#pragma GCC unroll 16
  for (int t = 0; t < kTile; ++t)
    if (t < tokens) _mm512_mask_storeu_ps(y + (t0 + t) * ldy + r0, rows, acc[t]);
}

template <class L>
void run(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy, ThreadPool& pool,
         KernelScratch& scratch) {
  if (W.cols % kQK != 0) throw std::invalid_argument("AmxKernels::int8: cols must be a multiple of 32");
  const size_t need = L::rowBytes(W.cols) * static_cast<size_t>(W.rows);
  if (W.owned.size() < need) throw std::invalid_argument("AmxKernels::int8: weight bytes shorter than the layout's rows");
  const int threads = pool.size();
  uint8_t* base = scratch.bytes(amxScratchBytes(n, W.cols, threads));
  base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + 63) & ~uintptr_t(63));
  const TileActivations a = placeActivations(base, n, W.cols);
  const int64_t blocks = a.blocks, padded = a.tiles * kTile;
  pool.parallelFor(padded, [&](int64_t t0, int64_t t1) { quantizeTokens(x, ldx, n, t0, t1, a); });
  uint8_t* panels = base + ((tileActivationBytes(n, W.cols) + 63) & ~size_t(63));
  const size_t perThread = (panelBytes(blocks) + 63) & ~size_t(63);
  const int64_t panelCount = (W.rows + kTile - 1) / kTile;
  auto task = [&](int i, int nt) {
    const int64_t p0 = panelCount * i / nt, p1 = panelCount * (i + 1) / nt;
    if (p0 >= p1) return;
    uint8_t* mine = panels + perThread * static_cast<size_t>(i);
    Panel panel{mine, reinterpret_cast<float*>(mine + blocks * kPanelBlock), nullptr};
    panel.mw = panel.dw + kTile * blocks;
    const TileScope tiles(int8TileConfig(halves<L>()));
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t r0 = p * kTile;
      const int rowsHere = static_cast<int>(std::min<int64_t>(kTile, W.rows - r0));
      unpackPanel<L>(W, r0, blocks, panel);
      for (int64_t u = 0; u < a.tiles; ++u) panelTile<L>(panel, blocks, a, u, n, r0, rowsHere, y, ldy);
    }
  };
  pool.run(TaskRef(task));
}

// The panel unpacker of layout L (the layouts the traits table gives an AMX kernel).
template <Layout L>
constexpr auto panelFor() {
  if constexpr (L == Layout::Q5GK) return Q5KPanel{};
  else if constexpr (L == Layout::IQ4GX) return IQ4XSPanel{};
  else if constexpr (L == Layout::Q4GK) return Q4KPanel{};
  else if constexpr (L == Layout::Q8G) return Q8Panel{};
  else if constexpr (L == Layout::Q6G) return Q6Panel{};
  else return Q4GPanel<L>{};  // Q4G0, Q4G16, Q4G32
}

}  // namespace

size_t amxScratchBytes(int64_t n, int64_t cols, int threads) {
  const int64_t blocks = cols / kQK;
  return 64 + ((tileActivationBytes(n, cols) + 63) & ~size_t(63)) +
         static_cast<size_t>(threads) * ((panelBytes(blocks) + 63) & ~size_t(63));
}

template <Layout L>
void AmxKernels::int8(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                      ThreadPool& pool, KernelScratch& scratch) {
  if (n <= 0 || W.rows == 0) return;
  run<decltype(panelFor<L>())>(W, x, n, ldx, y, ldy, pool, scratch);
}
template MatmulFn AmxKernels::int8<Layout::Q5GK>;
template MatmulFn AmxKernels::int8<Layout::IQ4GX>;
template MatmulFn AmxKernels::int8<Layout::Q4G0>;
template MatmulFn AmxKernels::int8<Layout::Q4G16>;
template MatmulFn AmxKernels::int8<Layout::Q4G32>;
template MatmulFn AmxKernels::int8<Layout::Q4GK>;
template MatmulFn AmxKernels::int8<Layout::Q8G>;
template MatmulFn AmxKernels::int8<Layout::Q6G>;

}  // namespace prism::kernels
