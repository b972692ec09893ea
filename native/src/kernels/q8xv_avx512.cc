// AVX-512 VNNI kernels of Layout::Q8XV (q8xv.h: the layout and the arithmetic they reproduce
// bit for bit): one 16-lane vector holds one output per row of a 16-row group, and a record's
// 8 quads are already in the VNNI order, so nothing is unpacked and no row needs a horizontal
// sum.
//
// Per record (group g, block b) and token t, quad W_j (32-bit lane r: row r's values
// 4j..4j+3, signed):
//   Σ W·L = vpdpbusd(L[4j..4j+3] broadcast as unsigned, W as signed)
//   Σ W·H = vpdpbusd(W ^ 0x80 as unsigned (= W + 128), H[4j..4j+3] broadcast as signed)
//           − hiBias[t][b] (= 128·ΣH over the block, once per token and block)
//   I     = (Σ W·H << 8) + Σ W·L                (exact: the block's int32 dot)
// over 2 + 2 accumulators (any split of an integer sum gives the same I), then one conversion,
// the product d_w·d_x (the record's f16 scales widened once per record) and one FMA in block
// order. Every tile runs that per-lane sequence, so a token's outputs are the same bits in a
// one-token step, in any n-token step and in the scalar statement (q8xvMatmulScalar).
//
// One token (decode): tiles of two groups with the decode prefetch of the context's tuning
// (prefetch_lines.h) over the tile's contiguous records, as q4xv_avx512.cc does: the head
// streams from memory every step. Several tokens: per group, chunks of up to kChunkTokens
// tokens; W ^ 0x80 formed once per record and chunk, each quad dotted with every token of the
// chunk (the group's records stay in L1 across chunks), with the prefetch in the first chunk
// up to kPrefetchTokens tokens. Threads split the groups (pairs for one token), or the tokens
// when there are too few groups. That walk is int16_xv_walk.h's, shared with q4xv_avx512.cc.
#include <algorithm>

#include "kernels/amx/amx.h"
#include "kernels/int16_xv_avx512.h"
#include "kernels/int16_xv_walk.h"
#include "kernels/internal.h"
#include "kernels/isa_kernels.h"
#include "kernels/prefetch_lines.h"
#include "kernels/q8xv.h"

namespace prism::kernels {
namespace {

struct Activations {
  Q4XVActivations planes;
  const int32_t* hiBias = nullptr;  // [t·blocks + b] = 128·ΣH over the block
};

// G consecutive groups from g0 × T consecutive tokens from t0, every block; y rows past
// `rows` (the last group's padding) are not stored.
template <int G, int T>
void q8xvTile(const uint8_t* weights, int64_t rows, int64_t blocks, const Activations& xa, int64_t g0, int64_t t0,
              float* y, int64_t ldy, const DecodeAhead& pf) {
  const uint8_t* tile = weights + static_cast<size_t>(g0 * blocks) * kQ8XVRecordBytes;
  const size_t tileBytes = static_cast<size_t>(G * blocks) * kQ8XVRecordBytes;
  const Q4XVActivations& p = xa.planes;
  __m512 acc[G][T];
  for (int g = 0; g < G; ++g)
    for (int t = 0; t < T; ++t) acc[g][t] = _mm512_setzero_ps();
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t b = 0; b < blocks; ++b) {
    if (pf.hint != PrefetchHint::None) prefetchAhead(pf, tile, tileBytes, b, blocks);
    for (int g = 0; g < G; ++g) {
      const uint8_t* rec = tile + static_cast<size_t>(g * blocks + b) * kQ8XVRecordBytes;
      __m512i w[8], wu[8];
      for (int j = 0; j < 8; ++j) {
        w[j] = _mm512_loadu_si512(rec + kQ8XVQuadBytes * j);
        wu[j] = _mm512_xor_si512(w[j], flip);
      }
      const __m512 dw =
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + kQ8XVScaleOffset)));
      for (int t = 0; t < T; ++t) {
        const uint8_t* lo = p.lo + (t0 + t) * p.stride + b * kQK;
        const int8_t* hi = p.hi + (t0 + t) * p.stride + b * kQK;
        __m512i h0 = _mm512_setzero_si512(), h1 = h0, l0 = h0, l1 = h0;
        for (int j = 0; j < 8; j += 2) {
          h0 = _mm512_dpbusd_epi32(h0, wu[j], broadcast4(hi + 4 * j));
          h1 = _mm512_dpbusd_epi32(h1, wu[j + 1], broadcast4(hi + 4 * j + 4));
          l0 = _mm512_dpbusd_epi32(l0, broadcast4(lo + 4 * j), w[j]);
          l1 = _mm512_dpbusd_epi32(l1, broadcast4(lo + 4 * j + 4), w[j + 1]);
        }
        const int64_t i = (t0 + t) * blocks + b;
        const __m512i dotH = _mm512_sub_epi32(_mm512_add_epi32(h0, h1), _mm512_set1_epi32(xa.hiBias[i]));
        const __m512i dot = _mm512_add_epi32(_mm512_slli_epi32(dotH, 8), _mm512_add_epi32(l0, l1));
        const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(p.d[i]));
        acc[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[g][t]);
      }
    }
  }
  for (int g = 0; g < G; ++g) {
    const int64_t r0 = (g0 + g) * kQ8XVRows;
    const int64_t here = std::min<int64_t>(kQ8XVRows, rows - r0);
    const __mmask16 mask = static_cast<__mmask16>((1u << here) - 1);
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * ldy + r0, mask, acc[g][t]);
  }
}

