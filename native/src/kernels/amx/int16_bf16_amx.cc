// The AMX-BF16 prefill driver for int16-precision weights (bf16_amx.h says what it computes
// and why). Built with -mamx-tile -mamx-bf16 and the AVX-512 flags; only ever called after
// cpuHasAmxBf16() (bf16_support.cc, built with the baseline flags).
//
// TDPBF16PS C += A·B: A is M ≤ 16 rows × 32 bf16 (64 bytes), B is 16 rows of N ≤ 16 bf16
// pairs (row k holds values 2k, 2k + 1 of each column n), C is M × N f32:
// C[m][n] += Σ_k A[m][2k]·B[k][2n] + A[m][2k + 1]·B[k][2n + 1]. Here A is 16 weight rows,
// which are plain row-major bf16 (a tile load with the row stride: no reordering), B is 16
// tokens' 32 values of one chunk of the columns, stored pair-major, and C[r][t] is output
// row r of token t. The products of two bf16 are exact in f32 and the sums are f32 (the
// instruction flushes denormals, which no bf16 split of these values reaches).
//
// Per thread, a 16-row weight panel is dequantized (d·q + m in f32) and split into hi / lo
// bf16 once, then meets every token tile of the batch, two token tiles at a time (tile
// registers: 0/1 the panel's hi / lo chunk, 2/3 and 4/5 the two token tiles' hi / lo, 6/7
// their C). The activations are split once per matmul, by token tiles on all threads.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/amx/bf16_amx.h"
#include "kernels/amx/tile_scope.h"
#include "kernels/internal.h"

namespace prism::kernels {
namespace {

// GCC 12's AVX-512 intrinsics trip these on their own placeholder values.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

constexpr int kTile = 16;            // weight rows per panel, tokens per token tile
constexpr int kChunk = 32;           // columns per tile product: 16 bf16 pairs
constexpr size_t kTileBytes = 1024;  // every tile here: 16 rows × 64 bytes

TileConfig bf16TileConfig() {
  TileConfig cfg;
  for (int i = 0; i < 8; ++i) {
    cfg.colsb[i] = 64;
    cfg.rows[i] = kTile;
  }
  return cfg;
}

// r[i] lane j ↔ r[j] lane i, for 16 vectors of 16 32-bit lanes: pairs of 32-bit lanes, then
// of 64-bit lanes inside each 128-bit lane, then two rounds of 128-bit lane shuffles.
inline void transpose16(__m512i* r) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // After this round, 128-bit lane L of r[4i + j] holds rows 4i..4i+3 of column 4L + j.
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i u0 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x44), u1 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xEE);
    const __m512i v0 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x44), v1 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xEE);
    t[j] = _mm512_shuffle_i32x4(u0, v0, 0x88);
    t[4 + j] = _mm512_shuffle_i32x4(u0, v0, 0xDD);
    t[8 + j] = _mm512_shuffle_i32x4(u1, v1, 0x88);
    t[12 + j] = _mm512_shuffle_i32x4(u1, v1, 0xDD);
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

inline __m512i asInt(__m512bh v) { return reinterpret_cast<__m512i&>(v); }

// The f32 values of 16 bf16.
inline __m512 widen(__m256i bf) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bf), 16)); }

// Values v0 (0-15) and v1 (16-31) as hi = bf16(v) and lo = bf16(v − hi), 32 bf16 each in
// value order (round to nearest even both times; v − hi is exact in f32).
inline void split(__m512 v0, __m512 v1, __m512i* hi, __m512i* lo) {
  const __m512i h = asInt(_mm512_cvtne2ps_pbh(v1, v0));
  const __m512 h0 = widen(_mm512_castsi512_si256(h)), h1 = widen(_mm512_extracti64x4_epi64(h, 1));
  *hi = h;
  *lo = asInt(_mm512_cvtne2ps_pbh(_mm512_sub_ps(v1, h1), _mm512_sub_ps(v0, h0)));
}

// ---- activations: per token tile u and chunk c, B tiles hi and lo (1 KiB each) -----------

struct SplitActivations {
  uint8_t* b = nullptr;
  int64_t tiles = 0, chunks = 0;
  const uint8_t* hi(int64_t u, int64_t c) const { return b + static_cast<size_t>(2 * (u * chunks + c)) * kTileBytes; }
  const uint8_t* lo(int64_t u, int64_t c) const { return hi(u, c) + kTileBytes; }
};

size_t splitActivationBytes(int64_t n, int64_t cols) {
  return static_cast<size_t>((n + kTile - 1) / kTile) * static_cast<size_t>(cols / kChunk) * 2 * kTileBytes;
}

