// AVX-512 VNNI kernels of Layout::Q4XV (q4xv.h: the layout and the arithmetic they reproduce
// bit for bit): one 16-lane vector holds one output per row of a 16-row group, so a block's
// exact integer dot needs no horizontal sum and no per-row shuffle.
//
// Per record (group g, block b) and token t: the 4 chunks of nibbles unpack with one mask or
// one shift + mask each into 8 "quads" W_j (32-bit lane r: row r's values 4j..4j+3), then
//   Σ W·H   = vpdpbusd(W as unsigned, H[4j..4j+3] broadcast as signed)
//   Σ W·L   = vpdpbusd(L[4j..4j+3] broadcast as unsigned, W as signed)
//   I       = (Σ W·H << 8) + Σ W·L                (exact: it is the block's int32 dot)
// over 2 + 2 accumulators (any split of an integer sum gives the same I), then one
// conversion, the product d_w·d_x, and the two FMAs of q4xv.h's order. Every tile here runs
// that same per-lane sequence, so a token's outputs are the same bits in a one-token step, in
// any n-token step and in the scalar statement (q4xvMatmulScalar), which the AMX kernel
// matches too (native/kernels.test.ts).
//
// One token (decode): tiles of two groups (8 independent integer chains, one FMA chain pair
// per group), the rest in a one-group tile, with the decode prefetch of the context's tuning
// (prefetch_lines.h) over the tile's contiguous records: the default model's weights stream
// from memory every step. The tuning's row height does not apply (a group is 16 rows).
// Several tokens: a group's 8 quads are unpacked once per block and dotted with every token
// of a chunk of up to kChunkTokens (the group's records stay in L1 across the chunks), with
// the same prefetch up to kPrefetchTokens tokens (a verify step streams the weights too).
// Threads split the groups (whole two-group tiles for one token), or the tokens when there
// are too few groups. That walk is int16_xv_walk.h's, shared with q8xv_avx512.cc.
#include <algorithm>

#include "kernels/amx/amx.h"
#include "kernels/int16_xv_avx512.h"
#include "kernels/int16_xv_walk.h"
#include "kernels/internal.h"
#include "kernels/isa_kernels.h"
#include "kernels/prefetch_lines.h"
#include "kernels/q4xv.h"

namespace prism::kernels {
namespace {

// G consecutive groups from g0 × T consecutive tokens from t0, every block; y rows past
// `rows` (the last group's padding) are not stored.
template <int G, int T>
void q4xvTile(const uint8_t* weights, int64_t rows, int64_t blocks, const Q4XVActivations& xa, int64_t g0, int64_t t0,
              float* y, int64_t ldy, const DecodeAhead& pf) {
  const uint8_t* tile = weights + static_cast<size_t>(g0 * blocks) * kQ4XVRecordBytes;
  const size_t tileBytes = static_cast<size_t>(G * blocks) * kQ4XVRecordBytes;
  __m512 accI[G][T], accM[G][T];
  for (int g = 0; g < G; ++g)
    for (int t = 0; t < T; ++t) accI[g][t] = accM[g][t] = _mm512_setzero_ps();
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < blocks; ++b) {
    if (pf.hint != PrefetchHint::None) prefetchAhead(pf, tile, tileBytes, b, blocks);
    for (int g = 0; g < G; ++g) {
      const uint8_t* rec = tile + static_cast<size_t>(g * blocks + b) * kQ4XVRecordBytes;
      __m512i w[8];
      for (int c = 0; c < 4; ++c) {
        const __m512i v = _mm512_loadu_si512(rec + 64 * c);
        w[2 * c] = _mm512_and_si512(v, nibble);
        w[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
      }
      const __m512 dw = _mm512_loadu_ps(q4xvScales(rec)), mw = _mm512_loadu_ps(q4xvOffsets(rec));
      for (int t = 0; t < T; ++t) {
        const uint8_t* lo = xa.lo + (t0 + t) * xa.stride + b * kQK;
        const int8_t* hi = xa.hi + (t0 + t) * xa.stride + b * kQK;
        __m512i h0 = _mm512_setzero_si512(), h1 = h0, l0 = h0, l1 = h0;
        for (int j = 0; j < 8; j += 2) {
          h0 = _mm512_dpbusd_epi32(h0, w[j], broadcast4(hi + 4 * j));
          h1 = _mm512_dpbusd_epi32(h1, w[j + 1], broadcast4(hi + 4 * j + 4));
          l0 = _mm512_dpbusd_epi32(l0, broadcast4(lo + 4 * j), w[j]);
          l1 = _mm512_dpbusd_epi32(l1, broadcast4(lo + 4 * j + 4), w[j + 1]);
        }
        const __m512i dot =
            _mm512_add_epi32(_mm512_slli_epi32(_mm512_add_epi32(h0, h1), 8), _mm512_add_epi32(l0, l1));
        const int64_t i = (t0 + t) * xa.blocks + b;
        const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(xa.d[i]));
        accI[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, accI[g][t]);
        accM[g][t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(xa.s[i]), accM[g][t]);
      }
    }
  }
  for (int g = 0; g < G; ++g) {
    const int64_t r0 = (g0 + g) * kQ4XVRows;
    const int64_t here = std::min<int64_t>(kQ4XVRows, rows - r0);
    const __mmask16 mask = static_cast<__mmask16>((1u << here) - 1);
    for (int t = 0; t < T; ++t)
      _mm512_mask_storeu_ps(y + (t0 + t) * ldy + r0, mask, _mm512_add_ps(accI[g][t], accM[g][t]));
  }
}

// The tile family int16_xv_walk.h walks.
struct Tiles {
  using Input = Q4XVActivations;
  template <int G, int T>
  static void tile(const uint8_t* weights, int64_t rows, int64_t blocks, const Input& xa, int64_t g0, int64_t t0,
                   float* y, int64_t ldy, const DecodeAhead& pf) {
    q4xvTile<G, T>(weights, rows, blocks, xa, g0, t0, y, ldy, pf);
  }
};

#ifdef PRISM_Q4XV_AMX
constexpr bool kHaveAmx = true;
#else
constexpr bool kHaveAmx = false;
#endif

}  // namespace

