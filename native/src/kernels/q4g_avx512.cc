// Q4G kernels with AVX-512 VNNI (internal.h, Layout::Q4G16/32): per 16-block group and row,
// 4 loads of 64 nibble bytes unpack to 8 vectors of 64 values whose 32-bit lanes are the
// 16 blocks, so 8 dpbusd leave each block's integer dot product in its own lane; one
// conversion and two FMAs per group then apply d_w·d_x and the m_w·s_x offset, 16 blocks
// at a time. No per-block horizontal sums, no per-block broadcasts.
#include "kernels/isa_kernels.h"
#include "kernels/q4g.h"
#include "kernels/wide_avx512.h"

namespace prism::kernels {
namespace {

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

template <Layout L>
inline __m512 scales16(const uint8_t* p) {
  if constexpr (L != Layout::Q4G32) return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  else return _mm512_loadu_ps(reinterpret_cast<const float*>(p));
}

// value = dw·q + mw per block: the f16/f32 scale and offset of the file (Q4_0: mw = −8·dw), or
// Q4_K's super-block d and dmin times each block's 6-bit scale and min. The token-wide tiles'
// scale step: the same operations as the row tiles' below, kept apart so that the tuned
// decode tiles stay as they were (the bit-for-bit test in native/kernels.test.ts holds the two
// together), and so for Q6GScales and Q8GScales.
template <Layout L>
struct Q4GScales {
  __m512 dw, mw;
  static Q4GScales load(const uint8_t* row, const Q4GActivations& a, int64_t g) {
    Q4GScales s;
    const size_t sb = q4gScaleBytes(L);
    const size_t dOff = static_cast<size_t>(a.groups) * 256;
    if constexpr (L == Layout::Q4GK) {
      // lanes 0-7: super-block 2g, lanes 8-15: 2g+1.
      const uint8_t* scs = row + dOff;
      const uint8_t* ds = scs + 2 * a.padded;
      const __m512i pick = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
      int32_t dPair, mPair;
      std::memcpy(&dPair, ds + g * 4, 4);
      std::memcpy(&mPair, ds + a.padded / 8 * 2 + g * 4, 4);
      const __m512 d = _mm512_permutexvar_ps(pick, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(dPair))));
      const __m512 dm = _mm512_permutexvar_ps(pick, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(mPair))));
      auto bytes16 = [](const uint8_t* q) {
        return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))));
      };
      s.dw = _mm512_mul_ps(d, bytes16(scs + g * kQ4GBlocks));
      s.mw = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(dm, bytes16(scs + a.padded + g * kQ4GBlocks)));
    } else {
      const uint8_t* ds = row + dOff + g * kQ4GBlocks * sb;
      s.dw = scales16<L>(ds);
      if constexpr (L == Layout::Q4G0) s.mw = _mm512_mul_ps(s.dw, _mm512_set1_ps(-8.0f));
      else s.mw = scales16<L>(ds + static_cast<size_t>(a.padded) * sb);
    }
    return s;
  }
  void apply(const __m512i* dot, const Q4GActivations& a, int64_t t, int64_t g, __m512& acc) const {
    const __m512 dx = _mm512_loadu_ps(a.dAt(t) + g * kQ4GBlocks);
    const __m512 sx = _mm512_loadu_ps(a.sAt(t) + g * kQ4GBlocks);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[0]), _mm512_mul_ps(dw, dx), acc);
    acc = _mm512_fmadd_ps(mw, sx, acc);
  }
};

