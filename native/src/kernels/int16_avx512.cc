// AVX-512 kernels for int16 activations (ActivationPrecision::Int16: models below hidden
// 1024, e.g. the default SmolLM2-135M, keep 100% top-1 against the float reference with
// them where int8 loses ~2%) for the weights such a model uses: 4-bit rows repacked as
// kLayoutQ4X (Q4_0 / Q4_1 / Q4_K) and Q8_0 read in place (the tied output head). Other
// weight types with int16 activations stay with the AVX2 kernels (matmul_avx2.cc).
//
// Same activation quantization as AVX2 (per 32: d = max|x| / 32767, q = round(x / d), the
// block sums s, sa, sb), bit for bit, and the same integer products; the dot products use
// VNNI's vpdpwssd (int16 × int16 pairs summed into int32 lanes), 32 products per
// instruction against AVX2's 16 per madd. What differs from AVX2 is only the order in which
// the per-block f32 terms are added (more lanes, even and odd blocks in different lanes), so
// results agree with the AVX2 int16 kernels to f32 rounding, not bit for bit
// (native/kernels.test.ts bounds the difference).
//
// kLayoutQ4X: a 32-byte group holds block b's values in its low nibbles and block b+1's in
// its high ones (internal.h). Its 32 bytes are broadcast to both 256-bit halves and read as
// 16-bit words; per-element variable shifts then pick one nibble of each word such that
// every 32-bit lane holds two values of one block, even lanes block b and odd lanes b+1
// (G); a second pick takes the other two nibbles of each word, rotated so its lanes follow
// the same even/odd rule (G'). The activations of the pair are stored permuted to match
// (quantizeQ4XActivations), so two vpdpwssd give 16 lanes of 4 products each, every lane
// within one block: one int32→f32 conversion and one FMA per pair of blocks, with the
// scale vector [d_w·d_x of b, of b+1, …] two 64-bit broadcasts of the rows' and tokens'
// adjacent f32 scales. No shuffle port work in the inner loop.
//
// Q8_0: each 34-byte block widens (vpmovsxbw) to 32 int16 in the activations' natural
// order; one vpdpwssd per block and token, one conversion and FMA with the block's scale.
//
// Decode (one token) walks 8-row tiles that prefetch the rows ahead with the context's
// decode tuning (prefetchAhead, kernels/prefetch_lines.h), as the group-layout decode tiles do: the
// default model's weights stream from L3 or memory each step, and without it the step
// waited on them (ab-steps, default model, 2 threads: 0.70 of the AVX2 step time with the
// prefetch, 0.93 without).
//
// Int32 lanes: a Q4X lane sums 4 products ≤ 15 · 32767 (< 2^19), a Q8_0 lane 2 products ≤
// 128 · 32767 (< 2^23): their f32 conversion is exact.
#include <algorithm>
#include <array>
#include <utility>
#include <cstring>

#include "kernels/internal.h"
#include "kernels/prefetch_lines.h"
#include "kernels/q4xv.h"

namespace prism::kernels {
namespace {

// GCC 12.2's AVX-512 intrinsics trip -W(maybe-)uninitialized inside its own headers (GCC bug
// 105593; see matmul_avx512.cc).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

inline float hsum512(__m512 v) {
  __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int hsumI32(__m512i v) { return _mm512_reduce_add_epi32(v); }

// [p[0], p[1]] repeated 8 times: the scales of a block pair, in the even/odd lane order.
inline __m512 pairScales(const float* p) {
  double two;
  std::memcpy(&two, p, sizeof two);
  return _mm512_castpd_ps(_mm512_set1_pd(two));
}

// The AVX2 int16 quantizer's arithmetic (matmul_avx2.cc), 16 lanes at a time: the same
// amax, the same d and 1/d, round-to-nearest-even of the same products, exact integer sums;
// so q, d, s, sa and sb are bit-identical. Values in natural order.
void quantizeBlocks16(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations16& qa) {
  for (int64_t t = t0; t < t1; ++t) {
    const float* xt = x + t * ldx;
    int16_t* q = qa.qs + t * qa.cols;
    for (int64_t b = 0; b < qa.blocks; ++b) {
      const float* p = xt + b * kQK;
      __m512 v0 = _mm512_loadu_ps(p), v1 = _mm512_loadu_ps(p + 16);
      const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
      const float d = amax / 32767.0f;
      const __m512 id = _mm512_set1_ps(amax != 0 ? 32767.0f / amax : 0.0f);
      const __m512i i0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v0, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m512i i1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v1, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kQK), _mm512_cvtsepi32_epi16(i0));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kQK + 16), _mm512_cvtsepi32_epi16(i1));
      const int sumA = hsumI32(i0), sum = sumA + hsumI32(i1);
      const int64_t i = t * qa.blocks + b;
      qa.d[i] = d;
      qa.s[i] = d * static_cast<float>(sum);
      qa.sa[i] = d * static_cast<float>(sumA);
      qa.sb[i] = d * static_cast<float>(sum - sumA);
    }
  }
}

