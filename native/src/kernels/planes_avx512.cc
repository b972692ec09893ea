// Bit-plane layouts (planes.h) with AVX-512 VNNI: per group and row, the planes unpack to 8
// vectors of 64 unsigned values whose 32-bit lanes are the group's 16 blocks, 8 dpbusd leave
// each block's integer dot product in its own lane (two sums per block where the type
// scales 16-value halves), and a few conversions and FMAs per group apply the scales to 16
// blocks at once, as the Q4G kernels do (q4g_avx512.cc).
//
// Unpacking, per vector: Q5 a mask (or shift + mask) of the nibble chunk and one shift of
// the bit plane merged by one ternary-logic instruction; Q3 the same with 2-bit pairs; Q2
// a shift + mask; IQ4 the nibble's mask and a 16-entry table lookup (vpshufb) that turns
// the index into its value + 128 (unsigned for dpbusd; the 128·Σx comes back out through
// the activation sums).
#include <utility>

#include "kernels/isa_kernels.h"
#include "kernels/planes.h"
#include "kernels/q4g.h"
#include "kernels/wide_avx512.h"

namespace prism::kernels {
namespace {

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

inline __m512i ld(const void* p) { return _mm512_loadu_si512(p); }
inline uint32_t ld32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Each 16-bit lane shifted by S bits (left for S > 0, right for S < 0).
template <int S>
inline __m512i shift16(__m512i v) {
  if constexpr (S > 0) return _mm512_slli_epi16(v, S);
  else if constexpr (S < 0) return _mm512_srli_epi16(v, -S);
  else return v;
}

// a | (b & c) in one instruction.
inline __m512i orAnd(__m512i a, __m512i b, __m512i c) { return _mm512_ternarylogic_epi32(a, b, c, 0xF8); }

// ---- planes: the 8 unsigned weight vectors of a group, kUnit at a time -----------------

// Q5: vector v = its nibble | (bit v of the bit plane) << 4.
struct Q5Planes {
  static constexpr int kUnit = 2, kSplit = 1;
  template <int U>
  static void unit(const uint8_t* grp, __m512i* w) {
    const __m512i n = ld(grp + 64 * U), h = ld(grp + 256);
    const __m512i low = _mm512_set1_epi8(0x0F), bit = _mm512_set1_epi8(0x10);
    w[0] = orAnd(_mm512_and_si512(n, low), shift16<4 - 2 * U>(h), bit);
    w[1] = orAnd(_mm512_and_si512(_mm512_srli_epi16(n, 4), low), shift16<4 - (2 * U + 1)>(h), bit);
  }
};

// IQ4: the nibble indexes a table of kIQ4Values + 128 (1..241), repeated in each 128-bit lane.
struct IQ4Planes {
  static constexpr int kUnit = 2, kSplit = 1;
  template <int U>
  static void unit(const uint8_t* grp, __m512i* w) {
    const __m512i n = ld(grp + 64 * U), low = _mm512_set1_epi8(0x0F);
    const __m512i table = _mm512_broadcast_i32x4(_mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, static_cast<char>(129),
                                                               static_cast<char>(141), static_cast<char>(153),
                                                               static_cast<char>(166), static_cast<char>(181),
                                                               static_cast<char>(197), static_cast<char>(217),
                                                               static_cast<char>(241)));
    w[0] = _mm512_shuffle_epi8(table, _mm512_and_si512(n, low));
    w[1] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(n, 4), low));
  }
};

// Q3: vector 4U + k = bits 2k..2k+1 of pair chunk U | (bit 4U + k of the bit plane) << 2.
struct Q3Planes {
  static constexpr int kUnit = 4, kSplit = 2;
  template <int U>
  static void unit(const uint8_t* grp, __m512i* w) {
    const __m512i t = ld(grp + 64 * U), h = ld(grp + 128);
    const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
    w[0] = orAnd(_mm512_and_si512(t, three), shift16<2 - 4 * U>(h), four);
    w[1] = orAnd(_mm512_and_si512(_mm512_srli_epi16(t, 2), three), shift16<2 - (4 * U + 1)>(h), four);
    w[2] = orAnd(_mm512_and_si512(_mm512_srli_epi16(t, 4), three), shift16<2 - (4 * U + 2)>(h), four);
    w[3] = orAnd(_mm512_and_si512(_mm512_srli_epi16(t, 6), three), shift16<2 - (4 * U + 3)>(h), four);
  }
};