template <Layout L>
struct Q4GAvx512 {
  static constexpr int kDecodeRows = 4;
  // Taller decode tiles for hosts where the tuning picks them (decode_tuning.h): 8 rows use
  // 16 accumulator/dot registers of the 32.
  static constexpr int kMaxDecodeRows = 8;
  // Prefill tile: 4 rows × 2 tokens, not 2 × 4. Per 64 weight bytes the unpack (load, 2
  // masks, a shift) is shared by T tokens and each activation load by R rows; 4×2 issues
  // fewer instructions per dpbusd than 2×4 (the activations are the dpbusd's memory operand
  // either way) and keeps 16 accumulators in registers. The results are the same numbers:
  // every (row, token) sums its groups in the same order whatever the tile.
  // prefill_bench (3B layer shapes, 64 tokens, 1 thread CPU time, GMAC/s): Q4_0 181 → 265,
  // Q4_K 181 → 230; 3×4 220, 6×2 263-269, 4×3 254-260, 8×2 225-230, 2×6 172, 2×8 138.
  static constexpr int kPrefillRows = 4;
  static constexpr int kPrefillTokens = 2;

  // Token-wide tiles (wide_avx512.h) for batches of 2-15 tokens.
  static constexpr bool kWide = true;
  static constexpr int kSplit = 1;
  using WideRow = const uint8_t*;
  static size_t wideRowBytes(const LinearWeight& W) {
    return L == Layout::Q4GK ? q4gkRowBytes(W.cols) : q4gRowBytes(W.cols, L);
  }
  static const uint8_t* wideRow(const LinearWeight& W, int64_t r) {
    return weightData(W) + wideRowBytes(W) * static_cast<size_t>(r);
  }
  static const uint8_t* wideRowStart(const uint8_t* row) { return row; }
  static void unpack(const uint8_t* row, int64_t g, __m512i* w) {
    const __m512i low = _mm512_set1_epi8(0x0F);
    for (int c = 0; c < 4; ++c) {
      const __m512i v = _mm512_loadu_si512(row + g * 256 + c * 64);
      w[2 * c] = _mm512_and_si512(v, low);
      w[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
    }
  }
  static Q4GScales<L> wideScales(const uint8_t* row, const Q4GActivations& a, int64_t g) {
    return Q4GScales<L>::load(row, a, g);
  }

  template <int R, int T, bool Ahead = (T == 1 && R > 1)>
  static void tile(const LinearWeight& W, const Q4GActivations& a, int64_t r0, int64_t t0, float* y, int64_t ldy) {
    const size_t rowBytes = L == Layout::Q4GK ? q4gkRowBytes(W.cols) : q4gRowBytes(W.cols, L);
    const size_t sb = q4gScaleBytes(L);
    const int64_t groups = a.groups;
    const uint8_t* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = weightData(W) + rowBytes * static_cast<size_t>(r0 + r);
    const size_t dOff = static_cast<size_t>(groups) * 256;
    const size_t mOff = static_cast<size_t>(a.padded) * sb;
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    const __m512i low = _mm512_set1_epi8(0x0F);
    for (int64_t g = 0; g < groups; ++g) {
      if constexpr (Ahead) prefetchAhead(a.prefetch, rows[0], rowBytes * R, g, groups);
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
          const __m512i v = _mm512_loadu_si512(rows[r] + g * 256 + c * 64);
          const __m512i wl = _mm512_and_si512(v, low), wh = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
          for (int t = 0; t < T; ++t) {
            dot[r][t] = _mm512_dpbusd_epi32(dot[r][t], wl, xl[t]);
            dot[r][t] = _mm512_dpbusd_epi32(dot[r][t], wh, xh[t]);
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        __m512 dw, mw;
        if constexpr (L == Layout::Q4GK) {
          // lanes 0-7: super-block 2g, lanes 8-15: 2g+1.
          const uint8_t* scs = rows[r] + dOff;
          const uint8_t* ds = scs + 2 * a.padded;
          const __m512i pick = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
          int32_t dPair, mPair;
          std::memcpy(&dPair, ds + g * 4, 4);
          std::memcpy(&mPair, ds + a.padded / 8 * 2 + g * 4, 4);
          const __m512 d = _mm512_permutexvar_ps(pick, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(dPair))));
          const __m512 dm = _mm512_permutexvar_ps(pick, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(mPair))));
          auto bytes16 = [](const uint8_t* q) {
            return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))));
          };
          dw = _mm512_mul_ps(d, bytes16(scs + g * kQ4GBlocks));
          mw = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(dm, bytes16(scs + a.padded + g * kQ4GBlocks)));
        } else {
          const uint8_t* ds = rows[r] + dOff + g * kQ4GBlocks * sb;
          dw = scales16<L>(ds);
          if constexpr (L == Layout::Q4G0) mw = _mm512_mul_ps(dw, _mm512_set1_ps(-8.0f));
          else mw = scales16<L>(ds + mOff);
        }
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

