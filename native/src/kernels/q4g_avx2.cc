// Q4G kernels with AVX2 (internal.h, Layout::Q4G16/32): the AVX-512 kernel's scheme on
// 256-bit halves (half h holds blocks 8h..8h+7 of the group). maddubs multiplies the
// unsigned nibbles by the int8 activations (|pair sum| ≤ 2·15·127), the 8 maddubs of a
// group are summed in int16 (≤ 8·2·15·127 = 30480, no saturation), and one madd per half
// widens to the per-block int32 lanes.
#include "kernels/isa_kernels.h"
#include "kernels/q4g.h"
#include "kernels/vec_avx2.h"

namespace prism::kernels {
namespace {

template <Layout L>
inline __m256 scales8(const uint8_t* p) {
  if constexpr (L != Layout::Q4G32) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  else return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
}

template <Layout L>
struct Q4GAvx2 {
  static constexpr int kDecodeRows = 4;
  static constexpr int kPrefillRows = 2;
  static constexpr int kPrefillTokens = 4;

  template <int R, int T, bool Ahead = (T == 1 && R > 1)>
  static void tile(const LinearWeight& W, const Q4GActivations& a, int64_t r0, int64_t t0, float* y, int64_t ldy) {
    const size_t rowBytes = L == Layout::Q4GK ? q4gkRowBytes(W.cols) : q4gRowBytes(W.cols, L);
    const size_t sb = q4gScaleBytes(L);
    const int64_t groups = a.groups;
    const uint8_t* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = weightData(W) + rowBytes * static_cast<size_t>(r0 + r);
    const size_t dOff = static_cast<size_t>(groups) * 256, mOff = static_cast<size_t>(a.padded) * sb;
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    const __m256i low = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    for (int64_t g = 0; g < groups; ++g) {
      if constexpr (Ahead) prefetchAhead(a.prefetch, rows[0], rowBytes * R, g, groups);
      for (int h = 0; h < 2; ++h) {
        __m256i sum[R][T];
        for (int r = 0; r < R; ++r)
          for (int t = 0; t < T; ++t) sum[r][t] = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
          for (int r = 0; r < R; ++r) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + g * 256 + c * 64 + h * 32));
            const __m256i wl = _mm256_and_si256(v, low), wh = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
            for (int t = 0; t < T; ++t) {
              const int8_t* xq = a.q(t0 + t) + g * 512 + c * 128 + h * 32;
              const __m256i xl = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq));
              const __m256i xh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 64));
              sum[r][t] = _mm256_add_epi16(sum[r][t], _mm256_add_epi16(_mm256_maddubs_epi16(wl, xl),
                                                                       _mm256_maddubs_epi16(wh, xh)));
            }
          }
        }
        for (int r = 0; r < R; ++r) {
          __m256 dw, mw;
          if constexpr (L == Layout::Q4GK) {  // half h is exactly super-block 2g + h
            const uint8_t* scs = rows[r] + dOff;
            const uint8_t* ds = scs + 2 * a.padded;
            const int64_t sbk = 2 * g + h;
            auto bytes8 = [](const uint8_t* q) {
              return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
            };
            dw = _mm256_mul_ps(_mm256_set1_ps(f16ToF32(loadU16(ds + sbk * 2))), bytes8(scs + sbk * 8));
            mw = _mm256_mul_ps(_mm256_set1_ps(-f16ToF32(loadU16(ds + a.padded / 8 * 2 + sbk * 2))),
                               bytes8(scs + a.padded + sbk * 8));
          } else {
            const uint8_t* ds = rows[r] + dOff + (g * kQ4GBlocks + h * 8) * sb;
            dw = scales8<L>(ds);
            if constexpr (L == Layout::Q4G0) mw = _mm256_mul_ps(dw, _mm256_set1_ps(-8.0f));
            else mw = scales8<L>(ds + mOff);
          }
          for (int t = 0; t < T; ++t) {
            const __m256 dx = _mm256_loadu_ps(a.dAt(t0 + t) + g * kQ4GBlocks + h * 8);
            const __m256 sx = _mm256_loadu_ps(a.sAt(t0 + t) + g * kQ4GBlocks + h * 8);
            const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(sum[r][t], ones));
            acc[r][t] = _mm256_fmadd_ps(dot, _mm256_mul_ps(dw, dx), acc[r][t]);
            acc[r][t] = _mm256_fmadd_ps(mw, sx, acc[r][t]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = hsum256(acc[r][t]);
  }
};

