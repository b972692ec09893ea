// Layout::Q4XV on the AMX-INT8 tiles (q4xvMatmulAmx, declared in kernels/q4xv.h): n tokens of
// int16 activations against 4-bit weights, bit-identical to the layout's scalar arithmetic and
// so to its AVX-512 one-token kernel, for every n (a speculative verify step or a prefill gives
// each token the bits a one-token step gives it). Built with -mamx-tile -mamx-int8 and the
// AVX-512 flags; only ever called after amxEnabled().
//
// Why the tiles can reproduce the one-token kernel exactly: every kernel of the layout first
// forms the exact integer dot I of a whole 32-value block (|I| < 2^24: its f32 conversion is
// exact too), then runs the same f32 steps in the same order per row and token:
//   accI = fma(float(I_b), dw[b]·dx[b], accI);  accM = fma(mw[b], sx[b], accM);  y = accI + accM
// with the blocks in increasing order. The int16 activation q = 256·H + L is held as two byte
// planes (L unsigned, H signed), so I = 256·Σ q_w·H + Σ q_w·L: two int8 tile products.
//
// C = [token][row]: A is up to 16 tokens × the block's 32 bytes of one plane, loaded straight
// from the plane with its token stride; B is the block's 8 quads of a 16-row group, unpacked
// from the record's 4 nibble chunks (`& 0x0F` quad 2c, `>> 4 & 0x0F` quad 2c + 1: already the
// VNNI order of a B tile, K/4 = 8 rows × 16 rows of weights × 4 bytes); TDPBUSD takes L (A u8,
// B s8: the weights 0..15 are valid s8) and TDPBSUD takes H (A s8, B u8). Row t of C_lo / C_hi
// is then one 16-lane int32 vector of token t's dots with the group's 16 rows, the lanes of the
// vectorized scalar steps: I = (C_hi << 8) + C_lo, and per token one vector FMA pair per block.
//
// Up to 8 tokens take a stacked form with half the tile instructions: one A tile of 2n rows,
// L of the n tokens then H + 128 (unsigned), against the same B in one TDPBUSD, so one C tile
// holds both sums; I = (C_hi' << 8) + C_lo − 32768·Σq_w (the rows' weight sums, per block,
// computed once per group), still the exact integer. On this host a tile instruction costs
// about the same whatever its rows (a store ~16 cycles): the stacked form measured 1.2-1.4×
// faster for n = 1-8 (576×576 and 1536×576, one thread), and is no longer a gain above 8.
//
// Threads split the row groups. Per group, every block's B is unpacked once into the thread's
// buffer and meets every token tile; per token tile the blocks go in chunks of kChunk: the
// chunk's tile products are stored, then each token walks the chunk's blocks in order, four
// tokens at a time with their accumulators in registers. Token tiles are 16 tokens; a batch
// of fewer takes one tile of exactly n rows (the configuration's rows), and a batch above 16
// that is not a multiple ends with a full tile that overlaps the one before it (its first
// tokens, already stored, are not processed again by the f32 steps), so one configuration
// serves the whole call.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "kernels/amx/amx.h"
#include "kernels/amx/int16_tiles.h"
#include "kernels/amx/q4xv_amx.h"
#include "kernels/amx/tile_scope.h"
#include "kernels/q4xv.h"