// Q6G's scales: d·sc per sub-block (A: values 0-15 of each block, B: 16-31); apply takes
// (dot − 32·Σx) · d·sc · d_x per sub-block.
struct Q6GScales {
  __m512 dA, dB;
  static Q6GScales load(const uint8_t* row, const Q4GActivations& a, int64_t g) {
    const uint8_t* dOff = row + static_cast<size_t>(a.groups) * 384;
    // d of super-blocks 2g (lanes 0-7) and 2g + 1 (lanes 8-15).
    const int8_t* sa = reinterpret_cast<const int8_t*>(dOff) + g * kQ4GBlocks;
    int32_t dPair;
    std::memcpy(&dPair, dOff + 2 * a.padded + g * 4, 4);
    const __m512i pick = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512 d = _mm512_permutexvar_ps(pick, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(dPair))));
    return {_mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sa))))),
            _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sa + a.padded)))))};
  }
  void apply(const __m512i* dot, const Q4GActivations& a, int64_t t, int64_t g, __m512& acc) const {
    const __m512 dx = _mm512_loadu_ps(a.dAt(t) + g * kQ4GBlocks);
    const __m512i xa = _mm512_slli_epi32(_mm512_loadu_si512(a.sumAAt(t) + g * kQ4GBlocks), 5);
    const __m512i xb = _mm512_slli_epi32(_mm512_loadu_si512(a.sumBAt(t) + g * kQ4GBlocks), 5);
    const __m512 ia = _mm512_cvtepi32_ps(_mm512_sub_epi32(dot[0], xa));
    const __m512 ib = _mm512_cvtepi32_ps(_mm512_sub_epi32(dot[1], xb));
    acc = _mm512_fmadd_ps(ia, _mm512_mul_ps(dA, dx), acc);
    acc = _mm512_fmadd_ps(ib, _mm512_mul_ps(dB, dx), acc);
  }
};

// Q6G: q = lo | hi << 4 (0..63); dotA over vectors 0-3 (values 0-15 of each block), dotB
// over 4-7; (dot − 32·Σx) · d·sc · d_x per sub-block, 16 blocks per vector.
struct Q6GAvx512 {
  static constexpr int kDecodeRows = 4;
  static constexpr int kPrefillRows = 2;
  static constexpr int kPrefillTokens = 2;