// Lane k of the Q4X picks: element i (16-bit) lies in lane i / 2; with m = i % 16 the source
// word, word m holds group bytes 2m (bits 0-7) and 2m+1 (bits 8-15). Elements 0-15 read byte
// 2m, 16-31 byte 2m+1; lanes of even (m / 2) take block b's nibble (low), odd ones b+1's.
struct Q4XPicks {
  __m512i g, h;  // shift counts of G and of the other pick (before its rotation)
  __m512i xg, xh;  // vpermt2w indices giving the activations that match G and G'
};

Q4XPicks makeQ4XPicks() {
  alignas(64) int16_t g[32], h[32], xg[32], xh0[32], xh[32];
  for (int i = 0; i < 32; ++i) {
    const int m = i % 16, high = i / 16;  // high: byte 2m+1 of word m
    const bool first = ((m / 2) % 2) == 0;  // this lane belongs to block b in G
    const int value = 2 * m + high;         // value index within its block
    g[i] = static_cast<int16_t>(8 * high + (first ? 0 : 4));
    h[i] = static_cast<int16_t>(8 * high + (first ? 4 : 0));
    // vpermt2w: index < 32 picks block b's value, 32 + v block b+1's.
    xg[i] = static_cast<int16_t>(first ? value : 32 + value);
    xh0[i] = static_cast<int16_t>(first ? 32 + value : value);
  }
  // G' is the other pick with the two 32-bit lanes of every 64 bits swapped (element i ← i^2).
  for (int i = 0; i < 32; ++i) xh[i] = xh0[i ^ 2];
  Q4XPicks p;
  p.g = _mm512_load_si512(g);
  p.h = _mm512_load_si512(h);
  p.xg = _mm512_load_si512(xg);
  p.xh = _mm512_load_si512(xh);
  return p;
}

const Q4XPicks& q4xPicks() {
  static const Q4XPicks p = makeQ4XPicks();
  return p;
}

// The same activations as quantizeBlocks16, each whole pair of blocks permuted into the two
// vectors the Q4X picks G and G' multiply (the odd last block stays in natural order).
void quantizeQ4XActivations(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations16& qa) {
  quantizeBlocks16(x, ldx, t0, t1, qa);
  const Q4XPicks& pk = q4xPicks();
  for (int64_t t = t0; t < t1; ++t) {
    int16_t* q = qa.qs + t * qa.cols;
    for (int64_t b = 0; b + 2 <= qa.blocks; b += 2) {
      const __m512i vb = _mm512_loadu_si512(q + b * kQK), vc = _mm512_loadu_si512(q + b * kQK + kQK);
      _mm512_storeu_si512(q + b * kQK, _mm512_permutex2var_epi16(vb, pk.xg, vc));
      _mm512_storeu_si512(q + b * kQK + kQK, _mm512_permutex2var_epi16(vb, pk.xh, vc));
    }
  }
}

// hsum(acc) + Σ_b m[b] · s[b]: the per-block offsets (Q4_1's min, Q4_0's −8d, Q4_K's
// −dmin·m) against the activation block sums, 16 blocks per FMA.
inline float offsetDotInto(__m512 acc, const float* m, const float* s, int64_t blocks) {
  int64_t b = 0;
  for (; b + 16 <= blocks; b += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(m + b), _mm512_loadu_ps(s + b), acc);
  float tail = 0;
  for (; b < blocks; ++b) tail += m[b] * s[b];
  return hsum512(acc) + tail;
}

