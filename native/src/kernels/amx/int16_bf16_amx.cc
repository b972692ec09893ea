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
// Per thread, 16-row weight panels are dequantized (d·q + m in f32) and split into hi / lo
// bf16 once, two at a time, and then meet every token tile of the batch (tile registers: 0/1
// and 2/3 the two panels' hi / lo chunk, 4/5 the token tile's hi / lo, 6/7 their C): each
// activation tile serves two panels, since the activations (all tokens, from L2 or L3) are
// the operand that streams. The activations are split once per matmul, by token tiles on
// all threads. Default model, 512-token prefill: two panels × one token tile read ~600
// tok/s where one panel × two token tiles read ~550 (sequential runs); the software
// prefetch of the next token tile's activations another 1.03× (paired, one process).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels/amx/bf16_amx.h"
#include "kernels/amx/tile_scope.h"
#include "kernels/amx/transpose16.h"
#include "kernels/internal.h"
#include "kernels/q4xv.h"

namespace prism::kernels {
namespace {

// GCC 12's AVX-512 intrinsics trip these on their own placeholder values.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

constexpr int kTile = 16;            // weight rows per panel, tokens per token tile
constexpr int kChunk = 32;           // columns per tile product: 16 bf16 pairs
constexpr size_t kTileBytes = 1024;  // every tile here: 16 rows × 64 bytes
// The columns are walked in K-blocks of kBlockChunks chunks (1,536 values: the default
// model's rows, 576 and 1,536 wide, are one block); the C tiles of each token tile are kept
// in `acc` between K-blocks of wider rows. L1-sized blocks (6 chunks, two panels in 24 KiB)
// measured 9% slower in the default model's 512-token prefill than whole rows (paired):
// the C round trips cost more than the panels' L2 reads save.
constexpr int64_t kBlockChunks = 48;


TileConfig bf16TileConfig() {
  TileConfig cfg;
  for (int i = 0; i < 8; ++i) {
    cfg.colsb[i] = 64;
    cfg.rows[i] = kTile;
  }
  return cfg;
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

// A K-block of one panel: hi and lo of 16 rows × kBlockChunks chunks.
constexpr size_t kPanelBytes = 2 * kTile * kBlockChunks * kChunk * sizeof(uint16_t);

// Per thread: two panels' K-blocks, then the C tiles of two panels × every token tile.
size_t threadBytes(int64_t n) {
  return 2 * kPanelBytes + static_cast<size_t>((n + kTile - 1) / kTile) * 2 * kTile * kTile * sizeof(float);
}

// Layout::Q4XV (q4xv.h): row r's block b is row r % 16 of record (r / 16, b); value =
// d[b]·q + m[b]. The row stride is the layout's bytes per row (its records hold 16 rows).
struct Q4XVRows {
  static size_t rowBytes(int64_t cols) { return static_cast<size_t>(q4xvBlocks(cols)) * (kQ4XVRecordBytes / kQ4XVRows); }
  static void dequantize(const uint8_t* base, int64_t cols, int64_t row, int64_t b0, int64_t b1, uint16_t* hi,
                         uint16_t* lo) {
    const int64_t blocks = q4xvBlocks(cols);
    const int r = static_cast<int>(row % kQ4XVRows);
    alignas(64) float v[kQK];
    for (int64_t b = b0; b < b1; ++b, hi += kQK, lo += kQK) {
      const uint8_t* rec = q4xvRecord(base, blocks, row / kQ4XVRows, b);
      const float d = q4xvScales(rec)[r], m = q4xvOffsets(rec)[r];
      for (int k = 0; k < kQK; ++k) v[k] = std::fma(static_cast<float>(q4xvNibble(rec, r, k)), d, m);
      __m512i h, l;
      split(_mm512_load_ps(v), _mm512_load_ps(v + 16), &h, &l);
      _mm512_storeu_si512(hi, h);
      _mm512_storeu_si512(lo, l);
    }
  }
};

// Rows [r0, r0 + 16) of W (rows past W.rows: zero), blocks [b0, b1), into the panel (row r
// at + r·(b1 − b0)·32).
template <class L>
void unpackPanel(const LinearWeight& W, int64_t r0, int64_t b0, int64_t b1, const Panel& panel) {
  const size_t width = static_cast<size_t>(b1 - b0) * kQK;
  for (int r = 0; r < kTile; ++r) {
    uint16_t* hi = panel.hi + r * width;
    uint16_t* lo = panel.lo + r * width;
    if (r0 + r >= W.rows) {
      std::memset(hi, 0, width * sizeof(uint16_t));
      std::memset(lo, 0, width * sizeof(uint16_t));
      continue;
    }
    L::dequantize(weightData(W), W.cols, r0 + r, b0, b1, hi, lo);
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

// One K-block (chunks [c0, c0 + chunks)) of panels q0 (and q1, when `two`: C in tmm6 and
// tmm7) against token tile u. Two panels share each activation tile, the operand that
// streams. `first`: C starts at zero, else from acc; `last`: C goes to y, else to acc.
struct KBlock {
  int64_t c0, chunks;
  bool first, last;
};

void panelTiles(const Panel& q0, const Panel& q1, bool two, const KBlock& kb, const SplitActivations& a, int64_t u,
                float* acc, int64_t n, int64_t r0, int rows0, int rows1, float* y, int64_t ldy) {
  const size_t stride = static_cast<size_t>(kb.chunks) * kChunk * sizeof(uint16_t);
  float* c0 = acc + u * 2 * kTile * kTile;
  float* c1 = c0 + kTile * kTile;
  if (kb.first) {
    _tile_zero(6);
    _tile_zero(7);
  } else {
    _tile_loadd(6, c0, 64);
    _tile_loadd(7, c1, 64);
  }
  // The next token tile's activations of this K-block, one chunk (2 KiB) per chunk: tile
  // loads that miss L1 wait for their lines with little overlap (the hardware prefetchers
  // were measured not to cover them).
  const bool ahead = u + 1 < a.tiles;
  for (int64_t c = 0; c < kb.chunks; ++c) {
    if (ahead) {
      const char* next = reinterpret_cast<const char*>(a.hi(u + 1, kb.c0 + c));
      for (int line = 0; line < 32; ++line) _mm_prefetch(next + 64 * line, _MM_HINT_T0);
    }
    _tile_loadd(4, a.hi(u, kb.c0 + c), 64);
    _tile_loadd(5, a.lo(u, kb.c0 + c), 64);
    _tile_loadd(0, q0.hi + c * kChunk, stride);
    _tile_loadd(1, q0.lo + c * kChunk, stride);
    if (two) {
      _tile_loadd(2, q1.hi + c * kChunk, stride);
      _tile_loadd(3, q1.lo + c * kChunk, stride);
      // Alternating accumulators: each product waits on the one before it on the same C.
      _tile_dpbf16ps(6, 0, 4);
      _tile_dpbf16ps(7, 2, 4);
      _tile_dpbf16ps(6, 1, 4);
      _tile_dpbf16ps(7, 3, 4);
      _tile_dpbf16ps(6, 0, 5);
      _tile_dpbf16ps(7, 2, 5);
    } else {
      _tile_dpbf16ps(6, 0, 4);
      _tile_dpbf16ps(6, 1, 4);
      _tile_dpbf16ps(6, 0, 5);
    }
  }
  _tile_stored(6, c0, 64);
  if (two) _tile_stored(7, c1, 64);
  if (!kb.last) return;
  storeTile(c0, u, n, r0, rows0, y, ldy);
  if (two) storeTile(c1, u, n, r0 + kTile, rows1, y, ldy);
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
  const int64_t blocks = W.cols / kQK;
  auto task = [&](int i, int nt) {
    const int64_t p0 = panelCount * i / nt, p1 = panelCount * (i + 1) / nt;
    if (p0 >= p1) return;
    uint8_t* mine = panels + threadBytes(n) * static_cast<size_t>(i);
    Panel pair[2];
    for (int k = 0; k < 2; ++k) {
      uint16_t* at = reinterpret_cast<uint16_t*>(mine + k * kPanelBytes);
      pair[k] = Panel{at, at + kTile * kBlockChunks * kChunk};
    }
    float* acc = reinterpret_cast<float*>(mine + 2 * kPanelBytes);
    const TileScope tiles(bf16TileConfig());
    for (int64_t p = p0; p < p1; p += 2) {
      const bool two = p + 1 < p1;
      const int64_t r0 = p * kTile;
      const int rows0 = static_cast<int>(std::min<int64_t>(kTile, W.rows - r0));
      const int rows1 = two ? static_cast<int>(std::min<int64_t>(kTile, W.rows - r0 - kTile)) : 0;
      for (int64_t b0 = 0; b0 < blocks; b0 += kBlockChunks) {
        const int64_t b1 = std::min(blocks, b0 + kBlockChunks);
        const KBlock kb{b0, b1 - b0, b0 == 0, b1 == blocks};
        unpackPanel<L>(W, r0, b0, b1, pair[0]);
        if (two) unpackPanel<L>(W, r0 + kTile, b0, b1, pair[1]);
        for (int64_t u = 0; u < a.tiles; ++u) panelTiles(pair[0], pair[1], two, kb, a, u, acc, n, r0, rows0, rows1, y, ldy);
      }
    }
  };
  pool.run(TaskRef(task));
}

}  // namespace

size_t amxBf16ScratchBytes(int64_t n, int64_t cols, int threads) {
  return 64 + splitActivationBytes(n, cols) + static_cast<size_t>(threads) * threadBytes(n);
}

void matmulAmxBf16(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                   ThreadPool& pool, KernelScratch& scratch) {
  if (n <= 0 || W.rows == 0) return;
  if (!amxBf16Handles(W)) throw std::invalid_argument("matmulAmxBf16: not an int16-precision Q4XV weight");
  run<Q4XVRows>(W, x, n, ldx, y, ldy, pool, scratch);
}

}  // namespace prism::kernels