  // Token-wide tiles (wide_avx512.h) for batches of 2-15 tokens.
  static constexpr bool kWide = true;
  static constexpr int kSplit = 2;
  using WideRow = const uint8_t*;
  static size_t wideRowBytes(const LinearWeight& W) { return q6gRowBytes(W.cols); }
  static const uint8_t* wideRow(const LinearWeight& W, int64_t r) {
    return weightData(W) + q6gRowBytes(W.cols) * static_cast<size_t>(r);
  }
  static const uint8_t* wideRowStart(const uint8_t* row) { return row; }
  static void unpack(const uint8_t* row, int64_t g, __m512i* w) {
    const __m512i low = _mm512_set1_epi8(0x0F), two = _mm512_set1_epi8(0x30);
    const uint8_t* grp = row + g * 384;
    for (int e = 0; e < 2; ++e) {
      const __m512i l0 = _mm512_loadu_si512(grp + (2 * e) * 64), l1 = _mm512_loadu_si512(grp + (2 * e + 1) * 64);
      const __m512i h = _mm512_loadu_si512(grp + 256 + e * 64);
      w[4 * e] = _mm512_or_si512(_mm512_and_si512(l0, low), _mm512_and_si512(_mm512_slli_epi16(h, 4), two));
      w[4 * e + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), low),
                                     _mm512_and_si512(_mm512_slli_epi16(h, 2), two));
      w[4 * e + 2] = _mm512_or_si512(_mm512_and_si512(l1, low), _mm512_and_si512(h, two));
      w[4 * e + 3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), low),
                                     _mm512_and_si512(_mm512_srli_epi16(h, 2), two));
    }
  }
  static Q6GScales wideScales(const uint8_t* row, const Q4GActivations& a, int64_t g) { return Q6GScales::load(row, a, g); }

  template <int R, int T, bool Ahead = (T == 1 && R > 1)>
  static void tile(const LinearWeight& W, const Q4GActivations& a, int64_t r0, int64_t t0, float* y, int64_t ldy) {
    const size_t rowBytes = q6gRowBytes(W.cols);
    const int64_t groups = a.groups, padded = a.padded;
    const uint8_t* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = weightData(W) + rowBytes * static_cast<size_t>(r0 + r);
    const size_t dOff = static_cast<size_t>(groups) * 384;
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    const __m512i low = _mm512_set1_epi8(0x0F), two = _mm512_set1_epi8(0x30);
    for (int64_t g = 0; g < groups; ++g) {
      if constexpr (Ahead) prefetchAhead(a.prefetch, rows[0], rowBytes * R, g, groups);
      __m512i dotA[R][T], dotB[R][T];
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) dotA[r][t] = dotB[r][t] = _mm512_setzero_si512();
      for (int e = 0; e < 2; ++e) {  // vectors 4e..4e+3: sub-block A (e = 0) or B (e = 1)
        __m512i x[4][T];
        for (int t = 0; t < T; ++t)
          for (int k = 0; k < 4; ++k) x[k][t] = _mm512_loadu_si512(a.q(t0 + t) + g * 512 + (4 * e + k) * 64);
        for (int r = 0; r < R; ++r) {
          const uint8_t* grp = rows[r] + g * 384;
          const __m512i l0 = _mm512_loadu_si512(grp + (2 * e) * 64), l1 = _mm512_loadu_si512(grp + (2 * e + 1) * 64);
          const __m512i h = _mm512_loadu_si512(grp + 256 + e * 64);
          // vector 4e+k: low nibbles of chunk 2e+k/2 (k even: low, odd: high), high bits 2k of h.
          const __m512i w0 = _mm512_or_si512(_mm512_and_si512(l0, low), _mm512_and_si512(_mm512_slli_epi16(h, 4), two));
          const __m512i w1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), low),
                                             _mm512_and_si512(_mm512_slli_epi16(h, 2), two));
          const __m512i w2 = _mm512_or_si512(_mm512_and_si512(l1, low), _mm512_and_si512(h, two));
          const __m512i w3 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), low),
                                             _mm512_and_si512(_mm512_srli_epi16(h, 2), two));
          for (int t = 0; t < T; ++t) {
            __m512i dsum = e == 0 ? dotA[r][t] : dotB[r][t];
            dsum = _mm512_dpbusd_epi32(dsum, w0, x[0][t]);
            dsum = _mm512_dpbusd_epi32(dsum, w1, x[1][t]);
            dsum = _mm512_dpbusd_epi32(dsum, w2, x[2][t]);
            dsum = _mm512_dpbusd_epi32(dsum, w3, x[3][t]);
            if (e == 0) dotA[r][t] = dsum;
            else dotB[r][t] = dsum;
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        // d of super-blocks 2g (lanes 0-7) and 2g + 1 (lanes 8-15).
        const int8_t* sa = reinterpret_cast<const int8_t*>(rows[r] + dOff) + g * kQ4GBlocks;
        int32_t dPair;
        std::memcpy(&dPair, rows[r] + dOff + 2 * padded + g * 4, 4);
        const __m512i pick = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
        const __m512 d = _mm512_permutexvar_ps(pick, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(dPair))));
        const __m512 dA = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sa)))));
        const __m512 dB = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sa + padded)))));
        for (int t = 0; t < T; ++t) {
          const __m512 dx = _mm512_loadu_ps(a.dAt(t0 + t) + g * kQ4GBlocks);
          const __m512i xa = _mm512_slli_epi32(_mm512_loadu_si512(a.sumAAt(t0 + t) + g * kQ4GBlocks), 5);
          const __m512i xb = _mm512_slli_epi32(_mm512_loadu_si512(a.sumBAt(t0 + t) + g * kQ4GBlocks), 5);
          const __m512 ia = _mm512_cvtepi32_ps(_mm512_sub_epi32(dotA[r][t], xa));
          const __m512 ib = _mm512_cvtepi32_ps(_mm512_sub_epi32(dotB[r][t], xb));
          acc[r][t] = _mm512_fmadd_ps(ia, _mm512_mul_ps(dA, dx), acc[r][t]);
          acc[r][t] = _mm512_fmadd_ps(ib, _mm512_mul_ps(dB, dx), acc[r][t]);
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
};