// Q2: vector 4U + k = bits 2k..2k+1 of pair chunk U.
struct Q2Planes {
  static constexpr int kUnit = 4, kSplit = 2;
  template <int U>
  static void unit(const uint8_t* grp, __m512i* w) {
    const __m512i t = ld(grp + 64 * U), three = _mm512_set1_epi8(3);
    w[0] = _mm512_and_si512(t, three);
    w[1] = _mm512_and_si512(_mm512_srli_epi16(t, 2), three);
    w[2] = _mm512_and_si512(_mm512_srli_epi16(t, 4), three);
    w[3] = _mm512_and_si512(_mm512_srli_epi16(t, 6), three);
  }
};

// ---- scales: per row and group, then applied to each token's dot products -------------

// The f16 value of super-blocks 2g (lanes 0-7) and 2g + 1 (lanes 8-15).
inline __m512 superPair(const uint8_t* p, int64_t g) {
  const __m512i pick = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(pick, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(ld32(p + g * 4))))));
}

// Six-bit lanes (planes.h): the two 6-bit values a, b of each of the 16 blocks.
inline void sixBitLanes(const uint8_t* p, __m512i* a, __m512i* b) {
  const __m512i n = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m512i shifts = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i ha = _mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(ld32(p + 16))), shifts);
  const __m512i hb = _mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(ld32(p + 20))), shifts);
  const __m512i top = _mm512_set1_epi32(0x30);
  *a = orAnd(_mm512_and_si512(n, _mm512_set1_epi32(0x0F)), _mm512_slli_epi32(ha, 4), top);
  *b = orAnd(_mm512_srli_epi32(n, 4), _mm512_slli_epi32(hb, 4), top);
}

inline __m512 f16x16(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }

// value = dw·q + mw per block (Q5_0: mw = −16·dw; Q5_1: the file's m; Q5_K: d·sc, −dmin·mn).
template <Layout L>
struct OffsetScales {
  __m512 dw, mw;
  static OffsetScales load(const PlaneRow& row, int64_t g) {
    OffsetScales s;
    if constexpr (L == Layout::Q5GK) {
      __m512i sc, mn;
      sixBitLanes(row.lanes + g * 24, &sc, &mn);
      s.dw = _mm512_mul_ps(superPair(row.d, g), _mm512_cvtepi32_ps(sc));
      s.mw = _mm512_mul_ps(superPair(row.m, g), _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_setzero_si512(), mn)));
    } else {
      s.dw = f16x16(row.d + g * 32);
      if constexpr (L == Layout::Q5G0) s.mw = _mm512_mul_ps(s.dw, _mm512_set1_ps(-16.0f));
      else s.mw = f16x16(row.m + g * 32);
    }
    return s;
  }
  void apply(const __m512i* dot, const Q4GActivations& a, int64_t t, int64_t g, __m512& acc) const {
    const __m512 dx = _mm512_loadu_ps(a.dAt(t) + g * kQ4GBlocks), sx = _mm512_loadu_ps(a.sAt(t) + g * kQ4GBlocks);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[0]), _mm512_mul_ps(dw, dx), acc);
    acc = _mm512_fmadd_ps(mw, sx, acc);
  }
};

// IQ4: value = dw·(w − 128) with w the table's unsigned value.
template <Layout L>
struct IQ4Scales {
  __m512 dw;
  static IQ4Scales load(const PlaneRow& row, int64_t g) {
    IQ4Scales s;
    if constexpr (L == Layout::IQ4GX) {
      // Four-bit lanes: lanes 0-7 from the word's low 32 bits, 8-15 from its high ones.
      const uint8_t* p = row.lanes + g * 12;
      const __m512i words = _mm512_permutexvar_epi32(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0),
                                                     _mm512_castsi128_si512(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
      const __m512i lo = _mm512_and_si512(
          _mm512_srlv_epi32(words, _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28)),
          _mm512_set1_epi32(0x0F));
      const __m512i hi = _mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(ld32(p + 8))),
                                           _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30));
      const __m512i ls = orAnd(lo, _mm512_slli_epi32(hi, 4), _mm512_set1_epi32(0x30));
      s.dw = _mm512_mul_ps(superPair(row.d, g), _mm512_cvtepi32_ps(_mm512_sub_epi32(ls, _mm512_set1_epi32(32))));
    } else {
      s.dw = f16x16(row.d + g * 32);
    }
    return s;
  }
  void apply(const __m512i* dot, const Q4GActivations& a, int64_t t, int64_t g, __m512& acc) const {
    const int64_t b0 = g * kQ4GBlocks;
    const __m512i sx = _mm512_add_epi32(_mm512_loadu_si512(a.sumAAt(t) + b0), _mm512_loadu_si512(a.sumBAt(t) + b0));
    const __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(dot[0], _mm512_slli_epi32(sx, 7)));
    acc = _mm512_fmadd_ps(d, _mm512_mul_ps(dw, _mm512_loadu_ps(a.dAt(t) + b0)), acc);
  }
};

