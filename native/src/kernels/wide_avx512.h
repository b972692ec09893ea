// Token-wide tiles for small batches on AVX-512 (q4g.h's wideRange): one weight row against
// up to 8 tokens. Per 16-block group the row's 8 weight vectors are unpacked once
// into registers and its scales converted once; every token then takes 8 dpbusd against them
// and its own scale step. The row tiles of q4g.h (4 rows × 2 tokens) unpack and convert
// again for every second token, so at 3B a verify step of 1 + k tokens was compute-bound
// from k = 2 on (a 4-token step cost 2.1 one-token steps). A batch this small reads its rows
// from DRAM once, so the tiles prefetch ahead as decode tiles do (the context's tuning).
//
// The numbers are the one-token kernels': a token's per-group integer dot products are exact
// whatever their order, and its f32 steps (the kernel's Scales::apply per group, in group
// order, then the same horizontal sum) are the decode tile's, operation for operation.
//
// A kernel opts in with kWide and provides: WideRow (its row handle), wideRow(W, r),
// wideRowBytes(W), wideRowStart(row), unpack(row, g, w[8]) (vector v pairs with activation
// bytes g·512 + 64·v), wideScales(row, a, g) (an object whose apply(dot, a, t, g, acc) is its
// one-token tile's scale step) and kSplit (2: vectors 0-3 and 4-7 keep separate sums).
#pragma once
#include "kernels/q4g.h"

namespace prism::kernels {
namespace {

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Tokens per wide tile: T accumulators, T (two sums per block: 2T) dot products, the 8 weight
// vectors and the scales stay within the 32 registers.
template <class Kernel>
constexpr int wideTokens() {
  return Kernel::kSplit == 2 ? 5 : 8;
}

// The slice of group g of the row `aheadBytes` past `row` (q4gMatmul sets the distance from
// the decode tuning: its prefetch distance measured in rows of a decode tile).
inline void prefetchRowAhead(const Q4GActivations& a, const uint8_t* row, size_t rowBytes, int64_t g, int64_t groups) {
  const size_t per = rowBytes / static_cast<size_t>(groups);
  const uintptr_t p = reinterpret_cast<uintptr_t>(row) + a.wideAhead + per * static_cast<size_t>(g);
  prefetchLines(a.prefetch.hint, p, p + (g + 1 == groups ? rowBytes - per * static_cast<size_t>(g) : per));
}

template <class Kernel, int T>
void wideTile(const LinearWeight& W, const Q4GActivations& a, int64_t r, int64_t t0, float* y, int64_t ldy) {
  constexpr int S = Kernel::kSplit;
  const typename Kernel::WideRow row = Kernel::wideRow(W, r);
  const size_t rowBytes = Kernel::wideRowBytes(W);
  const int64_t groups = a.groups;
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    prefetchRowAhead(a, Kernel::wideRowStart(row), rowBytes, g, groups);
    __m512i w[8];
    Kernel::unpack(row, g, w);
    // Vector by vector, every token: T independent dpbusd chains in flight, not one chain of
    // 8 per token (its latency, not the units, would set the pace).
    __m512i dot[S][T];
    for (int s = 0; s < S; ++s)
      for (int t = 0; t < T; ++t) dot[s][t] = _mm512_setzero_si512();
    for (int v = 0; v < 8; ++v) {
      const int s = S == 2 && v >= 4 ? 1 : 0;
      for (int t = 0; t < T; ++t)
        dot[s][t] = _mm512_dpbusd_epi32(dot[s][t], w[v], _mm512_loadu_si512(a.q(t0 + t) + g * 512 + v * 64));
    }
    const auto sc = Kernel::wideScales(row, a, g);
    for (int t = 0; t < T; ++t) {
      __m512i d[S];
      for (int s = 0; s < S; ++s) d[s] = dot[s][t];
      sc.apply(d, a, t0 + t, g, acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r] = _mm512_reduce_add_ps(acc[t]);
}

// The tile of `tokens` (1..wideTokens()) tokens.
template <class Kernel, int T = 1>
void wideChunk(int tokens, const LinearWeight& W, const Q4GActivations& a, int64_t r, int64_t t0, float* y,
               int64_t ldy) {
  if constexpr (T < wideTokens<Kernel>()) {
    if (tokens > T) return wideChunk<Kernel, T + 1>(tokens, W, a, r, t0, y, ldy);
  }
  wideTile<Kernel, T>(W, a, r, t0, y, ldy);
}

// Rows [rb, re) × tokens [tb, te), te − tb < kWideBatch: row by row, the tokens in as few
// balanced chunks of at most wideTokens() as cover them (the second chunk finds the row in L1).
template <class Kernel>
void wideRange(const LinearWeight& W, const Q4GActivations& a, int64_t rb, int64_t re, int64_t tb, int64_t te,
               float* y, int64_t ldy) {
  constexpr int kMax = wideTokens<Kernel>();
  const int64_t n = te - tb, chunks = (n + kMax - 1) / kMax;
  for (int64_t r = rb; r < re; ++r)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t c0 = tb + n * c / chunks, c1 = tb + n * (c + 1) / chunks;
      wideChunk<Kernel>(static_cast<int>(c1 - c0), W, a, r, c0, y, ldy);
    }
}

}  // namespace
}  // namespace prism::kernels