// Q6G on AVX2 (see q4g_avx512.cc): maddubs of q (0..63) by int8 x, two per int16 sum
// (≤ 2·2·63·127 = 32004), madd to the per-block int32 lanes of each 128-bit half.
struct Q6GAvx2 {
  static constexpr int kDecodeRows = 4;
  // Prefill tile 2 rows × 4 tokens (was 2 × 2): 3B layer shapes, 512 tokens, 1 thread,
  // four alternating runs of each build: 153-162 → 185-194 GFLOP/s. (AVX-512 keeps 2 × 2:
  // 4 × 2 and 2 × 3 measured within 3% of it, 2 × 4 −17%.)
  static constexpr int kPrefillRows = 2;
  static constexpr int kPrefillTokens = 4;

  template <int R, int T, bool Ahead = (T == 1 && R > 1)>
  static void tile(const LinearWeight& W, const Q4GActivations& a, int64_t r0, int64_t t0, float* y, int64_t ldy) {
    const size_t rowBytes = q6gRowBytes(W.cols);
    const int64_t groups = a.groups, padded = a.padded;
    const uint8_t* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = weightData(W) + rowBytes * static_cast<size_t>(r0 + r);
    const size_t dOff = static_cast<size_t>(groups) * 384;
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    const __m256i low = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(0x30), ones = _mm256_set1_epi16(1);
    for (int64_t g = 0; g < groups; ++g) {
      if constexpr (Ahead) prefetchAhead(a.prefetch, rows[0], rowBytes * R, g, groups);
      for (int h = 0; h < 2; ++h) {  // blocks 8h..8h+7 of the group
        __m256i dot[2][R][T];
        for (int e = 0; e < 2; ++e) {
          for (int r = 0; r < R; ++r) {
            const uint8_t* grp = rows[r] + g * 384 + h * 32;
            auto ld = [](const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
            const __m256i l0 = ld(grp + (2 * e) * 64), l1 = ld(grp + (2 * e + 1) * 64), hb = ld(grp + 256 + e * 64);
            const __m256i w0 = _mm256_or_si256(_mm256_and_si256(l0, low), _mm256_and_si256(_mm256_slli_epi16(hb, 4), two));
            const __m256i w1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low),
                                               _mm256_and_si256(_mm256_slli_epi16(hb, 2), two));
            const __m256i w2 = _mm256_or_si256(_mm256_and_si256(l1, low), _mm256_and_si256(hb, two));
            const __m256i w3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low),
                                               _mm256_and_si256(_mm256_srli_epi16(hb, 2), two));
            for (int t = 0; t < T; ++t) {
              const int8_t* xq = a.q(t0 + t) + g * 512 + (4 * e) * 64 + h * 32;
              const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(w0, ld(reinterpret_cast<const uint8_t*>(xq))),
                                                   _mm256_maddubs_epi16(w1, ld(reinterpret_cast<const uint8_t*>(xq + 64))));
              const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(w2, ld(reinterpret_cast<const uint8_t*>(xq + 128))),
                                                   _mm256_maddubs_epi16(w3, ld(reinterpret_cast<const uint8_t*>(xq + 192))));
              dot[e][r][t] = _mm256_add_epi32(_mm256_madd_epi16(s01, ones), _mm256_madd_epi16(s23, ones));
            }
          }
        }
        for (int r = 0; r < R; ++r) {
          const int64_t b0 = g * kQ4GBlocks + h * 8;
          const int8_t* sa = reinterpret_cast<const int8_t*>(rows[r] + dOff) + b0;
          const __m256 d = _mm256_set1_ps(f16ToF32(loadU16(rows[r] + dOff + 2 * padded + (2 * g + h) * 2)));  // super-block 2g + h
          const __m256 dA = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sa)))));
          const __m256 dB = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sa + padded)))));
          for (int t = 0; t < T; ++t) {
            const __m256 dx = _mm256_loadu_ps(a.dAt(t0 + t) + b0);
            const __m256i xa = _mm256_slli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.sumAAt(t0 + t) + b0)), 5);
            const __m256i xb = _mm256_slli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.sumBAt(t0 + t) + b0)), 5);
            acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(dot[0][r][t], xa)), _mm256_mul_ps(dA, dx), acc[r][t]);
            acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(dot[1][r][t], xb)), _mm256_mul_ps(dB, dx), acc[r][t]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = hsum256(acc[r][t]);
  }
};

