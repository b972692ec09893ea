// The decode tiles' software prefetch of the weight bytes ahead of them (q4g.h,
// q4xv_avx512.cc, q8xv_avx512.cc).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/decode_tuning.h"

namespace prism::kernels {
namespace {

// Prefetches every 64-byte line from address p up to e with `hint`. Addresses are integers:
// the region may lie past the end of the buffer (a prefetch never faults). One loop per hint
// (the hint is an immediate), each line by a volatile asm statement, not _mm_prefetch: GCC 12
// deletes a loop whose only effect is the prefetch builtin (-ffinite-loops, then dead-code
// elimination), which silently left every decode tile without a prefetch from e52633a on; a
// volatile asm statement is never removed.
inline void prefetchLines(PrefetchHint hint, uintptr_t p, uintptr_t e) {
  switch (hint) {
    case PrefetchHint::None:
      return;
    case PrefetchHint::Nta:
      for (; p < e; p += 64) asm volatile("prefetchnta (%0)" : : "r"(p));
      return;
    case PrefetchHint::T0:
      for (; p < e; p += 64) asm volatile("prefetcht0 (%0)" : : "r"(p));
      return;
    case PrefetchHint::T1:
      for (; p < e; p += 64) asm volatile("prefetcht1 (%0)" : : "r"(p));
      return;
  }
}

// The int16 decode tiles (q4xv_avx512.cc's and q8xv_avx512.cc's 16-row groups) stream their weights from memory once: while a tile works on step g of its `steps`,
// it prefetches the matching slice of the bytes the context's decode tuning says
// (decode_tuning.h: hint and distance, in half tiles; here a tile of at least
// kMinAheadBytes), as the group-layout tiles do (q4g.h's prefetchAhead). A tile's bytes are
// contiguous in all these layouts.
struct DecodeAhead {
  PrefetchHint hint = PrefetchHint::None;
  uint32_t halves = 2;
  size_t rowBytes = 0;
};

// The distance counts tiles of at least kMinAheadBytes: the default model's 8-row tiles are
// ~3.4 KiB (576 columns), and one of them ahead was too short (ab-steps, 2 threads, against
// T1 one tile: two tiles 0.900 and 0.944, four 0.917; the int8 1B tiles are ~9 KiB).
constexpr size_t kMinAheadBytes = 8192;

inline void prefetchAhead(const DecodeAhead& pf, const uint8_t* tile, size_t tileBytes, int64_t g, int64_t steps) {
  const size_t per = tileBytes / static_cast<size_t>(steps);
  const size_t unit = tileBytes > kMinAheadBytes ? tileBytes : kMinAheadBytes;
  uintptr_t p = reinterpret_cast<uintptr_t>(tile) + unit * pf.halves / 2 + per * static_cast<size_t>(g);
  const uintptr_t e = p + (g + 1 == steps ? tileBytes - per * static_cast<size_t>(g) : per);
  prefetchLines(pf.hint, p, e);
}

}  // namespace
}  // namespace prism::kernels
