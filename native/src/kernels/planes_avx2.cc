// Bit-plane layouts (planes.h) with AVX2: the AVX-512 kernels' scheme on 256-bit halves
// (half h of every 64-byte chunk holds blocks 8h..8h+7 of the group; for the 256-value
// types that is exactly super-block 2g + h). maddubs multiplies the unsigned weights by the
// int8 activations, the pair sums of a unit (2 or 4 vectors) add in int16 without
// saturating (Q5: 2·2·31·127 = 15748; Q3: 4·2·7·127 = 7112; Q2 less) and one madd widens
// them to the per-block int32 lanes. IQ4's table values are signed (maddubs cannot take
// value + 128 against int8 without saturating): |w| against x with w's sign, one madd per
// vector, as the Q8G kernel does.
#include <utility>

#include "kernels/isa_kernels.h"
#include "kernels/planes.h"
#include "kernels/q4g.h"
#include "kernels/vec_avx2.h"

namespace prism::kernels {
namespace {

inline __m256i ld(const void* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline uint32_t ld32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

template <int S>
inline __m256i shift16(__m256i v) {
  if constexpr (S > 0) return _mm256_slli_epi16(v, S);
  else if constexpr (S < 0) return _mm256_srli_epi16(v, -S);
  else return v;
}

inline __m256i sumPairs(__m256i v) { return _mm256_madd_epi16(v, _mm256_set1_epi16(1)); }

// ---- planes: half h of the group's vectors, kUnit at a time; product() is the unit's
// per-block int32 dot with the activations at x (the unit's first vector, half h) ------

struct Q5Planes {
  static constexpr int kUnit = 2, kSplit = 1, kRegs = 2;
  template <int U>
  static void unit(const uint8_t* grp, int h, __m256i* w) {
    const __m256i n = ld(grp + 64 * U + 32 * h), hb = ld(grp + 256 + 32 * h);
    const __m256i low = _mm256_set1_epi8(0x0F), bit = _mm256_set1_epi8(0x10);
    w[0] = _mm256_or_si256(_mm256_and_si256(n, low), _mm256_and_si256(shift16<4 - 2 * U>(hb), bit));
    w[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(n, 4), low), _mm256_and_si256(shift16<3 - 2 * U>(hb), bit));
  }
  static __m256i product(const __m256i* w, const int8_t* x) {
    return sumPairs(_mm256_add_epi16(_mm256_maddubs_epi16(w[0], ld(x)), _mm256_maddubs_epi16(w[1], ld(x + 64))));
  }
};

struct IQ4Planes {
  static constexpr int kUnit = 2, kSplit = 1, kRegs = 4;  // |w0|, |w1|, w0, w1
  template <int U>
  static void unit(const uint8_t* grp, int h, __m256i* w) {
    const __m256i n = ld(grp + 64 * U + 32 * h), low = _mm256_set1_epi8(0x0F);
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values));
    const __m256i table = _mm256_broadcastsi128_si256(t);
    w[2] = _mm256_shuffle_epi8(table, _mm256_and_si256(n, low));
    w[3] = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(n, 4), low));
    w[0] = _mm256_sign_epi8(w[2], w[2]);
    w[1] = _mm256_sign_epi8(w[3], w[3]);
  }
  static __m256i product(const __m256i* w, const int8_t* x) {
    // |pair| ≤ 2·127·127: one madd per maddubs.
    return _mm256_add_epi32(sumPairs(_mm256_maddubs_epi16(w[0], _mm256_sign_epi8(ld(x), w[2]))),
                            sumPairs(_mm256_maddubs_epi16(w[1], _mm256_sign_epi8(ld(x + 64), w[3]))));
  }
};

