// The float-weight GEMM of passes over many tokens (kernels.h's matmulManyTokens: the BERT-
// family encoders, the vision towers): F32 / F16 / BF16 weight rows against f32 activations,
// for both families. float_tiles.h's dot-product tiles reduce each output's vector lanes at
// the end of its row, and re-read their activations once per row tile; this GEMM is laid out
// the way BLAS kernels are: the activations packed once per call into panels of NR tokens
// ([k][NR], zero past the last token), then MR weight rows × NR tokens of accumulators, each
// step broadcasting one weight of each row against NV activation vectors. On Zen 3 at
// MiniLM's shapes it ran 1.2-1.4× float_tiles.h's rate (docs/benchmarks.md, issue 42).
//
// Every output sums its columns in order, k = 0 .. cols-1, in one FMA chain from zero —
// whatever n, the tile it falls in, the panel chunking or the threads — so a token's result
// does not depend on what it is batched with, and the AVX2 and AVX-512 families give the same
// bits (FMA rounds once, the order is the same). V is the family's vector traits (vec_avx2.h,
// vec_avx512.h), Conv its row converter (load(row, k): V::kLanes weights of one row from
// column k as floats; one(row, k): one), MR the weight rows of a tile, which the register
// count sets. In an anonymous namespace, as every kernel header (internal.h).
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/internal.h"
#include "thread_pool.h"

namespace prism::kernels {
namespace {

// The packed activations' L2 share per thread: panels are taken in chunks of about this many
// bytes, so the rows of a tile meet a chunk of tokens that stays in the cache.
constexpr size_t kGemmPanelChunkBytes = 192 * 1024;

template <class V, class Conv, int MR, int NV>
struct FloatGemm {
  static constexpr int NR = NV * V::kLanes;  // tokens per panel: NV vectors

  // Scratch bytes for n tokens of `cols` on `threads` threads: the panels, then each thread's
  // MR converted rows (F16 / BF16 weights; F32 rows are read in place).
  static size_t scratchBytes(int64_t n, int64_t cols, int threads) {
    const int64_t panels = (n + NR - 1) / NR;
    return sizeof(float) * static_cast<size_t>(panels * NR * cols + int64_t{threads} * MR * cols) + 64;
  }

  // Panel p, [k][NR]: token p·NR + j's column k at k·NR + j, zero for tokens at or past n.
  static void pack(const float* x, int64_t n, int64_t ldx, int64_t cols, int64_t p, float* panel) {
    for (int j = 0; j < NR; ++j) {
      const int64_t t = p * NR + j;
      if (t >= n) {
        for (int64_t k = 0; k < cols; ++k) panel[k * NR + j] = 0.0f;
        continue;
      }
      const float* src = x + t * ldx;
      for (int64_t k = 0; k < cols; ++k) panel[k * NR + j] = src[k];
    }
  }

  // M rows (pointers to `cols` floats each) × one panel; writes tokens [t0, t0 + valid) of
  // columns [r0, r0 + M) of y.
  template <int M>
  static void tile(const float* const* rows, const float* panel, int64_t cols, float* y, int64_t ldy, int64_t r0,
                   int64_t t0, int valid) {
    typename V::F acc[M][NV];
#pragma GCC unroll 16
    for (int r = 0; r < M; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = V::zero();
    for (int64_t k = 0; k < cols; ++k) {
      typename V::F xv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) xv[v] = V::load(panel + k * NR + v * V::kLanes);
#pragma GCC unroll 16
      for (int r = 0; r < M; ++r) {
        const typename V::F w = V::set1(rows[r][k]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = V::fmadd(w, xv[v], acc[r][v]);
      }
    }
    alignas(64) float out[M][NR];
#pragma GCC unroll 16
    for (int r = 0; r < M; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) V::store(out[r] + v * V::kLanes, acc[r][v]);
    for (int j = 0; j < valid; ++j) {
      float* yt = y + (t0 + j) * ldy + r0;
      for (int r = 0; r < M; ++r) yt[r] = out[r][j];
    }
  }

  // tile<m> for a run-time m in [1, M].
  template <int M>
  static void tileOf(int m, const float* const* rows, const float* panel, int64_t cols, float* y, int64_t ldy,
                     int64_t r0, int64_t t0, int valid) {
    if (m == M) tile<M>(rows, panel, cols, y, ldy, r0, t0, valid);
    else if constexpr (M > 1) tileOf<M - 1>(m, rows, panel, cols, y, ldy, r0, t0, valid);
  }

  // Row block rb (rows rb·MR ..) as float pointers: in place for F32, else converted into
  // `converted` (MR × cols).
  static int rowPointers(const LinearWeight& W, size_t rowBytes, int64_t rb, float* converted, const float** rows) {
    const int64_t r0 = rb * MR;
    const int m = static_cast<int>(std::min<int64_t>(MR, W.rows - r0));
    const int64_t cols = W.cols, vecCols = cols / V::kLanes * V::kLanes;
    for (int r = 0; r < m; ++r) {
      const uint8_t* src = weightData(W) + rowBytes * static_cast<size_t>(r0 + r);
      if constexpr (Conv::kInPlace) {
        rows[r] = reinterpret_cast<const float*>(src);
      } else {
        float* dst = converted + r * cols;
        for (int64_t k = 0; k < vecCols; k += V::kLanes) V::store(dst + k, Conv::load(src, k));
        for (int64_t k = vecCols; k < cols; ++k) dst[k] = Conv::one(src, k);
        rows[r] = dst;
      }
    }
    return m;
  }

  static void run(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                  ThreadPool& pool, KernelScratch& scratch) {
    const int64_t cols = W.cols, panels = (n + NR - 1) / NR, rowBlocks = (W.rows + MR - 1) / MR;
    const int threads = pool.size();
    uint8_t* base = scratch.bytes(scratchBytes(n, cols, threads));
    float* packed = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(base) + 63) & ~uintptr_t(63));
    float* convertedAll = packed + panels * NR * cols;
    pool.parallelFor(panels, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) pack(x, n, ldx, cols, p, packed + p * NR * cols);
    });
    const size_t rowBytes = typeRowBytes(W.type, cols);
    const int64_t chunk =
        std::max<int64_t>(1, static_cast<int64_t>(kGemmPanelChunkBytes / (sizeof(float) * NR * static_cast<size_t>(cols))));
    // Row blocks split among the threads when there are enough to go round; else the panels.
    const bool splitRows = rowBlocks >= 2 * threads || panels < threads;
    auto task = [&](int i, int nt) {
      const int64_t rb0 = splitRows ? rowBlocks * i / nt : 0, rb1 = splitRows ? rowBlocks * (i + 1) / nt : rowBlocks;
      const int64_t pb0 = splitRows ? 0 : panels * i / nt, pb1 = splitRows ? panels : panels * (i + 1) / nt;
      float* converted = convertedAll + int64_t{i} * MR * cols;
      const float* rows[MR];
      for (int64_t c0 = pb0; c0 < pb1; c0 += chunk) {
        const int64_t c1 = std::min(pb1, c0 + chunk);
        for (int64_t rb = rb0; rb < rb1; ++rb) {
          const int m = rowPointers(W, rowBytes, rb, converted, rows);
          for (int64_t p = c0; p < c1; ++p) {
            const int valid = static_cast<int>(std::min<int64_t>(NR, n - p * NR));
            tileOf<MR>(m, rows, packed + p * NR * cols, cols, y, ldy, rb * MR, p * NR, valid);
          }
        }
      }
    };
    pool.run(TaskRef(task));
  }
};

}  // namespace
}  // namespace prism::kernels