// Q8G's f16 scale per block; apply takes (dot − 128·Σx) · dw·d_x.
struct Q8GScales {
  __m512 dw;
  static Q8GScales load(const uint8_t* row, const Q4GActivations& a, int64_t g) {
    const uint8_t* p = row + static_cast<size_t>(a.groups) * 512 + g * kQ4GBlocks * 2;
    return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
  }
  void apply(const __m512i* dot, const Q4GActivations& a, int64_t t, int64_t g, __m512& acc) const {
    const int64_t b0 = g * kQ4GBlocks;
    const __m512i sx = _mm512_add_epi32(_mm512_loadu_si512(a.sumAAt(t) + b0), _mm512_loadu_si512(a.sumBAt(t) + b0));
    const __m512 dot32 = _mm512_cvtepi32_ps(_mm512_sub_epi32(dot[0], _mm512_slli_epi32(sx, 7)));
    acc = _mm512_fmadd_ps(dot32, _mm512_mul_ps(dw, _mm512_loadu_ps(a.dAt(t) + b0)), acc);
  }
};

// Q8G: 8 dpbusd of the unsigned (w + 128) bytes per group, minus 128·Σx per block.
struct Q8GAvx512 {
  // Two rows per decode tile (a Q8 tile of four 3B FFN-down rows is 35 KiB; the one-tile
  // prefetch of q4g.h then reaches 17 KiB ahead). Paired decode steps against four rows
  // (bench/kernels/ab-steps.ts, 2 threads): 3B Q8_0 0.916 and 0.944 of the step time, 1B
  // Q8_0 0.965. The same change lost for Q4G (3B Q4_0 0.976 and 1.010) and with Q6G (3B
  // Q4_K 1.047), and one row per tile is far slower (3B Q4_0 1.25). An earlier sequential
  // comparison had rejected two rows: it measured the machine's bandwidth swings.
  static constexpr int kDecodeRows = 2;
  static constexpr int kMaxDecodeRows = 8;  // 16 of the 32 registers, as Q4GAvx512
  // 4 rows × 2 tokens for prefill, as Q4GAvx512 (prefill_bench, 3B shapes, 64 tokens, 1
  // thread: 151 → 204-211 GMAC/s; 4×1 130).
  static constexpr int kPrefillRows = 4;
  static constexpr int kPrefillTokens = 2;

