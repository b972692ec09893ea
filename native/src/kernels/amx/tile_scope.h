// The tile configuration and its per-task scope, shared by the AMX drivers (the *_amx.cc
// files beside it). Include only from files built with the tile flags.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace prism::kernels {

// The 64-byte operand of ldtilecfg / sttilecfg (palette 1): per tile register, its bytes per
// row and its rows.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Loads a driver's configuration on the calling thread for one task, and puts back whatever
// was there before. Another library in the process may use the tiles on the same thread and
// keep a per-thread "configured" flag (llama.cpp's AMX backend does, and in the benchmarks
// its compute and Prism's can share a thread of libuv's pool): releasing the tiles, or
// leaving ours loaded, made its next tile instruction fault (#UD) or run on our shapes.
// A configuration load costs far less than one panel of work.
class TileScope {
 public:
  explicit TileScope(const TileConfig& cfg) {
    asm volatile("sttilecfg %0" : "=m"(saved_));
    // Not _tile_loadconfig: GCC 12's version names only the first 8 bytes of the struct as
    // the instruction's memory operand, and the stores of the rest were deleted as dead.
    asm volatile("ldtilecfg %0" : : "m"(cfg));
  }
  ~TileScope() {
    if (saved_.palette != 0) asm volatile("ldtilecfg %0" : : "m"(saved_));
    else _tile_release();
  }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;

 private:
  TileConfig saved_;
};

}  // namespace prism::kernels