namespace prism::kernels {
namespace {

// GCC 12's AVX-512 intrinsics trip these on their own placeholder values.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

constexpr int kGroupRows = 16;          // weight rows per group: C's 16 int32 columns
constexpr int kTileTokens = 16;         // tokens per token tile: A's and C's rows
constexpr int kBlockValues = 32;        // values per block: A's bytes per row
constexpr size_t kUnpackedBytes = 512;  // one block's B tile: 8 quads × 64 bytes
constexpr size_t kCInts = 16 * 16;      // one C tile (16 tokens × 16 int32)
// Blocks per chunk: the chunk's C tiles (2 KiB per block) are stored, then read by the f32
// steps. 8 measured faster than 4 (fewer accumulator round trips) and than sharing each A
// tile between two groups' products (default model's shapes, one thread).
constexpr int64_t kChunk = 8;

// Tile registers (int16_tiles.h): tmm0 A (L plane), tmm1 A (H plane), tmm2 B, tmm4 C_lo,
// tmm5 C_hi; the stacked form uses tmm0 (2n rows), tmm2 and tmm4 (2n rows).
static_assert(kTileTokens == int16tiles::kTileTokens && kBlockValues == int16tiles::kBlockBytes);

// A thread's workspace in the caller's scratch (q4xv.h: after the activations): the group's
// unpacked B tiles (block b at + 512b), a chunk's C tiles (block k of the chunk: C_lo at
// + 512k int32, C_hi 256 after; stacked: one tile per block, at + 256k), a token tile's
// accumulators (token t: accI at + 32t floats, accM 16 after), and for the stacked form the
// thread's copy of the stacked planes and the group's weight-sum terms. Every part's size is
// a multiple of 64, so all stay aligned.
size_t unpackedBytes(int64_t blocks) { return static_cast<size_t>(blocks) * kUnpackedBytes; }
constexpr size_t kChunkCBytes = kChunk * 2 * kCInts * sizeof(int32_t);
constexpr size_t kAccBytes = kTileTokens * 32 * sizeof(float);

constexpr int kStackedTokens = 8;  // batches of at most this many tokens take the stacked form
size_t stackedBytes(int64_t blocks) { return static_cast<size_t>(blocks) * (2 * kStackedTokens * kBlockValues + 64); }

size_t workspaceBytes(int64_t blocks) { return unpackedBytes(blocks) + kChunkCBytes + kAccBytes + stackedBytes(blocks); }

struct Workspace {
  uint8_t* b;
  int32_t* c;
  float* acc;
  uint8_t* stacked;  // 2n rows × cols bytes: L of the n tokens, then H + 128
  int32_t* corr;     // per block: 16 × 32768·Σq (the rows' weight sums)
  Workspace(uint8_t* at, int64_t blocks)
      : b(at),
        c(reinterpret_cast<int32_t*>(at + unpackedBytes(blocks))),
        acc(reinterpret_cast<float*>(at + unpackedBytes(blocks) + kChunkCBytes)),
        stacked(at + unpackedBytes(blocks) + kChunkCBytes + kAccBytes),
        corr(reinterpret_cast<int32_t*>(stacked + static_cast<size_t>(blocks) * 2 * kStackedTokens * kBlockValues)) {}
};

// n <= 8 tokens' planes stacked for one tile: row t = L of token t, row n + t = H of token t
// + 128 (unsigned), each row cols bytes.
void stackPlanes(const Q4XVActivations& xa, int64_t n, int64_t cols, uint8_t* out) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t t = 0; t < n; ++t) {
    std::memcpy(out + t * cols, xa.lo + t * xa.stride, static_cast<size_t>(cols));
    const int8_t* h = xa.hi + t * xa.stride;
    uint8_t* o = out + (n + t) * cols;
    for (int64_t k = 0; k < cols; k += 32)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + k),
                          _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + k)), flip));
  }
}

// 32768·Σq per row of each block (the term H + 128 adds to 256·Σ q·H).
void weightSums(const uint8_t* b, int64_t blocks, int32_t* corr) {
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t k = 0; k < blocks; ++k, b += kUnpackedBytes) {
    __m512i s = _mm512_setzero_si512();
    for (int q = 0; q < 8; ++q) s = _mm512_dpbusd_epi32(s, _mm512_load_si512(b + 64 * q), ones);
    _mm512_store_si512(corr + 16 * k, _mm512_slli_epi32(s, 15));
  }
}

// The group's blocks as B tiles: chunk c's low nibbles are quad 2c, its high nibbles 2c + 1.
inline void unpackGroup(const uint8_t* group, int64_t blocks, uint8_t* b) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  for (int64_t k = 0; k < blocks; ++k, group += kQ4XVRecordBytes, b += kUnpackedBytes) {
    for (int c = 0; c < 4; ++c) {
      const __m512i v = _mm512_loadu_si512(group + 64 * c);
      _mm512_store_si512(b + 128 * c, _mm512_and_si512(v, low));
      _mm512_store_si512(b + 128 * c + 64, _mm512_and_si512(_mm512_srli_epi16(v, 4), low));
    }
  }
}

using int16tiles::Call;

