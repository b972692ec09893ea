// The float-weight kernels of both families: F32 / F16 / BF16 rows read in place against f32
// activations, in tiles of R rows × T tokens of f32 FMAs that convert the weights on the fly.
// The family is the template parameter V, its vector traits (vec_avx2.h: Avx2Vec, 8 lanes;
// vec_avx512.h: Avx512Vec, 16), with its row converter Conv (load(row, k): V::kLanes weights
// from column k as floats; one(row, k): one) and its token tile, which the register count
// sets; matmul_avx2.cc and matmul_avx512.cc include this header and compile it with their
// own flags. Every (row, token) sums its columns in the same order whatever the tile.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/internal.h"
#include "kernels/work_split.h"

namespace prism::kernels {
namespace {

constexpr int kFloatRowTile = 4;
constexpr int64_t kFloatTokenChunk = 64;  // tokens per pass (f32 activations: 4× the int8 bytes)

template <class V, class Conv, int R, int T>
void floatTile(const LinearWeight& W, size_t rowBytes, const float* x, int64_t ldx, int64_t r0, int64_t t0, float* y,
               int64_t ldy) {
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = weightData(W) + rowBytes * static_cast<size_t>(r0 + r);
  typename V::F acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = V::zero();
  const int64_t cols = W.cols, vecCols = cols / V::kLanes * V::kLanes;
  for (int64_t k = 0; k < vecCols; k += V::kLanes) {
    typename V::F xv[T];
    for (int t = 0; t < T; ++t) xv[t] = V::load(x + (t0 + t) * ldx + k);
    for (int r = 0; r < R; ++r) {
      const typename V::F w = Conv::load(rows[r], k);
      for (int t = 0; t < T; ++t) acc[r][t] = V::fmadd(w, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float s = V::sum(acc[r][t]);
      for (int64_t k = vecCols; k < cols; ++k) s += Conv::one(rows[r], k) * x[(t0 + t) * ldx + k];
      y[(t0 + t) * ldy + r0 + r] = s;
    }
  }
}

// Rows [rb, re) × tokens [tb, te) on the calling thread: token chunks, then rows in tiles of
// kFloatRowTile (the last rows one at a time), tokens in tiles of T (then one at a time).
template <class V, class Conv, int T>
void floatRange(const LinearWeight& W, const float* x, int64_t ldx, int64_t rb, int64_t re, int64_t tb, int64_t te,
                float* y, int64_t ldy) {
  const size_t rowBytes = typeRowBytes(W.type, W.cols);
  for (int64_t c0 = tb; c0 < te; c0 += kFloatTokenChunk) {
    const int64_t c1 = std::min(te, c0 + kFloatTokenChunk);
    for (int64_t r = rb; r < re;) {
      const int rt = re - r >= kFloatRowTile ? kFloatRowTile : 1;
      int64_t t = c0;
      if (rt == kFloatRowTile) {
        for (; t + T <= c1; t += T) floatTile<V, Conv, kFloatRowTile, T>(W, rowBytes, x, ldx, r, t, y, ldy);
        for (; t < c1; ++t) floatTile<V, Conv, kFloatRowTile, 1>(W, rowBytes, x, ldx, r, t, y, ldy);
      } else {
        for (; t + T <= c1; t += T) floatTile<V, Conv, 1, T>(W, rowBytes, x, ldx, r, t, y, ldy);
        for (; t < c1; ++t) floatTile<V, Conv, 1, 1>(W, rowBytes, x, ldx, r, t, y, ldy);
      }
      r += rt;
    }
  }
}

// The whole matmul on the pool (work_split.h).
template <class V, class Conv, int T>
void floatMatmul(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                 ThreadPool& pool) {
  splitRowsOrTokens(pool, W.rows, kFloatRowTile, n, nullptr, [&](int64_t rb, int64_t re, int64_t tb, int64_t te) {
    floatRange<V, Conv, T>(W, x, ldx, rb, re, tb, te, y, ldy);
  });
}

}  // namespace
}  // namespace prism::kernels
