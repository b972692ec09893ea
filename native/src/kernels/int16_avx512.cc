// AVX-512 kernels for int16 activations (ActivationPrecision::Int16: models below hidden
// 1024, e.g. the default SmolLM2-135M, keep 100% top-1 against the float reference with
// them where int8 loses ~2%): the activation quantizer of every int16 kernel of this family,
// the dispatch of its weights, and the Q8_0 kernels of weights in the file's layout (read in
// place; prepareLinear gives this family's int16 Q8_0, e.g. the default model's tied output
// head, kLayoutQ8XV and its own kernels, q8xv_avx512.cc). 4-bit rows (Q4_0 / Q4_1 / Q4_K) are
// kLayoutQ4XV on this family, with their own kernels (q4xv_avx512.cc); other weight types with int16 activations stay with
// the AVX2 kernels (matmul_avx2.cc), and so does kLayoutQ4X (prepared only where the AVX2
// family is in effect).
//
// Same activation quantization as AVX2 (per 32: d = max|x| / 32767, q = round(x / d), the
// block sums s, sa, sb), bit for bit, and the same integer products; the dot products use
// VNNI's vpdpwssd (int16 × int16 pairs summed into int32 lanes), 32 products per
// instruction against AVX2's 16 per madd. What differs from AVX2 is only the order in which
// the per-block f32 terms are added (more lanes), so results agree with the AVX2 int16
// kernels to f32 rounding, not bit for bit (native/kernels.test.ts bounds the difference).
//
// Q8_0: each 34-byte block widens (vpmovsxbw) to 32 int16 in the activations' natural
// order; one vpdpwssd per block and token, one conversion and FMA with the block's scale.
//
// Decode (one token) walks 8-row tiles that prefetch the rows ahead with the context's
// decode tuning (prefetchAhead, kernels/prefetch_lines.h), as the group-layout decode tiles
// do: the default model's weights stream from L3 or memory each step, and without it the
// step waited on them (ab-steps, default model, 2 threads: 0.70 of the AVX2 step time with
// the prefetch, 0.93 without).
//
// Int32 lanes: a Q8_0 lane sums 2 products ≤ 128 · 32767 (< 2^23): their f32 conversion is
// exact.
#include <algorithm>
#include <array>
#include <utility>
#include <cstring>

#include "kernels/internal.h"
#include "kernels/prefetch_lines.h"
#include "kernels/q4xv.h"
#include "kernels/q8xv.h"

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
// walkTiles for the shapes). Every (row, token) keeps the one-token tile's arithmetic
// exactly: the same int16 dot per block (vpmaddwd gives what vpdpwssd from zero gives), the
// same int32→f32 conversion, the same f32 product of the row's and the token's scales, the
// same FMA into a row-token accumulator in block order and the same horizontal sum. So each
// token's outputs equal the one-token kernel's bit for bit, whatever the step's shape
// (native/kernels.test.ts checks it).
inline __mmask16 lowLanes(int64_t lanes) { return lanes >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << lanes) - 1); }

// What changes is where the work goes: a block's 32 weights are widened once for all T
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
// result); several tokens take 2 rows × up to 16 tokens (q8TileN: a tile per token count, so
// a verify step of up to 16 tokens is one pass over the weights; against 4 × 8, the default
// model's head at 14 and 16 tokens, one thread, alternating runs: 0.94 and 0.89 of the
// time). Rows are split across threads in whole 8-row tiles, which every decode height and
// kRowsN divide.
constexpr int kDecodeRows = 8;
constexpr int kRowsN = 2;
constexpr int kChunkTokens = 16;
constexpr int kSplitRows = 8;
constexpr int kPrefetchTokens = 16;

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
  // chunks of at most kChunkTokens (24 = 12 + 12), each chunk one pass over the group's rows
  // in tiles of kRowsN (a last row in 1-row, 1-token tiles). Up to kPrefetchTokens
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
  if (W.layout == kLayoutQ8XV) {
    q8xvMatmulAvx512(W, x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  if (W.layout == kLayoutGguf && W.type == TensorType::Q8_0) {
    matmul16<Q8Tile>(W, typeRowBytes(W.type, W.cols), x, n, ldx, y, ldy, pool, scratch);
    return true;
  }
  return false;
}

}  // namespace prism::kernels