struct Q3Planes {
  static constexpr int kUnit = 4, kSplit = 2, kRegs = 4;
  template <int U>
  static void unit(const uint8_t* grp, int h, __m256i* w) {
    const __m256i t = ld(grp + 64 * U + 32 * h), hb = ld(grp + 128 + 32 * h);
    const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    w[0] = _mm256_or_si256(_mm256_and_si256(t, three), _mm256_and_si256(shift16<2 - 4 * U>(hb), four));
    w[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(t, 2), three), _mm256_and_si256(shift16<1 - 4 * U>(hb), four));
    w[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(t, 4), three), _mm256_and_si256(shift16<0 - 4 * U>(hb), four));
    w[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(t, 6), three), _mm256_and_si256(shift16<-1 - 4 * U>(hb), four));
  }
  static __m256i product(const __m256i* w, const int8_t* x) {
    return sumPairs(_mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(w[0], ld(x)), _mm256_maddubs_epi16(w[1], ld(x + 64))),
                                     _mm256_add_epi16(_mm256_maddubs_epi16(w[2], ld(x + 128)), _mm256_maddubs_epi16(w[3], ld(x + 192)))));
  }
};

struct Q2Planes {
  static constexpr int kUnit = 4, kSplit = 2, kRegs = 4;
  template <int U>
  static void unit(const uint8_t* grp, int h, __m256i* w) {
    const __m256i t = ld(grp + 64 * U + 32 * h), three = _mm256_set1_epi8(3);
    w[0] = _mm256_and_si256(t, three);
    w[1] = _mm256_and_si256(_mm256_srli_epi16(t, 2), three);
    w[2] = _mm256_and_si256(_mm256_srli_epi16(t, 4), three);
    w[3] = _mm256_and_si256(_mm256_srli_epi16(t, 6), three);
  }
  static __m256i product(const __m256i* w, const int8_t* x) { return Q3Planes::product(w, x); }
};

// ---- scales of half h (blocks 8h..8h+7 of group g) --------------------------------------

inline __m256 f16x8(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256 superScale(const uint8_t* p, int64_t g, int h) { return _mm256_set1_ps(f16ToF32(loadU16(p + (2 * g + h) * 2))); }

// Six-bit lanes (planes.h) of blocks 8h..8h+7: a and b as int32.
inline void sixBitLanes(const uint8_t* p, int h, __m256i* a, __m256i* b) {
  const __m256i n = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * h)));
  const __m256i shifts = _mm256_add_epi32(_mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14), _mm256_set1_epi32(16 * h));
  const __m256i ha = _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(ld32(p + 16))), shifts);
  const __m256i hb = _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(ld32(p + 20))), shifts);
  const __m256i three = _mm256_set1_epi32(3);
  *a = _mm256_or_si256(_mm256_and_si256(n, _mm256_set1_epi32(0x0F)), _mm256_slli_epi32(_mm256_and_si256(ha, three), 4));
  *b = _mm256_or_si256(_mm256_srli_epi32(n, 4), _mm256_slli_epi32(_mm256_and_si256(hb, three), 4));
}

template <Layout L>
struct OffsetScales {
  __m256 dw, mw;
  static OffsetScales load(const PlaneRow& row, int64_t g, int h) {
    OffsetScales s;
    if constexpr (L == Layout::Q5GK) {
      __m256i sc, mn;
      sixBitLanes(row.lanes + g * 24, h, &sc, &mn);
      s.dw = _mm256_mul_ps(superScale(row.d, g, h), _mm256_cvtepi32_ps(sc));
      s.mw = _mm256_mul_ps(superScale(row.m, g, h), _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setzero_si256(), mn)));
    } else {
      const int64_t b0 = g * kQ4GBlocks + 8 * h;
      s.dw = f16x8(row.d + b0 * 2);
      if constexpr (L == Layout::Q5G0) s.mw = _mm256_mul_ps(s.dw, _mm256_set1_ps(-16.0f));
      else s.mw = f16x8(row.m + b0 * 2);
    }
    return s;
  }
  void apply(const __m256i* dot, const Q4GActivations& a, int64_t t, int64_t b0, __m256& acc) const {
    const __m256 dx = _mm256_loadu_ps(a.dAt(t) + b0), sx = _mm256_loadu_ps(a.sAt(t) + b0);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[0]), _mm256_mul_ps(dw, dx), acc);
    acc = _mm256_fmadd_ps(mw, sx, acc);
  }
};