// Q8G on AVX2: maddubs cannot take unsigned bytes up to 255 against int8 without
// saturating, so the bytes go back to signed (xor 0x80) and the sign moves onto x
// (|w|·sign(x, w), pair sums ≤ 2·128·127), one madd per vector.
struct Q8GAvx2 {
  static constexpr int kDecodeRows = 4;
  static constexpr int kPrefillRows = 2;
  static constexpr int kPrefillTokens = 4;

  template <int R, int T, bool Ahead = (T == 1 && R > 1)>
  static void tile(const LinearWeight& W, const Q4GActivations& a, int64_t r0, int64_t t0, float* y, int64_t ldy) {
    const size_t rowBytes = q8gRowBytes(W.cols);
    const int64_t groups = a.groups;
    const uint8_t* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = weightData(W) + rowBytes * static_cast<size_t>(r0 + r);
    const size_t dOff = static_cast<size_t>(groups) * 512;
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80)), ones = _mm256_set1_epi16(1);
    for (int64_t g = 0; g < groups; ++g) {
      if constexpr (Ahead) prefetchAhead(a.prefetch, rows[0], rowBytes * R, g, groups);
      for (int h = 0; h < 2; ++h) {
        __m256i dot[R][T];
        for (int r = 0; r < R; ++r)
          for (int t = 0; t < T; ++t) dot[r][t] = _mm256_setzero_si256();
        for (int v = 0; v < 8; ++v) {
          for (int r = 0; r < R; ++r) {
            const __m256i w = _mm256_xor_si256(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + g * 512 + v * 64 + h * 32)), flip);
            const __m256i wAbs = _mm256_abs_epi8(w);
            for (int t = 0; t < T; ++t) {
              const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.q(t0 + t) + g * 512 + v * 64 + h * 32));
              dot[r][t] = _mm256_add_epi32(dot[r][t], _mm256_madd_epi16(_mm256_maddubs_epi16(wAbs, _mm256_sign_epi8(x, w)), ones));
            }
          }
        }
        const int64_t b0 = g * kQ4GBlocks + h * 8;
        for (int r = 0; r < R; ++r) {
          const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[r] + dOff + b0 * 2)));
          for (int t = 0; t < T; ++t)
            acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r][t]), _mm256_mul_ps(dw, _mm256_loadu_ps(a.dAt(t0 + t) + b0)), acc[r][t]);
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = hsum256(acc[r][t]);
  }
};

// The tiles of group layout L.
template <Layout L>
constexpr auto groupTiles() {
  if constexpr (L == Layout::Q6G) return Q6GAvx2{};
  else if constexpr (L == Layout::Q8G) return Q8GAvx2{};
  else return Q4GAvx2<L>{};  // Q4G0, Q4G16, Q4G32, Q4GK
}

}  // namespace

template <Layout L>
void IsaKernels<Isa::Avx2>::groups(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                                  ThreadPool& pool, KernelScratch& scratch) {
  q4gMatmul<decltype(groupTiles<L>())>(W, x, n, ldx, y, ldy, pool, scratch);
}
template MatmulFn IsaKernels<Isa::Avx2>::groups<Layout::Q4G0>;
template MatmulFn IsaKernels<Isa::Avx2>::groups<Layout::Q4G16>;
template MatmulFn IsaKernels<Isa::Avx2>::groups<Layout::Q4G32>;
template MatmulFn IsaKernels<Isa::Avx2>::groups<Layout::Q4GK>;
template MatmulFn IsaKernels<Isa::Avx2>::groups<Layout::Q6G>;
template MatmulFn IsaKernels<Isa::Avx2>::groups<Layout::Q8G>;

}  // namespace prism::kernels
