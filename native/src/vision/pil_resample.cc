#include "vision/pil_resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace prism {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Resample.c's PRECISION_BITS

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x = x * M_PI;
  return std::sin(x) / x;
}

double lanczos(double x) { return -3.0 <= x && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0; }

double bilinear(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// One axis's coefficients (precompute_coeffs + normalize_coeffs_8bpc): per output index, the
// first input index, the count, and ksize fixed-point weights.
struct Coeffs {
  int64_t ksize = 0;
  std::vector<int64_t> first, count;
  std::vector<int32_t> k;
};

Coeffs coefficients(int64_t inSize, int64_t outSize, PilFilter f) {
  double (*fn)(double) = f == PilFilter::Lanczos ? lanczos : f == PilFilter::Bilinear ? bilinear : bicubic;
  const double support0 = f == PilFilter::Lanczos ? 3.0 : f == PilFilter::Bilinear ? 1.0 : 2.0;
  const double scale = static_cast<double>(inSize) / static_cast<double>(outSize);
  const double filterscale = std::max(scale, 1.0);
  const double support = support0 * filterscale;
  Coeffs c;
  c.ksize = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  c.first.resize(outSize);
  c.count.resize(outSize);
  c.k.assign(static_cast<size_t>(outSize * c.ksize), 0);
  std::vector<double> w(c.ksize);
  const double ss = 1.0 / filterscale;
  for (int64_t xx = 0; xx < outSize; xx++) {
    const double center = (static_cast<double>(xx) + 0.5) * scale;
    int64_t xmin = static_cast<int64_t>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int64_t xmax = static_cast<int64_t>(center + support + 0.5);
    if (xmax > inSize) xmax = inSize;
    xmax -= xmin;
    double ww = 0.0;
    for (int64_t x = 0; x < xmax; x++) {
      w[x] = fn((static_cast<double>(x + xmin) - center + 0.5) * ss);
      ww += w[x];
    }
    for (int64_t x = 0; x < xmax; x++) {
      const double v = ww != 0.0 ? w[x] / ww : w[x];
      const double fixed = v * (1 << kPrecisionBits);
      c.k[xx * c.ksize + x] = static_cast<int32_t>(v < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    c.first[xx] = xmin;
    c.count[xx] = xmax;
  }
  return c;
}

inline uint8_t clip8(int32_t v) {
  const int32_t s = v >> kPrecisionBits;  // arithmetic shift, as the lookup table's index
  return static_cast<uint8_t>(s < 0 ? 0 : s > 255 ? 255 : s);
}

// out[y][xx] = sum_x in[y][first + x] k[x]: rows [y0, y1) of the input.
std::vector<uint8_t> horizontal(const uint8_t* in, int64_t w, int64_t y0, int64_t y1, int64_t outW, const Coeffs& c) {
  std::vector<uint8_t> out(static_cast<size_t>((y1 - y0) * outW * 3));
  for (int64_t y = y0; y < y1; y++) {
    const uint8_t* row = in + y * w * 3;
    uint8_t* o = &out[(y - y0) * outW * 3];
    for (int64_t xx = 0; xx < outW; xx++) {
      const int32_t* k = &c.k[xx * c.ksize];
      const uint8_t* p = row + c.first[xx] * 3;
      int32_t s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
      for (int64_t x = 0; x < c.count[xx]; x++) {
        s0 += p[x * 3 + 0] * k[x];
        s1 += p[x * 3 + 1] * k[x];
        s2 += p[x * 3 + 2] * k[x];
      }
      o[xx * 3 + 0] = clip8(s0);
      o[xx * 3 + 1] = clip8(s1);
      o[xx * 3 + 2] = clip8(s2);
    }
  }
  return out;
}

// out[yy][x] = sum_y in[first - shift + y][x] k[y].
std::vector<uint8_t> vertical(const uint8_t* in, int64_t w, int64_t outH, int64_t shift, const Coeffs& c) {
  std::vector<uint8_t> out(static_cast<size_t>(outH * w * 3));
  for (int64_t yy = 0; yy < outH; yy++) {
    const int32_t* k = &c.k[yy * c.ksize];
    const uint8_t* base = in + (c.first[yy] - shift) * w * 3;
    uint8_t* o = &out[yy * w * 3];
    for (int64_t x = 0; x < w * 3; x++) {
      int32_t s = 1 << (kPrecisionBits - 1);
      for (int64_t y = 0; y < c.count[yy]; y++) s += base[y * w * 3 + x] * k[y];
      o[x] = clip8(s);
    }
  }
  return out;
}

}  // namespace

std::vector<uint8_t> pilResizeRgb(const uint8_t* in, int64_t w, int64_t h, int64_t outW, int64_t outH, PilFilter filter) {
  if (outW == w && outH == h) return std::vector<uint8_t>(in, in + w * h * 3);
  const bool needH = outW != w, needV = outH != h;
  const Coeffs ch = coefficients(w, outW, filter);
  const Coeffs cv = coefficients(h, outH, filter);
  if (!needH) return vertical(in, w, outH, 0, cv);
  if (needV && !(outW > w && outH > h) && w * outH < outW * h) {
    // Pillow 13 runs the vertical pass first here (measured against it, see the header).
    const std::vector<uint8_t> tmp = vertical(in, w, outH, 0, cv);
    return horizontal(tmp.data(), w, 0, outH, outW, ch);
  }
  // ImagingResampleInner: the horizontal pass covers only the rows the vertical one reads.
  const int64_t first = needV ? cv.first[0] : 0;
  const int64_t last = needV ? cv.first[outH - 1] + cv.count[outH - 1] : h;
  const std::vector<uint8_t> tmp = horizontal(in, w, first, last, outW, ch);
  return needV ? vertical(tmp.data(), outW, outH, first, cv) : tmp;
}

}  // namespace prism