// Q3_K: value = d·(sc − 32)·(q − 4), scA for values 0-15 of a block, scB for 16-31.
struct Q3Scales {
  __m512 dA, dB;
  static Q3Scales load(const PlaneRow& row, int64_t g) {
    __m512i a, b;
    sixBitLanes(row.lanes + g * 24, &a, &b);
    const __m512 d = superPair(row.d, g);
    const __m512i bias = _mm512_set1_epi32(32);
    return {_mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_sub_epi32(a, bias))),
            _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_sub_epi32(b, bias)))};
  }
  void apply(const __m512i* dot, const Q4GActivations& a, int64_t t, int64_t g, __m512& acc) const {
    const int64_t b0 = g * kQ4GBlocks;
    const __m512 dx = _mm512_loadu_ps(a.dAt(t) + b0);
    const __m512i ia = _mm512_sub_epi32(dot[0], _mm512_slli_epi32(_mm512_loadu_si512(a.sumAAt(t) + b0), 2));
    const __m512i ib = _mm512_sub_epi32(dot[1], _mm512_slli_epi32(_mm512_loadu_si512(a.sumBAt(t) + b0), 2));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia), _mm512_mul_ps(dA, dx), acc);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ib), _mm512_mul_ps(dB, dx), acc);
  }
};

// Q2_K: value = d·sc·q − dmin·mn per 16 values.
struct Q2Scales {
  __m512 dA, dB, dmin;
  __m512i mnA, mnB;
  static Q2Scales load(const PlaneRow& row, int64_t g) {
    const uint8_t* p = row.lanes + g * 32;
    const __m512i la = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m512i lb = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)));
    const __m512i low = _mm512_set1_epi32(0x0F);
    const __m512 d = superPair(row.d, g);
    return {_mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_and_si512(la, low))),
            _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_and_si512(lb, low))), superPair(row.m, g),
            _mm512_srli_epi32(la, 4), _mm512_srli_epi32(lb, 4)};
  }
  void apply(const __m512i* dot, const Q4GActivations& a, int64_t t, int64_t g, __m512& acc) const {
    const int64_t b0 = g * kQ4GBlocks;
    const __m512 dx = _mm512_loadu_ps(a.dAt(t) + b0);
    const __m512i mins = _mm512_add_epi32(_mm512_mullo_epi32(mnA, _mm512_loadu_si512(a.sumAAt(t) + b0)),
                                          _mm512_mullo_epi32(mnB, _mm512_loadu_si512(a.sumBAt(t) + b0)));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[0]), _mm512_mul_ps(dA, dx), acc);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[1]), _mm512_mul_ps(dB, dx), acc);
    acc = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mins), _mm512_mul_ps(dmin, dx), acc);
  }
};

// ---- the tile -------------------------------------------------------------------------

// Tile constants of the plane kernels, in one place for per-host tuning (issue 27):
// rows of a decode tile (each streams its rows once; q4g.h's prefetch runs one tile
// ahead), and rows × tokens of a prefill tile.
struct PlaneTiles {
  static constexpr int kDecodeRows = 4;
  static constexpr int kPrefillRows = 4;
  static constexpr int kPrefillTokens = 2;
  // Q3 / Q2 keep two sums per block: 2 × 2 holds their 8 accumulators with room for the
  // unpacked vectors.
  static constexpr int kSplitPrefillRows = 2;
};

template <Layout L, class Planes, class Scales>
struct PlaneAvx512 {
  static constexpr int kDecodeRows = PlaneTiles::kDecodeRows;
  // IQ4 takes taller decode tiles where the tuning asks for them (rows=8, the host default on
  // Intel family 6 model 207): 8 accumulators + 8 dot products + the 2 unpacked vectors fit the 32
  // registers, and the one-tile-ahead prefetch reaches twice as far. bench/kernels/ab-steps.ts,
  // 1B IQ4_XS, 200 paired steps, 2 threads: step time 0.967 of 4-row tiles. The other plane
  // types stay at 4 (not measured at 8).
  static constexpr int kMaxDecodeRows = L == Layout::IQ4G || L == Layout::IQ4GX ? 8 : kDecodeRows;
  static constexpr int kPrefillRows = Planes::kSplit == 2 ? PlaneTiles::kSplitPrefillRows : PlaneTiles::kPrefillRows;
  static constexpr int kPrefillTokens = PlaneTiles::kPrefillTokens;