// Token tiles [u0, u1): token t's chunk is 16 pairs (one vector of 32-bit lanes); a 16 × 16
// transpose makes row k of the tile pair k of every token. Tokens past n are zero.
void splitTokens(const float* x, int64_t ldx, int64_t n, int64_t u0, int64_t u1, const SplitActivations& a) {
  for (int64_t u = u0; u < u1; ++u) {
    for (int64_t c = 0; c < a.chunks; ++c) {
      __m512i hi[kTile], lo[kTile];
      for (int t = 0; t < kTile; ++t) {
        const int64_t token = u * kTile + t;
        if (token >= n) {
          hi[t] = lo[t] = _mm512_setzero_si512();
          continue;
        }
        const float* p = x + token * ldx + c * kChunk;
        split(_mm512_loadu_ps(p), _mm512_loadu_ps(p + 16), &hi[t], &lo[t]);
      }
      transpose16(hi);
      transpose16(lo);
      uint8_t* h = const_cast<uint8_t*>(a.hi(u, c));
      uint8_t* l = const_cast<uint8_t*>(a.lo(u, c));
      for (int k = 0; k < kTile; ++k) {
        _mm512_store_si512(h + 64 * k, hi[k]);
        _mm512_store_si512(l + 64 * k, lo[k]);
      }
    }
  }
}

// ---- weight panels: 16 rows of hi and of lo bf16, row-major (row r at + r·cols) ----------

struct Panel {
  uint16_t* hi = nullptr;
  uint16_t* lo = nullptr;
};

size_t panelBytes(int64_t cols) { return (2 * kTile * static_cast<size_t>(cols) * sizeof(uint16_t) + 63) & ~size_t(63); }

// kLayoutQ4X (internal.h): block b's values are the low (b even) or high (b odd) nibbles of
// group b / 2; value = d[b]·q + m[b].
struct Q4XRows {
  static size_t rowBytes(int64_t cols) { return q4xRowBytes(cols); }
  static void dequantize(const uint8_t* base, int64_t cols, int64_t row, uint16_t* hi, uint16_t* lo) {
    const Q4XRow rw = q4xRow(base, cols, row);
    const __m512i nibble = _mm512_set1_epi32(0x0F);
    for (int64_t b = 0; b < cols / kQK; ++b) {
      const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rw.nibbles + (b / 2) * 32));
      const __m512i shift = _mm512_set1_epi32(static_cast<int>(b & 1) * 4);
      const __m512i q0 = _mm512_and_si512(_mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(bytes)), shift), nibble);
      const __m512i q1 = _mm512_and_si512(_mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(bytes, 1)), shift), nibble);
      const __m512 d = _mm512_set1_ps(rw.d[b]), m = _mm512_set1_ps(rw.m[b]);
      __m512i h, l;
      split(_mm512_fmadd_ps(_mm512_cvtepi32_ps(q0), d, m), _mm512_fmadd_ps(_mm512_cvtepi32_ps(q1), d, m), &h, &l);
      _mm512_storeu_si512(hi + b * kQK, h);
      _mm512_storeu_si512(lo + b * kQK, l);
    }
  }
};

// Q8_0 in the file's layout: 34-byte blocks of an f16 d and 32 int8 q; value = d·q.
struct Q8Rows {
  static size_t rowBytes(int64_t cols) { return typeRowBytes(TensorType::Q8_0, cols); }
  static void dequantize(const uint8_t* base, int64_t cols, int64_t row, uint16_t* hi, uint16_t* lo) {
    const uint8_t* p = base + rowBytes(cols) * static_cast<size_t>(row);
    for (int64_t b = 0; b < cols / kQK; ++b, p += kQ8_0Bytes) {
      const __m512 d = _mm512_set1_ps(f16ToF32(loadU16(p)));
      const __m512i q0 = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2)));
      const __m512i q1 = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 18)));
      __m512i h, l;
      split(_mm512_mul_ps(_mm512_cvtepi32_ps(q0), d), _mm512_mul_ps(_mm512_cvtepi32_ps(q1), d), &h, &l);
      _mm512_storeu_si512(hi + b * kQK, h);
      _mm512_storeu_si512(lo + b * kQK, l);
    }
  }
};

// Rows [r0, r0 + 16) of W (rows past W.rows: zero) into the panel.
template <class L>
void unpackPanel(const LinearWeight& W, int64_t r0, const Panel& panel) {
  const size_t cols = static_cast<size_t>(W.cols);
  for (int r = 0; r < kTile; ++r) {
    uint16_t* hi = panel.hi + r * cols;
    uint16_t* lo = panel.lo + r * cols;
    if (r0 + r >= W.rows) {
      std::memset(hi, 0, cols * sizeof(uint16_t));
      std::memset(lo, 0, cols * sizeof(uint16_t));
      continue;
    }
    L::dequantize(weightData(W), W.cols, r0 + r, hi, lo);
  }
}

// ---- the tile loop ---------------------------------------------------------------------

// c[r][t] (row r of the panel, token t of tile u) → y[(16u + t)·ldy + r0 + r] for the
// panel's rowsHere rows and the tile's tokens below n.
inline void storeTile(const float* c, int64_t u, int64_t n, int64_t r0, int rowsHere, float* y, int64_t ldy) {
  __m512i v[kTile];
  for (int r = 0; r < kTile; ++r) v[r] = _mm512_load_si512(c + kTile * r);
  transpose16(v);
  const __mmask16 rows = static_cast<__mmask16>((1u << rowsHere) - 1);
  const int64_t tokens = std::min<int64_t>(kTile, n - u * kTile);
  for (int64_t t = 0; t < tokens; ++t)
    _mm512_mask_storeu_ps(y + (u * kTile + t) * ldy + r0, rows, _mm512_castsi512_ps(v[t]));
}