// A Q4X tile's ending, one copy for the one-token tiles and the token-wide ones so that
// their outputs stay bit-identical: the last block of an odd block count (the last group
// holds it in its low nibbles) and the stores, each sum plus its rows' offset terms.
template <int R, int T>
inline void q4xFinish(const Q4XRow (&rows)[R], const int16_t* const (&xq)[T], const float* const (&xd)[T],
                      const __m512 (&acc)[R][T], const QuantizedActivations16& qa, int64_t b, int64_t r0, int64_t t0,
                      float* y, int64_t ldy) {
  const int64_t blocks = qa.blocks;
  const __m512i nibble = _mm512_set1_epi16(0x0F);
  float tail[R][T] = {};
  if (b < blocks) {
    for (int r = 0; r < R; ++r) {
      const __m512i w = _mm512_and_si512(
          _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r].nibbles + b * 16))), nibble);
      for (int t = 0; t < T; ++t) {
        const int dot = hsumI32(_mm512_dpwssd_epi32(_mm512_setzero_si512(), w, _mm512_loadu_si512(xq[t] + b * kQK)));
        tail[r][t] = static_cast<float>(dot) * (rows[r].d[b] * xd[t][b]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      y[(t0 + t) * ldy + r0 + r] =
          offsetDotInto(acc[r][t], rows[r].m, qa.s + (t0 + t) * blocks, blocks) + tail[r][t];
}

template <int R, int T>
void q4xTile16(const uint8_t* weights, int64_t cols, const QuantizedActivations16& qa, int64_t r0, int64_t t0,
               float* y, int64_t ldy, const DecodeAhead& pf) {
  Q4XRow rows[R];
  for (int r = 0; r < R; ++r) rows[r] = q4xRow(weights, cols, r0 + r);
  const int16_t* xq[T];
  const float* xd[T];
  for (int t = 0; t < T; ++t) {
    xq[t] = qa.qs + (t0 + t) * qa.cols;
    xd[t] = qa.d + (t0 + t) * qa.blocks;
  }
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  const Q4XPicks& pk = q4xPicks();
  const __m512i shiftG = pk.g, shiftH = pk.h, nibble = _mm512_set1_epi16(0x0F);
  const int64_t blocks = qa.blocks;
  int64_t b = 0;
  const int64_t pairs = blocks / 2;
  for (; b + 2 <= blocks; b += 2) {
    if (pf.hint != PrefetchHint::None) prefetchAhead(pf, rows[0].nibbles, R * pf.rowBytes, b / 2, pairs);
    __m512i xg[T], xh[T];
    __m512 dx[T];
    for (int t = 0; t < T; ++t) {
      xg[t] = _mm512_loadu_si512(xq[t] + b * kQK);
      xh[t] = _mm512_loadu_si512(xq[t] + b * kQK + kQK);
      dx[t] = pairScales(xd[t] + b);
    }
    for (int r = 0; r < R; ++r) {
      const __m512i z =
          _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r].nibbles + b * 16)));
      const __m512i g = _mm512_and_si512(_mm512_srlv_epi16(z, shiftG), nibble);
      const __m512i h = _mm512_shuffle_epi32(_mm512_and_si512(_mm512_srlv_epi16(z, shiftH), nibble), _MM_PERM_CDAB);
      const __m512 dw = pairScales(rows[r].d + b);
      for (int t = 0; t < T; ++t) {
        const __m512i p = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(_mm512_setzero_si512(), g, xg[t]), h, xh[t]);
        acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw, dx[t]), acc[r][t]);
      }
    }
  }
  q4xFinish<R, T>(rows, xq, xd, acc, qa, b, r0, t0, y, ldy);
}

