// Shared by the group-layout kernels of both families (q4g_avx2.cc, q4g_avx512.cc,
// planes_avx2.cc, planes_avx512.cc): the int8 activation quantizer in the Q4G permutation
// (internal.h, Layout::Q4G16) and the work split / cache blocking. Everything is in an
// anonymous namespace: this header is compiled with two different ISA flag sets, and a merged
// (ODR) copy built with AVX-512 must never end up on the AVX2 path.
#pragma once
#include <algorithm>

#include "kernels/internal.h"
#include "kernels/layout_traits.h"
#include "kernels/planes.h"
#include "kernels/prefetch_lines.h"
#include "kernels/row_steal.h"
#include "kernels/vec_avx2.h"
#include "kernels/work_split.h"

namespace prism::kernels {
namespace {

// Decode streams every weight byte from DRAM once. Left to the hardware prefetcher, one
// core reached ~20 GB/s on the 1B shapes (a plain read loop: ~40): the R rows of a decode
// tile are contiguous, so while a tile works on group g it asks for the matching slice of
// the bytes some distance further on. How far, and into which cache, is the context's
// DecodeTuning (decode_tuning.h), measured per host at load: on the machine the earlier
// passes ran on, one tile ahead, non-temporal, beat two tiles T0 by 5-10% of the step time
// (half a tile +9%, three tiles +3%, no software prefetch +29%; bench/kernels/ab-steps.ts),
// and that is the default; on another host of the same class the same constants read 58% of
// the memory's rate (issue 27). Prefetches past the end of the matrix never fault.
struct TilePrefetch {
  PrefetchHint hint = kDefaultDecodeTuning.hint;
  uint32_t aheadHalves = kDefaultDecodeTuning.aheadHalves;
};

static inline void prefetchAhead(const TilePrefetch& pf, const uint8_t* tile, size_t tileBytes, int64_t g,
                                 int64_t groups) {
  // Addresses as integers: the region may lie past the end of the buffer.
  const size_t per = tileBytes / static_cast<size_t>(groups);
  uintptr_t p = reinterpret_cast<uintptr_t>(tile) + tileBytes * pf.aheadHalves / 2 + per * static_cast<size_t>(g);
  const uintptr_t e = p + (g + 1 == groups ? tileBytes - per * static_cast<size_t>(g) : per);
  prefetchLines(pf.hint, p, e);
}

// n tokens quantized per 32 values (d = max|x|/127, q = round-to-nearest-even(x/d),
// s = d·Σq: scaleBlock, vec_avx2.h), stored in the Q4G permutation.
struct Q4GActivations {
  int8_t* qs = nullptr;  // token t: qs + t * groups * 512
  float* d = nullptr;    // token t: d + t * padded
  float* s = nullptr;
  int32_t* sumA = nullptr;  // Σq of values 0-15 of each block (Q6G's first sub-block)
  int32_t* sumB = nullptr;  // ... and of values 16-31
  int64_t groups = 0, padded = 0;
  TilePrefetch prefetch;  // what tiles with Ahead prefetch (prefetchAhead)
  size_t wideAhead = 0;   // how far ahead the token-wide tiles prefetch (wide_avx512.h), bytes
  const int8_t* q(int64_t t) const { return qs + t * groups * 512; }
  const float* dAt(int64_t t) const { return d + t * padded; }
  const float* sAt(int64_t t) const { return s + t * padded; }
  const int32_t* sumAAt(int64_t t) const { return sumA + t * padded; }
  const int32_t* sumBAt(int64_t t) const { return sumB + t * padded; }
};

inline Q4GActivations placeQ4G(uint8_t* buf, int64_t n, int64_t cols) {
  Q4GActivations a;
  a.groups = q4gGroups(cols);
  a.padded = a.groups * kQ4GBlocks;
  uintptr_t p = (reinterpret_cast<uintptr_t>(buf) + 63) & ~uintptr_t(63);
  a.qs = reinterpret_cast<int8_t*>(p);
  a.d = reinterpret_cast<float*>(p + static_cast<size_t>(n * a.groups) * 512);
  a.s = a.d + n * a.padded;
  a.sumA = reinterpret_cast<int32_t*>(a.s + n * a.padded);
  a.sumB = a.sumA + n * a.padded;
  return a;
}

inline void quantizeQ4G(const float* x, int64_t ldx, int64_t cols, int64_t t0, int64_t t1, const Q4GActivations& a) {
  const int64_t blocks = cols / kQK;
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * ldx;
    int8_t* q = a.qs + t * a.groups * 512;
    float* d = a.d + t * a.padded;
    float* s = a.s + t * a.padded;
    for (int64_t b = 0; b < a.padded; ++b) {
      int8_t* group = q + (b / kQ4GBlocks) * 512;
      const int j = static_cast<int>(b % kQ4GBlocks);
      if (b >= blocks) {  // padding block: zero values, zero scales
        for (int v = 0; v < 8; ++v) std::memset(group + v * 64 + 4 * j, 0, 4);
        d[b] = 0.0f;
        s[b] = 0.0f;
        a.sumA[t * a.padded + b] = 0;
        a.sumB[t * a.padded + b] = 0;
        continue;
      }
      const ScaledBlock blk = scaleBlock(xt + b * kQK, 127.0f);
      const __m256i i0 = blk.q[0], i1 = blk.q[1], i2 = blk.q[2], i3 = blk.q[3];
      const int sumA = hsumI32(_mm256_add_epi32(i0, i1)), sumB = hsumI32(_mm256_add_epi32(i2, i3));
      a.sumA[t * a.padded + b] = sumA;
      a.sumB[t * a.padded + b] = sumB;
      // int32 → int8 in value order: packs interleave 128-bit lanes, the permute restores it.
      __m256i w16 = _mm256_packs_epi32(i0, i1), w16b = _mm256_packs_epi32(i2, i3);
      __m256i w8 = _mm256_packs_epi16(w16, w16b);
      w8 = _mm256_permutevar8x32_epi32(w8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      alignas(32) int32_t words[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(words), w8);
      // Word v (values 4v..4v+3) goes to vector v, lane j.
      for (int v = 0; v < 8; ++v) std::memcpy(group + v * 64 + 4 * j, &words[v], 4);
      d[b] = blk.d;
      s[b] = blk.d * static_cast<float>(sumA + sumB);
    }
  }
}

// Rows per decode tile a kernel can keep in registers (its accumulators and dot products
// per row): kMaxDecodeRows where the kernel declares it, else its own kDecodeRows.
template <class Kernel>
constexpr int maxDecodeRows() {
  if constexpr (requires { Kernel::kMaxDecodeRows; }) return Kernel::kMaxDecodeRows;
  else return Kernel::kDecodeRows;
}

// The decode tile height the context's tuning asks for, within the kernel's registers.
template <class Kernel>
int decodeRowsFor(const DecodeTuning& t) {
  const int want = t.rows == 0 ? Kernel::kDecodeRows : t.rows;
  return want < maxDecodeRows<Kernel>() ? want : maxDecodeRows<Kernel>();
}

// Rows [rb, re) of one token in tiles of R rows, the rest in smaller tiles.
template <class Kernel, int R>
void decodeTiles(const LinearWeight& W, const Q4GActivations& a, int64_t rb, int64_t re, int64_t t, float* y,
                 int64_t ldy) {
  int64_t r = rb;
  for (; r + R <= re; r += R) Kernel::template tile<R, 1>(W, a, r, t, y, ldy);
  if constexpr (R > 1) decodeTiles<Kernel, R / 2>(W, a, r, re, t, y, ldy);
}

template <class Kernel>
void decodeRange(int rows, const LinearWeight& W, const Q4GActivations& a, int64_t rb, int64_t re, int64_t t, float* y,
                 int64_t ldy) {
  constexpr int kMax = maxDecodeRows<Kernel>();
  if constexpr (kMax >= 8) {
    if (rows >= 8) return decodeTiles<Kernel, 8>(W, a, rb, re, t, y, ldy);
  }
  if constexpr (kMax >= 4) {
    if (rows >= 4) return decodeTiles<Kernel, 4>(W, a, rb, re, t, y, ldy);
  }
  if constexpr (kMax >= 2) {
    if (rows >= 2) return decodeTiles<Kernel, 2>(W, a, rb, re, t, y, ldy);
  }
  decodeTiles<Kernel, 1>(W, a, rb, re, t, y, ldy);
}

// Batches of fewer tokens than this take a kernel's token-wide tiles where it has them
// (kWide, wide_avx512.h): up to here every row is read from DRAM once per step and the
// tiles' work per weight byte decides what a step costs. At 16 tokens and more AMX takes the
// batch on the hosts that have it (amx.h, kAmxMinTokens) and the row tiles below keep what
// prefill was measured with elsewhere.
constexpr int64_t kWideBatch = 16;

template <class Kernel>
void wideRange(const LinearWeight& W, const Q4GActivations& a, int64_t rb, int64_t re, int64_t tb, int64_t te,
               float* y, int64_t ldy);

// Runs Kernel::tile<R, T>(W, a, r0, t0, y, ldy) over all rows × tokens on the pool: rows
// split evenly across threads in whole decode tiles when there are enough of them (decode),
// else tokens (work_split.h); within a thread, rows in L2-sized groups × tokens in L1-sized
// chunks. One token takes the
// context's decode tuning (tile height, prefetch distance and hint); batches keep the
// constants they were measured with.
template <class Kernel>
void q4gMatmul(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy, ThreadPool& pool,
               KernelScratch& scratch) {
  Q4GActivations a = placeQ4G(scratch.bytes(q4gActivationBytes(n, W.cols)), n, W.cols);
  if (n <= 4) quantizeQ4G(x, ldx, W.cols, 0, n, a);
  else pool.parallelFor(n, [&](int64_t t0, int64_t t1) { quantizeQ4G(x, ldx, W.cols, t0, t1, a); });
  const DecodeTuning& tuning = scratch.decodeTuning();
  constexpr bool kHasWide = requires { Kernel::kWide; };
  const bool wide = kHasWide && n > 1 && n < kWideBatch;
  if (n == 1 || wide) a.prefetch = TilePrefetch{tuning.hint, tuning.aheadHalves};
  const int RD = n == 1 ? decodeRowsFor<Kernel>(tuning) : Kernel::kDecodeRows;
  constexpr int RP = Kernel::kPrefillRows, TP = Kernel::kPrefillTokens;
  const size_t rowBytes = layoutRowBytes(W);
  // The wide tiles read one row at a time: ahead by the decode tiles' distance in bytes.
  if (wide) a.wideAhead = rowBytes * static_cast<size_t>(decodeRowsFor<Kernel>(tuning)) * tuning.aheadHalves / 2;
  auto range = [&](int64_t rb, int64_t re, int64_t tb, int64_t te) {
    // One token (decode): many rows per tile, streamed once. Two tokens or more take the
    // row groups below even when fewer than TP: streaming all rows once per token would read
    // every weight byte from DRAM that many times.
    if (te - tb == 1 && !wide) return decodeRange<Kernel>(RD, W, a, rb, re, tb, y, ldy);
    if constexpr (kHasWide) {
      if (wide) return wideRange<Kernel>(W, a, rb, re, tb, te, y, ldy);
    }
    const int64_t group = rowGroupFor(rowBytes, RP), chunk = std::max<int64_t>(TP, tokenChunkFor(W.cols, TP));
    for (int64_t g0 = rb; g0 < re; g0 += group) {
      const int64_t g1 = std::min(re, g0 + group);
      for (int64_t c0 = tb; c0 < te; c0 += chunk) {
        const int64_t c1 = std::min(te, c0 + chunk);
        int64_t r = g0;
        for (; r + RP <= g1; r += RP) {
          int64_t t = c0;
          // The first token chunk of a row group reads its rows from DRAM: there the first
          // tile of each row band prefetches the next band as decode tiles do. A batch of a
          // few tokens (aggregate decode) is all first chunk and had waited on those reads:
          // batch_bench, 3B layer shapes, 16 tokens, 1 thread, GFLOP/s: AVX2 Q4_0 131-135 →
          // 168-173, Q8_0 126 → 172-174; AVX-512 Q4_0 441-486 → 475-512, Q4_K 398-406 →
          // 472-478 (512-token prefill, which reads each band once per 100+ tokens, as
          // before). Later chunks find the group in L2.
          if (c0 == tb && t + TP <= c1) {
            Kernel::template tile<RP, TP, true>(W, a, r, t, y, ldy);
            t += TP;
          }
          for (; t + TP <= c1; t += TP) Kernel::template tile<RP, TP>(W, a, r, t, y, ldy);
          for (; t < c1; ++t) Kernel::template tile<RP, 1>(W, a, r, t, y, ldy);
        }
        for (; r < g1; ++r)
          for (int64_t t = c0; t < c1; ++t) Kernel::template tile<1, 1>(W, a, r, t, y, ldy);
      }
    }
  };
  if (n == 1 && !wide && tuning.stealRows) {
    // Decode with split=steal: each thread streams its share, the first to finish takes tiles
    // from the back of the other's (row_steal.h).
    stealingRowSplit(pool, W.rows, RD, [&](int64_t rb, int64_t re) { decodeRange<Kernel>(RD, W, a, rb, re, 0, y, ldy); });
    return;
  }
  splitRowsOrTokens(pool, W.rows, RD, n, nullptr, range);
}

}  // namespace
}  // namespace prism::kernels