void q4xvQuantizePlanesAvx512(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations16& qa,
                    uint8_t* lo, int8_t* hi, int64_t stride) {
  quantizeInt16Avx512(x, ldx, t0, t1, qa);
  for (int64_t t = t0; t < t1; ++t) {
    const int16_t* q = qa.qs + t * qa.cols;
    for (int64_t k = 0; k < qa.cols; k += 32) {
      const __m512i v = _mm512_loadu_si512(q + k);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo + t * stride + k), _mm512_cvtepi16_epi8(v));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi + t * stride + k),
                          _mm512_cvtepi16_epi8(_mm512_srai_epi16(v, 8)));
    }
  }
}

void IsaKernels<Isa::Avx512>::q4xv(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y,
                                   int64_t ldy, ThreadPool& pool, KernelScratch& scratch) {
  if (n <= 0 || W.rows == 0) return;
  const int64_t cols = W.cols, blocks = q4xvBlocks(cols), groups = q4xvGroups(W.rows);
  [[maybe_unused]] const bool amx = kHaveAmx && n >= kQ4XVAmxMinTokens && amxEnabled();
  // The activations at q4xvScratchBase, then (AMX) that kernel's room: sized once, before
  // anything is written, so bytes() cannot move them.
  size_t need = q4xvActivationBytes(n, cols) + 64;
#ifdef PRISM_Q4XV_AMX
  if (amx) need += q4xvAmxScratchBytes(n, cols, pool.size());
#endif
  scratch.bytes(need);
  uint8_t* base = q4xvScratchBase(scratch);
  const int64_t stride = q4xvActivationStride(cols);
  uint8_t* lo = base;
  int8_t* hi = reinterpret_cast<int8_t*>(base + static_cast<size_t>(n * stride));
  QuantizedActivations16 qa;
  placeActivations(base + 2 * static_cast<size_t>(n * stride), n, cols, &qa);
  if (n <= 4) q4xvQuantizePlanesAvx512(x, ldx, 0, n, qa, lo, hi, stride);
  else pool.parallelFor(n, [&](int64_t t0, int64_t t1) { q4xvQuantizePlanesAvx512(x, ldx, t0, t1, qa, lo, hi, stride); });
  const Q4XVActivations xa{lo, hi, stride, qa.d, qa.s, blocks};
  const uint8_t* weights = weightData(W);
#ifdef PRISM_Q4XV_AMX
  if (amx) {
    q4xvMatmulAmx(weights, W.rows, cols, xa, n, y, ldy, pool, scratch);
    return;
  }
#endif
  int16_xv::run<Tiles>(weights, W.rows, blocks, groups, xa, n, y, ldy, pool, scratch);
}

}  // namespace prism::kernels
