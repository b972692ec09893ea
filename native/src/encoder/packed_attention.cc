#include "encoder/packed_attention.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "simd.h"

namespace prism {
namespace {

// Queries per block: each key row loaded once serves this many queries (4 × 2 accumulators,
// two key vectors and a broadcast fit AVX2's 16 registers).
constexpr int64_t kQueries = 4;
// Keys per score tile and head-dimension floats per output tile: two 8-float vectors.
constexpr int64_t kTile = 16;

constexpr int64_t roundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// kt[d * ldk + j] = K[j * ld + d] for j < n, zero up to ldk: the head's keys transposed, so
// one load holds a dimension of 8 consecutive keys and the score tile needs no horizontal sums.
void transposeKeys(const float* K, int64_t ld, int64_t n, int64_t hd, float* kt, int64_t ldk) {
  for (int64_t j = 0; j < n; j++)
    for (int64_t d = 0; d < hd; d++) kt[d * ldk + j] = K[j * ld + d];
  for (int64_t d = 0; d < hd; d++) std::fill(kt + d * ldk + n, kt + (d + 1) * ldk, 0.0f);
}

// sc[q * ldk + j] = scale · (query q · key j) for NQ queries and every key j < ldk.
template <int NQ>
void scoreTile(const float* const* q, const float* kt, int64_t ldk, int64_t hd, float scale, float* sc) {
  const __m256 vs = _mm256_set1_ps(scale);
  for (int64_t j0 = 0; j0 < ldk; j0 += kTile) {
    __m256 acc[NQ][2];
    for (int r = 0; r < NQ; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t d = 0; d < hd; d++) {
      const __m256 k0 = _mm256_loadu_ps(kt + d * ldk + j0), k1 = _mm256_loadu_ps(kt + d * ldk + j0 + 8);
      for (int r = 0; r < NQ; r++) {
        const __m256 b = _mm256_broadcast_ss(q[r] + d);
        acc[r][0] = _mm256_fmadd_ps(b, k0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(b, k1, acc[r][1]);
      }
    }
    for (int r = 0; r < NQ; r++) {
      _mm256_storeu_ps(sc + r * ldk + j0, _mm256_mul_ps(acc[r][0], vs));
      _mm256_storeu_ps(sc + r * ldk + j0 + 8, _mm256_mul_ps(acc[r][1], vs));
    }
  }
}

// Softmax numerators of row[0..n) in place (max subtracted); returns 1 / their sum.
float softmaxRow(float* row, int64_t n) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; j++) mx = std::max(mx, row[j]);
  return 1.0f / simd::expShiftedInPlace(row, n, mx);
}

// o[r][d0 .. d0 + 8W) = inv[r] · Σ_j p[r][j] · V[j][d0 ..] for NQ queries: one pass over the
// values per tile, each value vector loaded once for every query of the block.
template <int NQ, int W>
void outputTile(const float* p, int64_t ldk, const float* V, int64_t ld, int64_t n, int64_t d0, const float* inv,
                float* const* o) {
  __m256 acc[NQ][W];
  for (int r = 0; r < NQ; r++)
    for (int w = 0; w < W; w++) acc[r][w] = _mm256_setzero_ps();
  for (int64_t j = 0; j < n; j++) {
    __m256 v[W];
    for (int w = 0; w < W; w++) v[w] = _mm256_loadu_ps(V + j * ld + d0 + 8 * w);
    for (int r = 0; r < NQ; r++) {
      const __m256 b = _mm256_broadcast_ss(p + r * ldk + j);
      for (int w = 0; w < W; w++) acc[r][w] = _mm256_fmadd_ps(b, v[w], acc[r][w]);
    }
  }
  for (int r = 0; r < NQ; r++)
    for (int w = 0; w < W; w++) _mm256_storeu_ps(o[r] + d0 + 8 * w, _mm256_mul_ps(acc[r][w], _mm256_set1_ps(inv[r])));
}

// One block of NQ consecutive queries of one (input, head): scores, softmax, weighted values.
template <int NQ>
void queryBlock(const float* const* q, float* const* o, const float* kt, int64_t ldk, const float* V, int64_t ld,
                int64_t n, int64_t hd, float scale, float* sc) {
  scoreTile<NQ>(q, kt, ldk, hd, scale, sc);
  float inv[NQ];
  for (int r = 0; r < NQ; r++) inv[r] = softmaxRow(sc + r * ldk, n);
  int64_t d0 = 0;
  for (; d0 + kTile <= hd; d0 += kTile) outputTile<NQ, 2>(sc, ldk, V, ld, n, d0, inv, o);
  if (d0 < hd) outputTile<NQ, 1>(sc, ldk, V, ld, n, d0, inv, o);  // headDim % 16 == 8
}

}  // namespace

