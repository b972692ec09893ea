// The decode tiles' software prefetch of the weight bytes ahead of them (q4g.h, int16_avx512.cc).
#pragma once
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

}  // namespace
}  // namespace prism::kernels
