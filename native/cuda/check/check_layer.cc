// RMSNorm, SwiGLU and the RoPE / KV-write kernel against plain references with the CPU
// forward pass's formulas (native/src/simd.h, native/src/forward.cc).
#include <cstring>

#include "check.h"
#include "kernels/internal.h"

namespace prism::cudacheck {

uint16_t toHalf(float f) { return kernels::f32ToF16(f); }
float fromHalf(uint16_t h) { return kernels::f16ToF32(h); }

Result checkRmsNorm(const Options& o) {
  Result r{"rmsNorm", 0, 0, 2e-6, ""};
  std::mt19937_64 rng(o.seed * 31);
  for (int64_t d : {64, 576, 2048, 4000}) {
    for (int64_t rows : {1, 7}) {
      const std::vector<float> x = randomVector(rng, static_cast<size_t>(rows * d), 3.0f, 0.5f);
      const std::vector<float> w = randomVector(rng, static_cast<size_t>(d), 0.1f, 1.0f);
      const float eps = 1e-5f;
      std::vector<double> ref(x.size());
      for (int64_t i = 0; i < rows; i++) {
        double ss = 0;
        for (int64_t k = 0; k < d; k++) ss += static_cast<double>(x[i * d + k]) * x[i * d + k];
        const double scale = 1.0 / std::sqrt(ss / static_cast<double>(d) + eps);
        for (int64_t k = 0; k < d; k++) ref[i * d + k] = x[i * d + k] * scale * w[k];
      }
      std::vector<float> out(x.size());
      o.lib->check(o.lib->pc_check_rms_norm(o.device, x.data(), rows, d, w.data(), eps, out.data()), "pc_check_rms_norm");
      r.observe(relError(out, ref), "d=" + std::to_string(d) + " rows=" + std::to_string(rows));
    }
  }
  return r;
}

Result checkSwiglu(const Options& o) {
  Result r{"swiglu", 0, 0, 2e-6, ""};
  std::mt19937_64 rng(o.seed * 37);
  for (int64_t inter : {64, 1536, 8192}) {
    const int64_t rows = 3;
    const std::vector<float> gu = randomVector(rng, static_cast<size_t>(rows * 2 * inter), 2.0f);
    std::vector<double> ref(static_cast<size_t>(rows * inter));
    for (int64_t t = 0; t < rows; t++)
      for (int64_t k = 0; k < inter; k++) {
        const double g = gu[t * 2 * inter + k];
        ref[t * inter + k] = g / (1.0 + std::exp(-g)) * gu[t * 2 * inter + inter + k];
      }
    std::vector<float> out(ref.size());
    o.lib->check(o.lib->pc_check_swiglu(o.device, gu.data(), rows, inter, out.data()), "pc_check_swiglu");
    r.observe(relError(out, ref), "inter=" + std::to_string(inter));
  }
  return r;
}

std::vector<Result> checkRopeKv(const Options& o) {
  // q in f32 (cos/sin of a double angle, as the CPU); k and v as the cache stores them (f16:
  // within its rounding of the f32 reference).
  Result r{"rope (q)", 0, 0, 1e-5, ""};
  Result kvr{"rope + KV write (k, v in f16)", 0, 0, 1e-3, ""};
  std::mt19937_64 rng(o.seed * 41);
  struct Case {
    int heads, kvHeads, hd;
    bool neox, bias, qkNorm;
    double theta;
  };
  const Case cases[] = {{4, 2, 64, false, false, false, 500000.0},
                        {8, 2, 128, true, true, false, 1000000.0},
                        {6, 6, 96, true, false, true, 10000.0},
                        {4, 1, 256, false, true, true, 10000.0}};
  const std::vector<int32_t> positions = {0, 1, 17, 1000, 131071, 500000, 3};
  for (const Case& c : cases) {
    const int64_t T = static_cast<int64_t>(positions.size()), hd = c.hd, half = hd / 2;
    const int64_t qDim = c.heads * hd, kvDim = c.kvHeads * hd, qkvDim = qDim + 2 * kvDim;
    const std::vector<float> qkv = randomVector(rng, static_cast<size_t>(T * qkvDim), 1.0f);
    std::vector<float> inv(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; i++) inv[i] = static_cast<float>(1.0 / std::pow(c.theta, 2.0 * i / hd));
    const std::vector<float> bias = randomVector(rng, static_cast<size_t>(qkvDim), 0.3f);
    const std::vector<float> qn = randomVector(rng, static_cast<size_t>(hd), 0.2f, 1.0f);
    const std::vector<float> kn = randomVector(rng, static_cast<size_t>(hd), 0.2f, 1.0f);
    const float qScale = 1.0f / std::sqrt(static_cast<float>(hd)), eps = 1e-6f;
    // Reference.
    std::vector<double> qRef(static_cast<size_t>(T * qDim));
    std::vector<float> kRef(static_cast<size_t>(T * kvDim)), vRef(static_cast<size_t>(T * kvDim));
    for (int64_t t = 0; t < T; t++) {
      for (int h = 0; h < c.heads + 2 * c.kvHeads; h++) {
        std::vector<float> v(static_cast<size_t>(hd));
        for (int64_t i = 0; i < hd; i++) v[i] = qkv[t * qkvDim + h * hd + i] + (c.bias ? bias[h * hd + i] : 0.0f);
        const bool isQ = h < c.heads, isK = !isQ && h < c.heads + c.kvHeads;
        if (c.qkNorm && (isQ || isK)) {
          float ss = 0;
          for (float a : v) ss += a * a;
          const float scale = 1.0f / std::sqrt(ss / static_cast<float>(hd) + eps);
          for (int64_t i = 0; i < hd; i++) v[i] = v[i] * scale * (isQ ? qn : kn)[i];
        }
        if (isQ || isK) {
          for (int64_t i = 0; i < half; i++) {
            const double angle = static_cast<double>(positions[t]) * static_cast<double>(inv[i]);
            const float cs = static_cast<float>(std::cos(angle)), sn = static_cast<float>(std::sin(angle));
            const int64_t ia = c.neox ? i : 2 * i, ib = c.neox ? i + half : 2 * i + 1;
            const float a = v[ia], b = v[ib];
            v[ia] = a * cs - b * sn;
            v[ib] = a * sn + b * cs;
          }
        }
        for (int64_t i = 0; i < hd; i++) {
          if (isQ) qRef[t * qDim + h * hd + i] = v[i] * qScale;
          else if (isK) kRef[t * kvDim + (h - c.heads) * hd + i] = v[i];
          else vRef[t * kvDim + (h - c.heads - c.kvHeads) * hd + i] = v[i];
        }
      }
    }
    pc_rope_check rc{};
    rc.T = T;
    rc.heads = c.heads;
    rc.kv_heads = c.kvHeads;
    rc.head_dim = c.hd;
    rc.neox = c.neox;
    rc.qkv = qkv.data();
    rc.positions = positions.data();
    rc.inv_freq = inv.data();
    rc.q_scale = qScale;
    rc.eps = eps;
    rc.bias = c.bias ? bias.data() : nullptr;
    rc.q_norm = c.qkNorm ? qn.data() : nullptr;
    rc.k_norm = c.qkNorm ? kn.data() : nullptr;
    std::vector<float> q(qRef.size());
    std::vector<uint16_t> k(kRef.size()), v(vRef.size());
    o.lib->check(o.lib->pc_check_rope_kv(o.device, &rc, q.data(), k.data(), v.data()), "pc_check_rope_kv");
    const std::string at = "hd=" + std::to_string(hd) + (c.neox ? " neox" : " adjacent");
    r.observe(relError(q, qRef), at + " q");
    std::vector<float> kf(k.size()), vf(v.size());
    std::vector<double> kd(kRef.begin(), kRef.end()), vd(vRef.begin(), vRef.end());
    for (size_t i = 0; i < k.size(); i++) {
      kf[i] = fromHalf(k[i]);
      vf[i] = fromHalf(v[i]);
    }
    kvr.observe(relError(kf, kd), at + " k");
    kvr.observe(relError(vf, vd), at + " v");
  }
  return {r, kvr};
}

}  // namespace prism::cudacheck