size_t packedAttentionScratch(int64_t longest, int64_t headDim) {
  const int64_t ldk = roundUp(std::max<int64_t>(longest, 1), kTile);
  return static_cast<size_t>((headDim + kQueries) * ldk);
}

void packedAttention(ThreadPool& pool, const float* qkv, float* out, const int32_t* seqOffsets, int32_t S,
                     int64_t heads, int64_t headDim, std::vector<std::vector<float>>& scratch) {
  const int64_t hd = headDim, H = heads, D = H * hd, ld = 3 * D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  int64_t longest = 0, work = 0;
  for (int32_t s = 0; s < S; s++) {
    const int64_t n = seqOffsets[s + 1] - seqOffsets[s];
    longest = std::max(longest, n);
    work += n * n * hd * H;
  }
  const size_t need = packedAttentionScratch(longest, hd);
  const int64_t items = static_cast<int64_t>(S) * H;
  // Items are taken from a shared counter rather than split in equal counts: inputs of 16
  // and 256 tokens differ 256-fold in cost, so equal counts leave one thread waiting.
  std::atomic<int64_t> next{0};
  auto worker = [&](int thread, int) {
    std::vector<float>& buf = scratch[thread];
    if (buf.size() < need) buf.resize(need);
    for (int64_t it = next.fetch_add(1, std::memory_order_relaxed); it < items;
         it = next.fetch_add(1, std::memory_order_relaxed)) {
      const int64_t s = it / H, h = it % H;
      const int64_t t0 = seqOffsets[s], n = seqOffsets[s + 1] - t0;
      if (n == 0) continue;
      const int64_t ldk = roundUp(n, kTile);
      float* kt = buf.data();
      float* sc = kt + hd * ldk;
      transposeKeys(&qkv[t0 * ld + D + h * hd], ld, n, hd, kt, ldk);
      const float* V = &qkv[t0 * ld + 2 * D + h * hd];
      for (int64_t q0 = 0; q0 < n; q0 += kQueries) {
        const int64_t nq = std::min(kQueries, n - q0);
        const float* q[kQueries];
        float* o[kQueries];
        for (int64_t r = 0; r < nq; r++) {
          q[r] = &qkv[(t0 + q0 + r) * ld + h * hd];
          o[r] = &out[(t0 + q0 + r) * D + h * hd];
        }
        switch (nq) {
          case 4: queryBlock<4>(q, o, kt, ldk, V, ld, n, hd, scale, sc); break;
          case 3: queryBlock<3>(q, o, kt, ldk, V, ld, n, hd, scale, sc); break;
          case 2: queryBlock<2>(q, o, kt, ldk, V, ld, n, hd, scale, sc); break;
          default: queryBlock<1>(q, o, kt, ldk, V, ld, n, hd, scale, sc); break;
        }
      }
    }
  };
  if (pool.size() == 1 || items == 1 || work < 16384) {
    worker(0, 1);
    return;
  }
  pool.run(TaskRef(worker));
}

}  // namespace prism