template <Layout L>
struct IQ4Scales {
  __m256 dw;
  static IQ4Scales load(const PlaneRow& row, int64_t g, int h) {
    IQ4Scales s;
    if constexpr (L == Layout::IQ4GX) {
      const uint8_t* p = row.lanes + g * 12;
      const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(ld32(p + 4 * h))),
                                                            _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                          _mm256_set1_epi32(0x0F));
      const __m256i shifts = _mm256_add_epi32(_mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14), _mm256_set1_epi32(16 * h));
      const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(ld32(p + 8))), shifts),
                                          _mm256_set1_epi32(3));
      const __m256i ls = _mm256_or_si256(lo, _mm256_slli_epi32(hi, 4));
      s.dw = _mm256_mul_ps(superScale(row.d, g, h), _mm256_cvtepi32_ps(_mm256_sub_epi32(ls, _mm256_set1_epi32(32))));
    } else {
      s.dw = f16x8(row.d + (g * kQ4GBlocks + 8 * h) * 2);
    }
    return s;
  }
  void apply(const __m256i* dot, const Q4GActivations& a, int64_t t, int64_t b0, __m256& acc) const {
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[0]), _mm256_mul_ps(dw, _mm256_loadu_ps(a.dAt(t) + b0)), acc);
  }
};

struct Q3Scales {
  __m256 dA, dB;
  static Q3Scales load(const PlaneRow& row, int64_t g, int h) {
    __m256i a, b;
    sixBitLanes(row.lanes + g * 24, h, &a, &b);
    const __m256 d = superScale(row.d, g, h);
    const __m256i bias = _mm256_set1_epi32(32);
    return {_mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(a, bias))),
            _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(b, bias)))};
  }
  void apply(const __m256i* dot, const Q4GActivations& a, int64_t t, int64_t b0, __m256& acc) const {
    const __m256 dx = _mm256_loadu_ps(a.dAt(t) + b0);
    const __m256i ia = _mm256_sub_epi32(dot[0], _mm256_slli_epi32(ld(a.sumAAt(t) + b0), 2));
    const __m256i ib = _mm256_sub_epi32(dot[1], _mm256_slli_epi32(ld(a.sumBAt(t) + b0), 2));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia), _mm256_mul_ps(dA, dx), acc);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ib), _mm256_mul_ps(dB, dx), acc);
  }
};

struct Q2Scales {
  __m256 dA, dB, dmin;
  __m256i mnA, mnB;
  static Q2Scales load(const PlaneRow& row, int64_t g, int h) {
    const uint8_t* p = row.lanes + g * 32 + 8 * h;
    const __m256i la = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m256i lb = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16)));
    const __m256i low = _mm256_set1_epi32(0x0F);
    const __m256 d = superScale(row.d, g, h);
    return {_mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(la, low))),
            _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(lb, low))), superScale(row.m, g, h),
            _mm256_srli_epi32(la, 4), _mm256_srli_epi32(lb, 4)};
  }
  void apply(const __m256i* dot, const Q4GActivations& a, int64_t t, int64_t b0, __m256& acc) const {
    const __m256 dx = _mm256_loadu_ps(a.dAt(t) + b0);
    const __m256i mins = _mm256_add_epi32(_mm256_mullo_epi32(mnA, ld(a.sumAAt(t) + b0)), _mm256_mullo_epi32(mnB, ld(a.sumBAt(t) + b0)));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[0]), _mm256_mul_ps(dA, dx), acc);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[1]), _mm256_mul_ps(dB, dx), acc);
    acc = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_mul_ps(dmin, dx), acc);
  }
};

// Tile constants of the AVX2 plane kernels, in one place for per-host tuning (issue 27).
struct PlaneTiles {
  static constexpr int kDecodeRows = 4;
  static constexpr int kPrefillRows = 2;
  static constexpr int kPrefillTokens = 4;
};

template <Layout L, class Planes, class Scales>
struct PlaneAvx2 {
  static constexpr int kDecodeRows = PlaneTiles::kDecodeRows;
  static constexpr int kPrefillRows = PlaneTiles::kPrefillRows;
  static constexpr int kPrefillTokens = PlaneTiles::kPrefillTokens;