  // Token-wide tiles (wide_avx512.h) for batches of 2-15 tokens.
  static constexpr bool kWide = true;
  static constexpr int kSplit = 1;
  using WideRow = const uint8_t*;
  static size_t wideRowBytes(const LinearWeight& W) { return q8gRowBytes(W.cols); }
  static const uint8_t* wideRow(const LinearWeight& W, int64_t r) {
    return weightData(W) + q8gRowBytes(W.cols) * static_cast<size_t>(r);
  }
  static const uint8_t* wideRowStart(const uint8_t* row) { return row; }
  static void unpack(const uint8_t* row, int64_t g, __m512i* w) {
    for (int v = 0; v < 8; ++v) w[v] = _mm512_loadu_si512(row + g * 512 + v * 64);
  }
  static Q8GScales wideScales(const uint8_t* row, const Q4GActivations& a, int64_t g) { return Q8GScales::load(row, a, g); }

  template <int R, int T, bool Ahead = (T == 1 && R > 1)>
  static void tile(const LinearWeight& W, const Q4GActivations& a, int64_t r0, int64_t t0, float* y, int64_t ldy) {
    const size_t rowBytes = q8gRowBytes(W.cols);
    const int64_t groups = a.groups;
    const uint8_t* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = weightData(W) + rowBytes * static_cast<size_t>(r0 + r);
    const size_t dOff = static_cast<size_t>(groups) * 512;
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    for (int64_t g = 0; g < groups; ++g) {
      if constexpr (Ahead) prefetchAhead(a.prefetch, rows[0], rowBytes * R, g, groups);
      __m512i dot[R][T];
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) dot[r][t] = _mm512_setzero_si512();
      for (int v = 0; v < 8; ++v) {
        __m512i x[T];
        for (int t = 0; t < T; ++t) x[t] = _mm512_loadu_si512(a.q(t0 + t) + g * 512 + v * 64);
        for (int r = 0; r < R; ++r) {
          const __m512i w = _mm512_loadu_si512(rows[r] + g * 512 + v * 64);
          for (int t = 0; t < T; ++t) dot[r][t] = _mm512_dpbusd_epi32(dot[r][t], w, x[t]);
        }
      }
      for (int r = 0; r < R; ++r) {
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + dOff + g * kQ4GBlocks * 2)));
        for (int t = 0; t < T; ++t) {
          const int64_t b0 = g * kQ4GBlocks;
          const __m512i sx = _mm512_add_epi32(_mm512_loadu_si512(a.sumAAt(t0 + t) + b0), _mm512_loadu_si512(a.sumBAt(t0 + t) + b0));
          const __m512 dot32 = _mm512_cvtepi32_ps(_mm512_sub_epi32(dot[r][t], _mm512_slli_epi32(sx, 7)));
          acc[r][t] = _mm512_fmadd_ps(dot32, _mm512_mul_ps(dw, _mm512_loadu_ps(a.dAt(t0 + t) + b0)), acc[r][t]);
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
};

// The tiles of group layout L.
template <Layout L>
constexpr auto groupTiles() {
  if constexpr (L == Layout::Q6G) return Q6GAvx512{};
  else if constexpr (L == Layout::Q8G) return Q8GAvx512{};
  else return Q4GAvx512<L>{};  // Q4G0, Q4G16, Q4G32, Q4GK
}

}  // namespace

template <Layout L>
void IsaKernels<Isa::Avx512>::groups(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                                  ThreadPool& pool, KernelScratch& scratch) {
  q4gMatmul<decltype(groupTiles<L>())>(W, x, n, ldx, y, ldy, pool, scratch);
}
template MatmulFn IsaKernels<Isa::Avx512>::groups<Layout::Q4G0>;
template MatmulFn IsaKernels<Isa::Avx512>::groups<Layout::Q4G16>;
template MatmulFn IsaKernels<Isa::Avx512>::groups<Layout::Q4G32>;
template MatmulFn IsaKernels<Isa::Avx512>::groups<Layout::Q4GK>;
template MatmulFn IsaKernels<Isa::Avx512>::groups<Layout::Q6G>;
template MatmulFn IsaKernels<Isa::Avx512>::groups<Layout::Q8G>;

}  // namespace prism::kernels