  // Token-wide tiles (wide_avx512.h) for batches of 2-15 tokens.
  static constexpr bool kWide = true;
  static constexpr int kSplit = Planes::kSplit;
  using WideRow = PlaneRow;
  static PlaneRow wideRow(const LinearWeight& W, int64_t r) { return planeRow(weightData(W), W.cols, L, r); }
  static size_t wideRowBytes(const LinearWeight& W) { return planeRowBytes(W.cols, L); }
  static const uint8_t* wideRowStart(const PlaneRow& row) { return row.planes; }
  static void unpack(const PlaneRow& row, int64_t g, __m512i* w) {
    const uint8_t* grp = row.planes + g * planeGroupBytes(L);
    [&]<int... U>(std::integer_sequence<int, U...>) {
      (Planes::template unit<U>(grp, w + U * Planes::kUnit), ...);
    }(std::make_integer_sequence<int, 8 / Planes::kUnit>{});
  }
  static Scales wideScales(const PlaneRow& row, const Q4GActivations&, int64_t g) { return Scales::load(row, g); }

  template <int U, int R, int T>
  static void unit(const PlaneRow* rows, const Q4GActivations& a, int64_t g, int64_t t0, __m512i (&dot)[Planes::kSplit][R][T]) {
    constexpr int K = Planes::kUnit;
    for (int r = 0; r < R; ++r) {
      __m512i w[K];
      Planes::template unit<U>(rows[r].planes + g * planeGroupBytes(L), w);
      for (int t = 0; t < T; ++t) {
        const int8_t* xq = a.q(t0 + t) + g * 512 + U * K * 64;
        for (int k = 0; k < K; ++k) {
          const int s = Planes::kSplit == 2 && (U * K + k) >= 4 ? 1 : 0;
          dot[s][r][t] = _mm512_dpbusd_epi32(dot[s][r][t], w[k], ld(xq + k * 64));
        }
      }
    }
  }

  template <int R, int T, bool Ahead = (T == 1 && R > 1)>
  static void tile(const LinearWeight& W, const Q4GActivations& a, int64_t r0, int64_t t0, float* y, int64_t ldy) {
    const size_t rowBytes = planeRowBytes(W.cols, L);
    const int64_t groups = a.groups;
    PlaneRow rows[R];
    for (int r = 0; r < R; ++r) rows[r] = planeRow(weightData(W), W.cols, L, r0 + r);
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    for (int64_t g = 0; g < groups; ++g) {
      if constexpr (Ahead) prefetchAhead(a.prefetch, rows[0].planes, rowBytes * R, g, groups);
      __m512i dot[Planes::kSplit][R][T];
      for (int s = 0; s < Planes::kSplit; ++s)
        for (int r = 0; r < R; ++r)
          for (int t = 0; t < T; ++t) dot[s][r][t] = _mm512_setzero_si512();
      [&]<int... U>(std::integer_sequence<int, U...>) {
        (unit<U, R, T>(rows, a, g, t0, dot), ...);
      }(std::make_integer_sequence<int, 8 / Planes::kUnit>{});
      for (int r = 0; r < R; ++r) {
        const Scales sc = Scales::load(rows[r], g);
        for (int t = 0; t < T; ++t) {
          __m512i d[Planes::kSplit];
          for (int s = 0; s < Planes::kSplit; ++s) d[s] = dot[s][r][t];
          sc.apply(d, a, t0 + t, g, acc[r][t]);
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
};

// The tiles of plane layout L: its unpacker and scales.
template <Layout L>
constexpr auto planeTiles() {
  if constexpr (L == Layout::Q3G) return PlaneAvx512<L, Q3Planes, Q3Scales>{};
  else if constexpr (L == Layout::Q2G) return PlaneAvx512<L, Q2Planes, Q2Scales>{};
  else if constexpr (L == Layout::IQ4G || L == Layout::IQ4GX) return PlaneAvx512<L, IQ4Planes, IQ4Scales<L>>{};
  else return PlaneAvx512<L, Q5Planes, OffsetScales<L>>{};  // Q5G0, Q5G1, Q5GK
}

}  // namespace

template <Layout L>
void IsaKernels<Isa::Avx512>::planes(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                                  ThreadPool& pool, KernelScratch& scratch) {
  q4gMatmul<decltype(planeTiles<L>())>(W, x, n, ldx, y, ldy, pool, scratch);
}
template MatmulFn IsaKernels<Isa::Avx512>::planes<Layout::Q5G0>;
template MatmulFn IsaKernels<Isa::Avx512>::planes<Layout::Q5G1>;
template MatmulFn IsaKernels<Isa::Avx512>::planes<Layout::Q5GK>;
template MatmulFn IsaKernels<Isa::Avx512>::planes<Layout::IQ4G>;
template MatmulFn IsaKernels<Isa::Avx512>::planes<Layout::IQ4GX>;
template MatmulFn IsaKernels<Isa::Avx512>::planes<Layout::Q3G>;
template MatmulFn IsaKernels<Isa::Avx512>::planes<Layout::Q2G>;

}  // namespace prism::kernels