// The panel against token tiles u and u + 1 (two: C in tmm6 and tmm7) or u alone.
void panelTiles(const Panel& panel, int64_t cols, const SplitActivations& a, int64_t u, bool two, int64_t n,
                int64_t r0, int rowsHere, float* y, int64_t ldy) {
  const size_t stride = static_cast<size_t>(cols) * sizeof(uint16_t);
  _tile_zero(6);
  _tile_zero(7);
  for (int64_t c = 0; c < a.chunks; ++c) {
    _tile_loadd(0, panel.hi + c * kChunk, stride);
    _tile_loadd(1, panel.lo + c * kChunk, stride);
    _tile_loadd(2, a.hi(u, c), 64);
    _tile_loadd(3, a.lo(u, c), 64);
    if (two) {
      _tile_loadd(4, a.hi(u + 1, c), 64);
      _tile_loadd(5, a.lo(u + 1, c), 64);
      // Alternating accumulators: each product waits on the one before it on the same C.
      _tile_dpbf16ps(6, 0, 2);
      _tile_dpbf16ps(7, 0, 4);
      _tile_dpbf16ps(6, 1, 2);
      _tile_dpbf16ps(7, 1, 4);
      _tile_dpbf16ps(6, 0, 3);
      _tile_dpbf16ps(7, 0, 5);
    } else {
      _tile_dpbf16ps(6, 0, 2);
      _tile_dpbf16ps(6, 1, 2);
      _tile_dpbf16ps(6, 0, 3);
    }
  }
  alignas(64) float c[2][kTile * kTile];
  _tile_stored(6, c[0], 64);
  storeTile(c[0], u, n, r0, rowsHere, y, ldy);
  if (two) {
    _tile_stored(7, c[1], 64);
    storeTile(c[1], u + 1, n, r0, rowsHere, y, ldy);
  }
}

template <class L>
void run(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy, ThreadPool& pool,
         KernelScratch& scratch) {
  if (W.cols % kChunk != 0) throw std::invalid_argument("matmulAmxBf16: cols must be a multiple of 32");
  if (W.bytes < L::rowBytes(W.cols) * static_cast<size_t>(W.rows))
    throw std::invalid_argument("matmulAmxBf16: weight bytes shorter than the layout's rows");
  const int threads = pool.size();
  uint8_t* base = scratch.bytes(amxBf16ScratchBytes(n, W.cols, threads));
  base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + 63) & ~uintptr_t(63));
  SplitActivations a;
  a.b = base;
  a.tiles = (n + kTile - 1) / kTile;
  a.chunks = W.cols / kChunk;
  pool.parallelFor(a.tiles, [&](int64_t u0, int64_t u1) { splitTokens(x, ldx, n, u0, u1, a); });
  uint8_t* panels = base + splitActivationBytes(n, W.cols);
  const int64_t panelCount = (W.rows + kTile - 1) / kTile;
  auto task = [&](int i, int nt) {
    const int64_t p0 = panelCount * i / nt, p1 = panelCount * (i + 1) / nt;
    if (p0 >= p1) return;
    uint8_t* mine = panels + panelBytes(W.cols) * static_cast<size_t>(i);
    const Panel panel{reinterpret_cast<uint16_t*>(mine), reinterpret_cast<uint16_t*>(mine) + kTile * W.cols};
    const TileScope tiles(bf16TileConfig());
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t r0 = p * kTile;
      const int rowsHere = static_cast<int>(std::min<int64_t>(kTile, W.rows - r0));
      unpackPanel<L>(W, r0, panel);
      int64_t u = 0;
      for (; u + 2 <= a.tiles; u += 2) panelTiles(panel, W.cols, a, u, true, n, r0, rowsHere, y, ldy);
      if (u < a.tiles) panelTiles(panel, W.cols, a, u, false, n, r0, rowsHere, y, ldy);
    }
  };
  pool.run(TaskRef(task));
}

}  // namespace

size_t amxBf16ScratchBytes(int64_t n, int64_t cols, int threads) {
  return 64 + splitActivationBytes(n, cols) + static_cast<size_t>(threads) * panelBytes(cols);
}

void matmulAmxBf16(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                   ThreadPool& pool, KernelScratch& scratch) {
  if (n <= 0 || W.rows == 0) return;
  if (!amxBf16Handles(W)) throw std::invalid_argument("matmulAmxBf16: not an int16-precision Q4X or Q8_0 weight");
  if (W.layout == kLayoutQ4X) return run<Q4XRows>(W, x, n, ldx, y, ldy, pool, scratch);
  return run<Q8Rows>(W, x, n, ldx, y, ldy, pool, scratch);
}

}  // namespace prism::kernels
