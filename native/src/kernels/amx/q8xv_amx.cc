// Layout::Q8XV on the AMX-INT8 tiles (q8xvMatmulAmx, declared in kernels/q8xv.h): n tokens of
// int16 activations against Q8_0 weights, bit-identical to the layout's scalar arithmetic and
// so to its AVX-512 one-token kernel, for every n. Built with -mamx-tile -mamx-int8 and the
// AVX-512 flags; only ever called after amxEnabled().
//
// Every kernel of the layout forms the exact integer dot I of a whole block, then
// acc = fma(float(I), dw·dx, acc) in increasing block order per row and token. With
// q = 256·H + L, I = 256·Σ q_w·H + Σ q_w·L: TDPBUSD(A = L of up to 16 tokens, unsigned; B =
// the record's 8 quads, signed) and TDPBSSD(A = H, signed; the same B). A record's quads are
// already a B tile (K/4 = 8 rows of 16 rows × 4 bytes, stride 64), so B loads straight from
// the weights, nothing unpacked. Row t of C_lo / C_hi is one 16-lane int32 vector of token
// t's dots with the group's 16 rows: the lanes of the vectorized scalar steps.
//
// The same walk as the Q4XV tiles (q4xv_amx.cc), with their tile shapes and token tiles
// (int16_tiles.h): threads split the row groups; per group and token tile, the blocks in
// chunks whose C tiles are stored, then each token walks the chunk's blocks in order, four at
// a time in registers.
#include <immintrin.h>

#include <algorithm>
#include <stdexcept>

#include "kernels/amx/amx.h"
#include "kernels/amx/int16_tiles.h"
#include "kernels/amx/tile_scope.h"
#include "kernels/q8xv.h"

namespace prism::kernels {
namespace {

// GCC 12's AVX-512 intrinsics trip these on their own placeholder values.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

constexpr int kTileTokens = int16tiles::kTileTokens;
constexpr size_t kCInts = 16 * 16;   // one C tile (16 tokens × 16 int32)
constexpr int64_t kChunk = 8;        // blocks per chunk of stored C tiles
constexpr size_t kChunkCBytes = kChunk * 2 * kCInts * sizeof(int32_t);
constexpr size_t kAccBytes = kTileTokens * 16 * sizeof(float);
constexpr size_t kWorkspaceBytes = kChunkCBytes + kAccBytes;

using int16tiles::Call;

// The f32 steps of blocks [c0, c1) (the chunk's C tiles at c) for tokens t .. t + T − 1 of
// the token tile at t0.
template <int T>
inline void f32Steps(const Q4XVActivations& xa, int64_t t0, int t, int64_t c0, int64_t c1, const uint8_t* group,
                     const int32_t* c, float* acc) {
  __m512 a[T];
  for (int j = 0; j < T; ++j) a[j] = _mm512_load_ps(acc + 16 * (t + j));
  const float* dx = xa.d + (t0 + t) * xa.blocks;
  const uint8_t* rec = group + static_cast<size_t>(c0) * kQ8XVRecordBytes;
  c += 16 * t;
  for (int64_t b = c0; b < c1; ++b, c += 2 * kCInts, rec += kQ8XVRecordBytes) {
    const __m512 dw =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + kQ8XVScaleOffset)));
    for (int j = 0; j < T; ++j) {
      const __m512i i = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(c + kCInts + 16 * j), 8),
                                         _mm512_load_si512(c + 16 * j));
      a[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i), _mm512_mul_ps(dw, _mm512_set1_ps(dx[j * xa.blocks + b])), a[j]);
    }
  }
  for (int j = 0; j < T; ++j) _mm512_store_ps(acc + 16 * (t + j), a[j]);
}