// The f32 steps of blocks [c0, c1) of group `group` (the chunk's C tiles in ws.c) for tokens
// t .. t + T − 1 of the token tile at t0, T at a time so that 2T accumulator chains hide the
// FMA latency. I = (C_hi << 8) + C_lo, the shift a byte shuffle (port 5, beside the
// conversion and the FMAs; exact, as |C_hi| < 2^23).
template <int T, bool kStacked>
inline void f32Steps(const Q4XVActivations& xa, int64_t t0, int t, int64_t c0, int64_t c1, const uint8_t* group,
                     const Workspace& ws, int64_t hiAt, int64_t cStride) {
  const __m512i shl8 = _mm512_set4_epi32(0x0E0D0C80, 0x0A090880, 0x06050480, 0x02010080);
  float* acc = ws.acc + 32 * t;
  const int32_t* c = ws.c + 16 * t;
  __m512 accI[T], accM[T];
  for (int j = 0; j < T; ++j) {
    accI[j] = _mm512_load_ps(acc + 32 * j);
    accM[j] = _mm512_load_ps(acc + 32 * j + 16);
  }
  const float* dx = xa.d + (t0 + t) * xa.blocks;
  const float* sx = xa.s + (t0 + t) * xa.blocks;
  const uint8_t* rec = group + static_cast<size_t>(c0) * kQ4XVRecordBytes;
  for (int64_t b = c0; b < c1; ++b, c += cStride, rec += kQ4XVRecordBytes) {
    const __m512 dw = _mm512_loadu_ps(q4xvScales(rec));
    const __m512 mw = _mm512_loadu_ps(q4xvOffsets(rec));
    __m512i corr = _mm512_setzero_si512();
    if constexpr (kStacked) corr = _mm512_load_si512(ws.corr + 16 * b);
    for (int j = 0; j < T; ++j) {
      __m512i i = _mm512_add_epi32(_mm512_shuffle_epi8(_mm512_load_si512(c + hiAt + 16 * j), shl8),
                                         _mm512_load_si512(c + 16 * j));
      if constexpr (kStacked) i = _mm512_sub_epi32(i, corr);
      accI[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i), _mm512_mul_ps(dw, _mm512_set1_ps(dx[j * xa.blocks + b])), accI[j]);
      accM[j] = _mm512_fmadd_ps(mw, _mm512_set1_ps(sx[j * xa.blocks + b]), accM[j]);
    }
  }
  for (int j = 0; j < T; ++j) {
    _mm512_store_ps(acc + 32 * j, accI[j]);
    _mm512_store_ps(acc + 32 * j + 16, accM[j]);
  }
}

// Token tile starting at token t0 (tile rows kTileTokens, or n when n < 16), of which tokens
// [t0 + first, t0 + count) are new, against group g (whose B tiles are in ws.b).
template <bool kStacked>
void tokenTile(const Call& k, int64_t g, int64_t t0, int first, int count, const Workspace& ws, int64_t cols) {
  const Q4XVActivations& xa = *k.xa;
  const uint8_t* group = q4xvRecord(k.weights, k.blocks, g, 0);
  const uint8_t* lo = xa.lo + t0 * xa.stride;
  const int8_t* hi = xa.hi + t0 * xa.stride;
  for (int t = first; t < count; ++t) {
    _mm512_store_ps(ws.acc + 32 * t, _mm512_setzero_ps());
    _mm512_store_ps(ws.acc + 32 * t + 16, _mm512_setzero_ps());
  }
  const int64_t hiAt = kStacked ? 16 * count : kCInts;
  const int64_t cStride = kStacked ? kCInts : 2 * kCInts;
  for (int64_t c0 = 0; c0 < k.blocks; c0 += kChunk) {
    const int64_t c1 = std::min(k.blocks, c0 + kChunk);
    for (int64_t b = c0; b < c1; ++b) {
      int32_t* c = ws.c + (b - c0) * cStride;
      if constexpr (kStacked) {
        _tile_loadd(0, ws.stacked + b * kBlockValues, cols);
        _tile_loadd(2, ws.b + b * kUnpackedBytes, 64);
        _tile_zero(4);
        _tile_dpbusd(4, 0, 2);
        _tile_stored(4, c, 64);
      } else {
        _tile_loadd(0, lo + b * kBlockValues, xa.stride);
        _tile_loadd(1, hi + b * kBlockValues, xa.stride);
        _tile_loadd(2, ws.b + b * kUnpackedBytes, 64);
        _tile_zero(4);
        _tile_zero(5);
        _tile_dpbusd(4, 0, 2);  // C_lo = L (unsigned) · the weights (0..15 as signed)
        _tile_dpbsud(5, 1, 2);  // C_hi = H (signed) · the weights (unsigned)
        _tile_stored(4, c, 64);
        _tile_stored(5, c + kCInts, 64);
      }
    }
    int t = first;
    for (; t + 4 <= count; t += 4) f32Steps<4, kStacked>(xa, t0, t, c0, c1, group, ws, hiAt, cStride);
    switch (count - t) {
      case 3: f32Steps<3, kStacked>(xa, t0, t, c0, c1, group, ws, hiAt, cStride); break;
      case 2: f32Steps<2, kStacked>(xa, t0, t, c0, c1, group, ws, hiAt, cStride); break;
      case 1: f32Steps<1, kStacked>(xa, t0, t, c0, c1, group, ws, hiAt, cStride); break;
      default: break;
    }
  }
  const int64_t r0 = g * kGroupRows;
  const __mmask16 rows = static_cast<__mmask16>((1u << std::min<int64_t>(kGroupRows, k.rows - r0)) - 1);
  for (int t = first; t < count; ++t) {
    const __m512 v = _mm512_add_ps(_mm512_load_ps(ws.acc + 32 * t), _mm512_load_ps(ws.acc + 32 * t + 16));
    _mm512_mask_storeu_ps(k.y + (t0 + t) * k.ldy + r0, rows, v);
  }
}

}  // namespace

