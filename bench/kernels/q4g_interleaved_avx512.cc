// The tile-interleaved Q4_0 experiment of q4g_interleaved.h: the repack and the AVX-512
// tile. Compiled with the AVX-512 flags, like native/src/kernels/q4g_avx512.cc.
#include "q4g_interleaved.h"

#include <cstring>

#include "kernels/q4g.h"

namespace prism {
namespace {

using namespace kernels;

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

constexpr int kTileRows = 8;
constexpr size_t kNibbleBytes = 256;                  // one row's nibbles of one group
constexpr size_t kScaleBytes = kQ4GBlocks * 2;        // one row's f16 scales of one group
constexpr size_t kRecordBytes = kTileRows * (kNibbleBytes + kScaleBytes);  // one group of a tile

// Q4GAvx512<Layout::Q4G0>::tile (q4g_avx512.cc) instruction for instruction, so every row sums
// its groups in the same order; only where row r's group g lies differs. Any R and r0: a
// tile that spans two 8-row tiles (prefill row groups) addresses each row on its own.
struct Q4G0TileInterleavedAvx512 {
  static constexpr int kDecodeRows = kTileRows;
  static constexpr int kPrefillRows = 4;
  static constexpr int kPrefillTokens = 2;

  template <int R, int T, bool Ahead = (T == 1 && R > 1)>
  static void tile(const LinearWeight& W, const Q4GActivations& a, int64_t r0, int64_t t0, float* y, int64_t ldy) {
    const size_t tileBytes = q4gRowBytes(W.cols, Layout::Q4G0) * kTileRows;
    const int64_t groups = a.groups;
    const uint8_t* base = weightData(W);
    const uint8_t* nib[R];  // row r's nibbles in its tile's record 0
    const uint8_t* sc[R];   // ... and its scales
    for (int r = 0; r < R; ++r) {
      const int64_t row = r0 + r, within = row % kTileRows;
      const uint8_t* tile = base + tileBytes * static_cast<size_t>(row / kTileRows);
      nib[r] = tile + kNibbleBytes * within;
      sc[r] = tile + kTileRows * kNibbleBytes + kScaleBytes * within;
    }
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    const __m512i low = _mm512_set1_epi8(0x0F);
    for (int64_t g = 0; g < groups; ++g) {
      // The group-g slice of the tile `distance` tiles on is exactly that tile's record g.
      if constexpr (Ahead) prefetchAhead(a.prefetch, base + tileBytes * static_cast<size_t>(r0 / kTileRows), tileBytes, g, groups);
      const size_t rec = static_cast<size_t>(g) * kRecordBytes;
      __m512i dot[R][T];
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) dot[r][t] = _mm512_setzero_si512();
      for (int c = 0; c < 4; ++c) {
        __m512i xl[T], xh[T];
        for (int t = 0; t < T; ++t) {
          const int8_t* xq = a.q(t0 + t) + g * 512 + c * 128;
          xl[t] = _mm512_loadu_si512(xq);
          xh[t] = _mm512_loadu_si512(xq + 64);
        }
        for (int r = 0; r < R; ++r) {
          const __m512i v = _mm512_loadu_si512(nib[r] + rec + c * 64);
          const __m512i wl = _mm512_and_si512(v, low), wh = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
          for (int t = 0; t < T; ++t) {
            dot[r][t] = _mm512_dpbusd_epi32(dot[r][t], wl, xl[t]);
            dot[r][t] = _mm512_dpbusd_epi32(dot[r][t], wh, xh[t]);
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc[r] + rec)));
        const __m512 mw = _mm512_mul_ps(dw, _mm512_set1_ps(-8.0f));
        for (int t = 0; t < T; ++t) {
          const __m512 dx = _mm512_loadu_ps(a.dAt(t0 + t) + g * kQ4GBlocks);
          const __m512 sx = _mm512_loadu_ps(a.sAt(t0 + t) + g * kQ4GBlocks);
          acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r][t]), _mm512_mul_ps(dw, dx), acc[r][t]);
          acc[r][t] = _mm512_fmadd_ps(mw, sx, acc[r][t]);
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
};

}  // namespace

bool tileInterleavable(const LinearWeight& W) {
  return W.layout == Layout::Q4G0 && W.rows % kTileRows == 0 && !W.owned.empty();
}

LinearWeight tileInterleaved(const LinearWeight& W) {
  LinearWeight out;
  out.type = W.type;
  out.rows = W.rows;
  out.cols = W.cols;
  out.layout = W.layout;
  out.bytes = W.bytes;
  out.precision = W.precision;
  out.owned.resize(W.owned.size());
  out.data = out.owned.data();
  const size_t rowBytes = q4gRowBytes(W.cols, Layout::Q4G0);
  const int64_t groups = q4gGroups(W.cols);
  const size_t dOff = static_cast<size_t>(groups) * kNibbleBytes;  // where a row's scales start
  const uint8_t* src = weightData(W);
  for (int64_t t = 0; t < W.rows / kTileRows; ++t) {
    uint8_t* tile = out.owned.data() + rowBytes * kTileRows * static_cast<size_t>(t);
    for (int64_t g = 0; g < groups; ++g) {
      uint8_t* rec = tile + static_cast<size_t>(g) * kRecordBytes;
      for (int w = 0; w < kTileRows; ++w) {
        const uint8_t* row = src + rowBytes * static_cast<size_t>(t * kTileRows + w);
        std::memcpy(rec + kNibbleBytes * w, row + kNibbleBytes * g, kNibbleBytes);
        std::memcpy(rec + kTileRows * kNibbleBytes + kScaleBytes * w, row + dOff + kScaleBytes * g, kScaleBytes);
      }
    }
  }
  return out;
}

void tileInterleavedMatmul(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                           ThreadPool& pool, KernelScratch& scratch) {
  q4gMatmul<Q4G0TileInterleavedAvx512>(W, x, n, ldx, y, ldy, pool, scratch);
}

}  // namespace prism