template <int R, int T>
void q8Tile16(const uint8_t* weights, size_t rowBytes, const QuantizedActivations16& qa, int64_t r0, int64_t t0,
              float* y, int64_t ldy, const DecodeAhead& pf) {
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = weights + rowBytes * static_cast<size_t>(r0 + r);
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  const int64_t blocks = qa.blocks;
  for (int64_t b = 0; b < blocks; ++b) {
    if (pf.hint != PrefetchHint::None) prefetchAhead(pf, rows[0], R * rowBytes, b, blocks);
    __m512i x[T];
    float dx[T];
    for (int t = 0; t < T; ++t) {
      x[t] = _mm512_loadu_si512(qa.qs + (t0 + t) * qa.cols + b * kQK);
      dx[t] = qa.d[(t0 + t) * blocks + b];
    }
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = rows[r] + b * kQ8_0Bytes;
      const __m512i w = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)));
      const float dw = f16ToF32(loadU16(blk));
      for (int t = 0; t < T; ++t) {
        const __m512i p = _mm512_dpwssd_epi32(_mm512_setzero_si512(), w, x[t]);
        acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_set1_ps(dw * dx[t]), acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = hsum512(acc[r][t]);
}

// Several tokens (speculation's verify steps, short batches, prefill): R rows × T tokens (see
// walkTiles for the shapes). Every
// (row, token) keeps the one-token tile's arithmetic exactly: the same two int16 dots per
// pair of blocks (an exact int32 sum: vpmaddwd then vpdpwssd gives what two vpdpwssd from
// zero give, no lane can overflow), the same int32→f32 conversion, the same f32 product of
// the row's and the token's pair scales, the same FMA into a row-token accumulator in block
// order, the same offset dot and horizontal sum. So each token's outputs equal the one-token
// kernel's bit for bit, whatever the step's shape (native/kernels.test.ts checks it).
//
// What changes is where the work goes: a row's nibbles are unpacked once per pair for all T
// tokens (not once per 2), and the scale products are not a vector mul per row, token and pair
// in the inner loop: they are made 8 pairs at a time (a row's scales and a token's are both
// contiguous, 16 lanes = 8 pairs) into a small table, from which the FMA takes them with a
// 64-bit broadcast load (load ports, not the vector ALUs). Per row, token and pair that leaves
// 2 dots, a conversion and an FMA on the vector ALUs.
constexpr int kScalePairs = 8;  // pairs per scale table (16 f32 lanes)

inline __mmask16 lowLanes(int64_t lanes) { return lanes >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << lanes) - 1); }

inline __m512 broadcastPair(const float* p) {
  double two;
  std::memcpy(&two, p, sizeof two);
  return _mm512_castpd_ps(_mm512_set1_pd(two));
}

template <int R, int T>
void q4xTileN(const uint8_t* weights, int64_t cols, const QuantizedActivations16& qa, int64_t r0, int64_t t0, float* y,
              int64_t ldy, const DecodeAhead& pf) {
  Q4XRow rows[R];
  for (int r = 0; r < R; ++r) rows[r] = q4xRow(weights, cols, r0 + r);
  const int16_t* xq[T];
  const float* xd[T];
  for (int t = 0; t < T; ++t) {
    xq[t] = qa.qs + (t0 + t) * qa.cols;
    xd[t] = qa.d + (t0 + t) * qa.blocks;
  }
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  alignas(64) float scales[R][T][2 * kScalePairs];
  const Q4XPicks& pk = q4xPicks();
  const __m512i shiftG = pk.g, shiftH = pk.h, nibble = _mm512_set1_epi16(0x0F);
  const int64_t blocks = qa.blocks, pairs = blocks / 2;
  for (int64_t p0 = 0; p0 < pairs; p0 += kScalePairs) {
    const int64_t np = std::min<int64_t>(kScalePairs, pairs - p0);
    const __mmask16 lanes = lowLanes(2 * np);
    for (int r = 0; r < R; ++r) {
      const __m512 dw = _mm512_maskz_loadu_ps(lanes, rows[r].d + 2 * p0);
      for (int t = 0; t < T; ++t)
        _mm512_store_ps(scales[r][t], _mm512_mul_ps(dw, _mm512_maskz_loadu_ps(lanes, xd[t] + 2 * p0)));
    }
    for (int64_t i = 0; i < np; ++i) {
      const int64_t b = 2 * (p0 + i);
      if (pf.hint != PrefetchHint::None) prefetchAhead(pf, rows[0].nibbles, R * pf.rowBytes, p0 + i, pairs);
      for (int r = 0; r < R; ++r) {
        const __m512i z =
            _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r].nibbles + b * 16)));
        const __m512i g = _mm512_and_si512(_mm512_srlv_epi16(z, shiftG), nibble);
        const __m512i h =
            _mm512_shuffle_epi32(_mm512_and_si512(_mm512_srlv_epi16(z, shiftH), nibble), _MM_PERM_CDAB);
        for (int t = 0; t < T; ++t) {
          const __m512i p = _mm512_dpwssd_epi32(_mm512_madd_epi16(g, _mm512_loadu_si512(xq[t] + b * kQK)), h,
                                                _mm512_loadu_si512(xq[t] + b * kQK + kQK));
          acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), broadcastPair(scales[r][t] + 2 * i), acc[r][t]);
        }
      }
    }
  }
  q4xFinish<R, T>(rows, xq, xd, acc, qa, 2 * pairs, r0, t0, y, ldy);
}