// Token tile at t0 (its rows: the configuration's), of which tokens [t0 + first, t0 + count)
// are new, against group g.
void tokenTile(const Call& k, int64_t g, int64_t t0, int first, int count, int32_t* cbuf, float* acc) {
  const Q4XVActivations& xa = *k.xa;
  const uint8_t* group = q8xvRecord(k.weights, k.blocks, g, 0);
  const uint8_t* lo = xa.lo + t0 * xa.stride;
  const int8_t* hi = xa.hi + t0 * xa.stride;
  for (int t = first; t < count; ++t) _mm512_store_ps(acc + 16 * t, _mm512_setzero_ps());
  for (int64_t c0 = 0; c0 < k.blocks; c0 += kChunk) {
    const int64_t c1 = std::min(k.blocks, c0 + kChunk);
    for (int64_t b = c0; b < c1; ++b) {
      int32_t* c = cbuf + (b - c0) * 2 * kCInts;
      _tile_loadd(0, lo + b * kQK, xa.stride);
      _tile_loadd(1, hi + b * kQK, xa.stride);
      _tile_loadd(2, group + static_cast<size_t>(b) * kQ8XVRecordBytes, 64);
      _tile_zero(4);
      _tile_zero(5);
      _tile_dpbusd(4, 0, 2);  // C_lo = L (unsigned) · q_w (signed)
      _tile_dpbssd(5, 1, 2);  // C_hi = H (signed) · q_w (signed)
      _tile_stored(4, c, 64);
      _tile_stored(5, c + kCInts, 64);
    }
    int t = first;
    for (; t + 4 <= count; t += 4) f32Steps<4>(xa, t0, t, c0, c1, group, cbuf, acc);
    switch (count - t) {
      case 3: f32Steps<3>(xa, t0, t, c0, c1, group, cbuf, acc); break;
      case 2: f32Steps<2>(xa, t0, t, c0, c1, group, cbuf, acc); break;
      case 1: f32Steps<1>(xa, t0, t, c0, c1, group, cbuf, acc); break;
      default: break;
    }
  }
  const int64_t r0 = g * kQ8XVRows;
  const __mmask16 rows = static_cast<__mmask16>((1u << std::min<int64_t>(kQ8XVRows, k.rows - r0)) - 1);
  for (int t = first; t < count; ++t) _mm512_mask_storeu_ps(k.y + (t0 + t) * k.ldy + r0, rows, _mm512_load_ps(acc + 16 * t));
}

}  // namespace

size_t q8xvAmxScratchBytes(int threads) { return static_cast<size_t>(threads) * kWorkspaceBytes; }

void q8xvMatmulAmx(const uint8_t* weights, int64_t rows, int64_t cols, const Q4XVActivations& xa, int64_t n, float* y,
                   int64_t ldy, ThreadPool& pool, uint8_t* work) {
  if (n <= 0 || rows <= 0) return;
  if (!cpuHasAmxInt8()) throw std::invalid_argument("q8xvMatmulAmx: this CPU (or the OS) offers no AMX-INT8");
  if (cols <= 0 || cols % kQK != 0) throw std::invalid_argument("q8xvMatmulAmx: cols must be a positive multiple of 32");
  if (xa.blocks != cols / kQK) throw std::invalid_argument("q8xvMatmulAmx: activations' blocks must be cols / 32");
  if (xa.stride < cols) throw std::invalid_argument("q8xvMatmulAmx: activations' stride must be at least cols");
  const Call k{weights, rows, cols / kQK, &xa, y, ldy};
  const int64_t groups = q8xvGroups(rows);
  const TileConfig cfg = int16tiles::tileConfig(int16tiles::tileRows(n));
  auto task = [&](int i, int nt) {
    const int64_t g0 = groups * i / nt, g1 = groups * (i + 1) / nt;
    if (g0 >= g1) return;
    uint8_t* ws = work + kWorkspaceBytes * static_cast<size_t>(i);
    int32_t* cbuf = reinterpret_cast<int32_t*>(ws);
    float* acc = reinterpret_cast<float*>(ws + kChunkCBytes);
    const TileScope tiles(cfg);
    for (int64_t g = g0; g < g1; ++g)
      int16tiles::forTokenTiles(n, [&](int64_t t0, int first, int count) { tokenTile(k, g, t0, first, count, cbuf, acc); });
  };
  pool.run(TaskRef(task));
}

}  // namespace prism::kernels