size_t q4xvAmxScratchBytes(int64_t n, int64_t cols, int threads) {
  return static_cast<size_t>(threads) * workspaceBytes(cols / kBlockValues);
}

void q4xvMatmulAmx(const uint8_t* weights, int64_t rows, int64_t cols, const Q4XVActivations& xa, int64_t n, float* y,
                   int64_t ldy, ThreadPool& pool, KernelScratch& scratch) {
  if (n <= 0 || rows <= 0) return;
  if (!cpuHasAmxInt8()) throw std::invalid_argument("q4xvMatmulAmx: this CPU (or the OS) offers no AMX-INT8");
  if (cols <= 0 || cols % kBlockValues != 0) throw std::invalid_argument("q4xvMatmulAmx: cols must be a positive multiple of 32");
  if (xa.blocks != cols / kBlockValues) throw std::invalid_argument("q4xvMatmulAmx: activations' blocks must be cols / 32");
  if (xa.stride < cols) throw std::invalid_argument("q4xvMatmulAmx: activations' stride must be at least cols");
  if (ldy < rows) throw std::invalid_argument("q4xvMatmulAmx: ldy must be at least rows");
  q4xvAmxCallCount.fetch_add(1, std::memory_order_relaxed);
  const Call k{weights, rows, cols / kBlockValues, &xa, y, ldy};
  const int64_t groups = (rows + kGroupRows - 1) / kGroupRows;
  const bool stacked = n <= kStackedTokens;
  const TileConfig cfg = int16tiles::tileConfig(stacked ? static_cast<int>(2 * n) : int16tiles::tileRows(n));
  uint8_t* work = q4xvAmxWork(scratch, n, cols);
  auto task = [&](int i, int nt) {
    const int64_t g0 = groups * i / nt, g1 = groups * (i + 1) / nt;
    if (g0 >= g1) return;
    const Workspace ws(work + workspaceBytes(k.blocks) * static_cast<size_t>(i), k.blocks);
    if (stacked) stackPlanes(xa, n, cols, ws.stacked);
    const TileScope tiles(cfg);
    for (int64_t g = g0; g < g1; ++g) {
      unpackGroup(q4xvRecord(weights, k.blocks, g, 0), k.blocks, ws.b);
      if (stacked) {
        weightSums(ws.b, k.blocks, ws.corr);
        tokenTile<true>(k, g, 0, 0, static_cast<int>(n), ws, cols);
        continue;
      }
      int16tiles::forTokenTiles(
          n, [&](int64_t t0, int first, int count) { tokenTile<false>(k, g, t0, first, count, ws, cols); });
    }
  };
  pool.run(TaskRef(task));
}

}  // namespace prism::kernels