// The tile family int16_xv_walk.h walks.
struct Tiles {
  using Input = Activations;
  template <int G, int T>
  static void tile(const uint8_t* weights, int64_t rows, int64_t blocks, const Input& xa, int64_t g0, int64_t t0,
                   float* y, int64_t ldy, const DecodeAhead& pf) {
    q8xvTile<G, T>(weights, rows, blocks, xa, g0, t0, y, ldy, pf);
  }
};

// Tokens [t0, t1): the planes, then hiBias = 128·ΣH per block (exact int32).
void quantize(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations16& qa, uint8_t* lo,
              int8_t* hi, int64_t stride, int32_t* hiBias) {
  q4xvQuantizePlanesAvx512(x, ldx, t0, t1, qa, lo, hi, stride);
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t b = 0; b < qa.blocks; ++b) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi + t * stride + b * kQK));
      hiBias[t * qa.blocks + b] = 128 * _mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(h))) +
                                  128 * _mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(h, 1)));
    }
  }
}

#ifdef PRISM_Q4XV_AMX
constexpr bool kHaveAmx = true;
#else
constexpr bool kHaveAmx = false;
#endif

}  // namespace

void IsaKernels<Isa::Avx512>::q8xv(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y,
                                   int64_t ldy, ThreadPool& pool, KernelScratch& scratch) {
  if (n <= 0 || W.rows == 0) return;
  const int64_t cols = W.cols, blocks = cols / kQK, groups = q8xvGroups(W.rows);
  [[maybe_unused]] const bool amx = kHaveAmx && n >= kQ8XVAmxMinTokens && amxEnabled();
  // The activations at q4xvScratchBase (64-byte aligned), then (AMX) that kernel's room:
  // sized once, before anything is written, so bytes() cannot move them.
  size_t need = q8xvActivationBytes(n, cols) + 64;
#ifdef PRISM_Q4XV_AMX
  if (amx) need += q8xvAmxScratchBytes(pool.size());
#endif
  scratch.bytes(need);
  uint8_t* base = q4xvScratchBase(scratch);
  const int64_t stride = q4xvActivationStride(cols);
  uint8_t* lo = base;
  int8_t* hi = reinterpret_cast<int8_t*>(base + static_cast<size_t>(n * stride));
  int32_t* hiBias = reinterpret_cast<int32_t*>(base + q8xvBiasOffset(n, cols));
  QuantizedActivations16 qa;
  placeActivations(base + 2 * static_cast<size_t>(n * stride), n, cols, &qa);
  if (n <= 4) quantize(x, ldx, 0, n, qa, lo, hi, stride, hiBias);
  else pool.parallelFor(n, [&](int64_t t0, int64_t t1) { quantize(x, ldx, t0, t1, qa, lo, hi, stride, hiBias); });
  const Activations xa{Q4XVActivations{lo, hi, stride, qa.d, qa.s, blocks}, hiBias};
  const uint8_t* weights = weightData(W);
#ifdef PRISM_Q4XV_AMX
  if (amx) {
    q8xvMatmulAmx(weights, W.rows, cols, xa.planes, n, y, ldy, pool, q8xvAmxWork(scratch, n, cols));
    return;
  }
#endif
  int16_xv::run<Tiles>(weights, W.rows, blocks, groups, xa, n, y, ldy, pool, scratch);
}

}  // namespace prism::kernels
