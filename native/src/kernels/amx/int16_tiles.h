// What the AMX-INT8 drivers of the exact-integer int16 layouts (q4xv_amx.cc for Layout::Q4XV,
// q8xv_amx.cc for Layout::Q8XV) share: a call's operands, the tile shapes and the walk of a
// step's tokens in token tiles. Include only from files built with the tile flags.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/amx/tile_scope.h"
#include "kernels/q4xv.h"

namespace prism::kernels::int16tiles {

constexpr int kTileTokens = 16;  // tokens per token tile: A's and C's rows
constexpr int kBlockBytes = 32;  // one block of one activation plane: A's bytes per row

// One driver call's operands, handed to each group's and token tile's work: the layout's
// records, the output rows and blocks per row, the two activation planes and y.
struct Call {
  const uint8_t* weights;
  int64_t rows, blocks;
  const Q4XVActivations* xa;
  float* y;
  int64_t ldy;
};

// tmm0 A (the L plane) and tmm1 A (the H plane): `tokens` rows × one block's 32 bytes;
// tmm2 B: 8 rows × 64 bytes (a block's 8 quads of a 16-row group); tmm4 C_lo and tmm5 C_hi:
// `tokens` rows × 16 int32.
inline TileConfig tileConfig(int tokens) {
  TileConfig cfg;
  for (int a : {0, 1}) {
    cfg.colsb[a] = kBlockBytes;
    cfg.rows[a] = static_cast<uint8_t>(tokens);
  }
  cfg.colsb[2] = 64;
  cfg.rows[2] = 8;
  for (int c : {4, 5}) {
    cfg.colsb[c] = 64;
    cfg.rows[c] = static_cast<uint8_t>(tokens);
  }
  return cfg;
}

// The A and C rows of every token tile of an n-token step (the configuration's).
inline int tileRows(int64_t n) { return static_cast<int>(std::min<int64_t>(n, kTileTokens)); }

// The token tiles of an n-token step: tiles of kTileTokens; a step of fewer takes one tile of
// exactly n rows, and one above 16 that is not a multiple ends with a full tile overlapping the
// one before, so one configuration (tileRows(n)) serves the call. tile(t0, first, count):
// the tile starts at token t0, and tokens [t0 + first, t0 + count) are new (the ones before
// `first`, already done, are computed again by the tiles but not stored).
template <class Tile>
inline void forTokenTiles(int64_t n, Tile&& tile) {
  int64_t t0 = 0;
  for (; t0 + kTileTokens <= n; t0 += kTileTokens) tile(t0, 0, kTileTokens);
  if (t0 < n) {
    const int64_t start = n < kTileTokens ? 0 : n - kTileTokens;
    tile(start, static_cast<int>(t0 - start), tileRows(n));
  }
}

}  // namespace prism::kernels::int16tiles