// Q8_0 (the tied output head) the same way: a block's 32 weights widened once for all T
// tokens, the products d_w·d_x made 16 blocks at a time (the rows' f16 scales converted once
// per block into a row of 16, the tokens' contiguous), the FMA taking its product with a
// 32-bit broadcast load.
template <int R, int T>
void q8TileN(const uint8_t* weights, size_t rowBytes, const QuantizedActivations16& qa, int64_t r0, int64_t t0,
             float* y, int64_t ldy, const DecodeAhead& pf) {
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = weights + rowBytes * static_cast<size_t>(r0 + r);
  const int16_t* xq[T];
  const float* xd[T];
  for (int t = 0; t < T; ++t) {
    xq[t] = qa.qs + (t0 + t) * qa.cols;
    xd[t] = qa.d + (t0 + t) * qa.blocks;
  }
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  alignas(64) float scales[R][T][16];
  alignas(64) float dws[R][16];
  const int64_t blocks = qa.blocks;
  for (int64_t b0 = 0; b0 < blocks; b0 += 16) {
    const int64_t nb = std::min<int64_t>(16, blocks - b0);
    const __mmask16 lanes = lowLanes(nb);
    for (int r = 0; r < R; ++r) {
      for (int64_t i = 0; i < nb; ++i) dws[r][i] = f16ToF32(loadU16(rows[r] + (b0 + i) * kQ8_0Bytes));
      const __m512 dw = _mm512_maskz_load_ps(lanes, dws[r]);
      for (int t = 0; t < T; ++t)
        _mm512_store_ps(scales[r][t], _mm512_mul_ps(dw, _mm512_maskz_loadu_ps(lanes, xd[t] + b0)));
    }
    for (int64_t i = 0; i < nb; ++i) {
      const int64_t b = b0 + i;
      if (pf.hint != PrefetchHint::None) prefetchAhead(pf, rows[0], R * rowBytes, b, blocks);
      for (int r = 0; r < R; ++r) {
        const __m512i w = _mm512_cvtepi8_epi16(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + b * kQ8_0Bytes + 2)));
        for (int t = 0; t < T; ++t) {
          const __m512i p = _mm512_madd_epi16(w, _mm512_loadu_si512(xq[t] + b * kQK));
          acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_set1_ps(scales[r][t][i]), acc[r][t]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = hsum512(acc[r][t]);
}

// Tiles: decode (one token) takes 8 rows by default, so 8 independent accumulator chains
// hide the FMA latency, or the context's decode tuning's tile height (`rows`: 1, 2, 4 or 8;
// each row sums its blocks in the same order at every height, so no height changes a
// result); several tokens take 4 rows × up to 8 tokens (q4xTileN / q8TileN: a tile per
// token count, so a verify step of 16 tokens is two passes over the weights, all from L2 after
// the first). Rows are split across threads in whole 8-row tiles, which every decode height
// and kRowsN divide.
constexpr int kDecodeRows = 8;
constexpr int kRowsN = 4;
constexpr int kChunkTokens = 8;
constexpr int kSplitRows = 8;
constexpr int kPrefetchTokens = 16;

struct Q4XTile {
  template <int R, int T>
  static void run(const uint8_t* w, int64_t cols, size_t, const QuantizedActivations16& qa, int64_t r0, int64_t t0,
                  float* y, int64_t ldy, const DecodeAhead& pf) {
    q4xTile16<R, T>(w, cols, qa, r0, t0, y, ldy, pf);
  }
  template <int R, int T>
  static void runN(const uint8_t* w, int64_t cols, size_t, const QuantizedActivations16& qa, int64_t r0, int64_t t0,
                   float* y, int64_t ldy, const DecodeAhead& pf) {
    q4xTileN<R, T>(w, cols, qa, r0, t0, y, ldy, pf);
  }
  static void quantize(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations16& qa) {
    quantizeQ4XActivations(x, ldx, t0, t1, qa);
  }
};

struct Q8Tile {
  template <int R, int T>
  static void run(const uint8_t* w, int64_t, size_t rowBytes, const QuantizedActivations16& qa, int64_t r0,
                  int64_t t0, float* y, int64_t ldy, const DecodeAhead& pf) {
    q8Tile16<R, T>(w, rowBytes, qa, r0, t0, y, ldy, pf);
  }
  template <int R, int T>
  static void runN(const uint8_t* w, int64_t, size_t rowBytes, const QuantizedActivations16& qa, int64_t r0,
                   int64_t t0, float* y, int64_t ldy, const DecodeAhead& pf) {
    q8TileN<R, T>(w, rowBytes, qa, r0, t0, y, ldy, pf);
  }
  static void quantize(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations16& qa) {
    quantizeBlocks16(x, ldx, t0, t1, qa);
  }
};

// One token, rows [rb, re) in tiles of R rows, the rest (a matrix's last rows) in 1-row
// tiles without prefetch.
template <class Tile, int R>
void decodeTiles(const uint8_t* weights, int64_t cols, size_t rowBytes, const QuantizedActivations16& qa, int64_t rb,
                 int64_t re, int64_t t, float* y, int64_t ldy, const DecodeAhead& ahead) {
  int64_t r = rb;
  for (; r + R <= re; r += R) Tile::template run<R, 1>(weights, cols, rowBytes, qa, r, t, y, ldy, ahead);
  for (; r < re; ++r) Tile::template run<1, 1>(weights, cols, rowBytes, qa, r, t, y, ldy, DecodeAhead{});
}

using TileFn = void (*)(const uint8_t*, int64_t, size_t, const QuantizedActivations16&, int64_t, int64_t, float*,
                       int64_t, const DecodeAhead&);

// The kRowsN-row tiles of 1 .. sizeof...(I) tokens, indexed by tokens - 1.
template <class Tile, int... I>
constexpr std::array<TileFn, sizeof...(I)> tileTable(std::integer_sequence<int, I...>) {
  return {&Tile::template runN<kRowsN, I + 1>...};
}

// Rows [rb, re) × tokens [tb, te): one token in decode tiles of `decodeRows`; several as
// below.
template <class Tile>
void walkTiles(const uint8_t* weights, int64_t cols, size_t rowBytes, const QuantizedActivations16& qa, int64_t rb,
               int64_t re, int64_t tb, int64_t te, float* y, int64_t ldy, const DecodeAhead& ahead, int decodeRows) {
  if (te - tb == 1) {
    switch (decodeRows) {
      case 1: return decodeTiles<Tile, 1>(weights, cols, rowBytes, qa, rb, re, tb, y, ldy, ahead);
      case 2: return decodeTiles<Tile, 2>(weights, cols, rowBytes, qa, rb, re, tb, y, ldy, ahead);
      case 4: return decodeTiles<Tile, 4>(weights, cols, rowBytes, qa, rb, re, tb, y, ldy, ahead);
      default: return decodeTiles<Tile, kDecodeRows>(weights, cols, rowBytes, qa, rb, re, tb, y, ldy, ahead);
    }
  }
  // Several tokens: row groups that fit a quarter of L2; in each, the tokens in near-equal
  // chunks of at most kChunkTokens (11 = 6 + 5), each chunk one pass over the group's rows
  // in tiles of kRowsN (a last row or three in 1-row, 1-token tiles). Up to kPrefetchTokens
  // tokens the tiles prefetch ahead as the decode tiles do (a verify step still streams the
  // weights from memory once: 2-16 tokens, paired steps, 0.84-0.95 of the time without it).
  static constexpr auto tiles = tileTable<Tile>(std::make_integer_sequence<int, kChunkTokens>());
  const int64_t group = rowGroupFor(rowBytes, kRowsN);
  const int64_t chunks = (te - tb + kChunkTokens - 1) / kChunkTokens;
  for (int64_t g0 = rb; g0 < re; g0 += group) {
    const int64_t g1 = std::min(re, g0 + group);
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t c0 = tb + (te - tb) * c / chunks, c1 = tb + (te - tb) * (c + 1) / chunks;
      const auto tile = tiles[c1 - c0 - 1];
      int64_t r = g0;
      for (; r + kRowsN <= g1; r += kRowsN) tile(weights, cols, rowBytes, qa, r, c0, y, ldy, ahead);
      for (; r < g1; ++r)
        for (int64_t t = c0; t < c1; ++t) Tile::template run<1, 1>(weights, cols, rowBytes, qa, r, t, y, ldy, DecodeAhead{});
    }
  }
}

// The work split of the AVX2 int16 path (matmul_avx2.cc's quantMatmul): the owner quantizes
// up to 4 tokens itself, rows split in whole tiles when there are enough of them (with a
// LoRA prefetch, one tile at a time after its slice of it), else tokens.
template <class Tile>
void matmul16(const LinearWeight& W, size_t rowBytes, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
              ThreadPool& pool, KernelScratch& scratch) {
  QuantizedActivations16 qa;
  placeActivations(scratch.bytes(quantizedActivationBytes(n, W.cols, sizeof(int16_t))), n, W.cols, &qa);
  if (n <= 4) Tile::quantize(x, ldx, 0, n, qa);
  else pool.parallelFor(n, [&](int64_t t0, int64_t t1) { Tile::quantize(x, ldx, t0, t1, qa); });
  const uint8_t* weights = weightData(W);
  DecodeAhead ahead;
  if (n <= kPrefetchTokens) ahead = DecodeAhead{scratch.decodeTuning().hint, scratch.decodeTuning().aheadHalves, rowBytes};
  // The tuning's tile height (0: this kernel's own; parseDecodeTuning admits only 1, 2, 4, 8).
  const int decodeRows = scratch.decodeTuning().rows == 0 ? kDecodeRows : scratch.decodeTuning().rows;
  const int threads = pool.size();
  constexpr int rt = kSplitRows;
  const int64_t rowTiles = (W.rows + rt - 1) / rt;
  if (rowTiles >= 4 * threads || n < 2 * threads) {
    auto task = [&](int i, int nt) {
      const int64_t rb = rowTiles * i / nt * rt, re = std::min(W.rows, rowTiles * (i + 1) / nt * rt);
      if (!scratch.hasPrefetch()) {
        if (rb < re) walkTiles<Tile>(weights, W.cols, rowBytes, qa, rb, re, 0, n, y, ldy, ahead, decodeRows);
        return;
      }
      const int64_t pieces = rowTiles / nt + 1;
      for (int64_t k = 0; k < pieces; k++) {
        scratch.prefetchSlice(i * pieces + k, nt * pieces);
        const int64_t a = rb + k * rt, e = std::min(re, a + rt);
        if (a < e) walkTiles<Tile>(weights, W.cols, rowBytes, qa, a, e, 0, n, y, ldy, ahead, decodeRows);
      }
    };
    pool.run(TaskRef(task));
  } else {
    pool.parallelFor(n, [&](int64_t t0, int64_t t1) {
      walkTiles<Tile>(weights, W.cols, rowBytes, qa, 0, W.rows, t0, t1, y, ldy, ahead, decodeRows);
    });
  }
}

}  // namespace

void quantizeInt16Avx512(const float* x, int64_t ldx, int64_t t0, int64_t t1, const QuantizedActivations16& qa) {
  quantizeBlocks16(x, ldx, t0, t1, qa);
}

bool int16MatmulAvx512(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                       ThreadPool& pool, KernelScratch& scratch) {
  if (W.precision != ActivationPrecision::Int16) return false;
  if (W.layout == kLayoutQ4XV) {
    q4xvMatmulAvx512(W, x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout == kLayoutQ4X) {
    matmul16<Q4XTile>(W, q4xRowBytes(W.cols), x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout == kLayoutGguf && W.type == TensorType::Q8_0) {
    matmul16<Q8Tile>(W, typeRowBytes(W.type, W.cols), x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  return false;
}

}  // namespace prism::kernels