  template <int U, int R, int T>
  static void unit(const PlaneRow* rows, const Q4GActivations& a, int64_t g, int h, int64_t t0,
                   __m256i (&dot)[Planes::kSplit][R][T]) {
    constexpr int K = Planes::kUnit;
    constexpr int s = Planes::kSplit == 2 && U * K >= 4 ? 1 : 0;
    for (int r = 0; r < R; ++r) {
      __m256i w[Planes::kRegs];
      Planes::template unit<U>(rows[r].planes + g * planeGroupBytes(L), h, w);
      for (int t = 0; t < T; ++t)
        dot[s][r][t] = _mm256_add_epi32(dot[s][r][t], Planes::product(w, a.q(t0 + t) + g * 512 + U * K * 64 + 32 * h));
    }
  }

  template <int R, int T, bool Ahead = (T == 1 && R > 1)>
  static void tile(const LinearWeight& W, const Q4GActivations& a, int64_t r0, int64_t t0, float* y, int64_t ldy) {
    const size_t rowBytes = planeRowBytes(W.cols, L);
    const int64_t groups = a.groups;
    PlaneRow rows[R];
    for (int r = 0; r < R; ++r) rows[r] = planeRow(weightData(W), W.cols, L, r0 + r);
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    for (int64_t g = 0; g < groups; ++g) {
      if constexpr (Ahead) prefetchAhead(a.prefetch, rows[0].planes, rowBytes * R, g, groups);
      for (int h = 0; h < 2; ++h) {
        __m256i dot[Planes::kSplit][R][T];
        for (int s = 0; s < Planes::kSplit; ++s)
          for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t) dot[s][r][t] = _mm256_setzero_si256();
        [&]<int... U>(std::integer_sequence<int, U...>) {
          (unit<U, R, T>(rows, a, g, h, t0, dot), ...);
        }(std::make_integer_sequence<int, 8 / Planes::kUnit>{});
        const int64_t b0 = g * kQ4GBlocks + 8 * h;
        for (int r = 0; r < R; ++r) {
          const Scales sc = Scales::load(rows[r], g, h);
          for (int t = 0; t < T; ++t) {
            __m256i d[Planes::kSplit];
            for (int s = 0; s < Planes::kSplit; ++s) d[s] = dot[s][r][t];
            sc.apply(d, a, t0 + t, b0, acc[r][t]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = hsum256(acc[r][t]);
  }
};

// The tiles of plane layout L: its unpacker and scales.
template <Layout L>
constexpr auto planeTiles() {
  if constexpr (L == Layout::Q3G) return PlaneAvx2<L, Q3Planes, Q3Scales>{};
  else if constexpr (L == Layout::Q2G) return PlaneAvx2<L, Q2Planes, Q2Scales>{};
  else if constexpr (L == Layout::IQ4G || L == Layout::IQ4GX) return PlaneAvx2<L, IQ4Planes, IQ4Scales<L>>{};
  else return PlaneAvx2<L, Q5Planes, OffsetScales<L>>{};  // Q5G0, Q5G1, Q5GK
}

}  // namespace

template <Layout L>
void IsaKernels<Isa::Avx2>::planes(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                                  ThreadPool& pool, KernelScratch& scratch) {
  q4gMatmul<decltype(planeTiles<L>())>(W, x, n, ldx, y, ldy, pool, scratch);
}
template MatmulFn IsaKernels<Isa::Avx2>::planes<Layout::Q5G0>;
template MatmulFn IsaKernels<Isa::Avx2>::planes<Layout::Q5G1>;
template MatmulFn IsaKernels<Isa::Avx2>::planes<Layout::Q5GK>;
template MatmulFn IsaKernels<Isa::Avx2>::planes<Layout::IQ4G>;
template MatmulFn IsaKernels<Isa::Avx2>::planes<Layout::IQ4GX>;
template MatmulFn IsaKernels<Isa::Avx2>::planes<Layout::Q3G>;
template MatmulFn IsaKernels<Isa::Avx2>::planes<Layout::Q2G>;

}  // namespace prism::kernels
