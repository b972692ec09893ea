// GPU sampling against the CPU sampler (native/src/sampler.cc) on the same logits and
// parameters: greedy tokens, logprobs, top logprobs, penalties, masks and the error cases must
// agree; a sampled token must be the one the GPU's documented rule picks for the same uniform
// number (the kept set of top-k/top-p, walked in vocabulary order with fixed-point masses,
// k_sampling.cu), which this file recomputes on the host.
#include <algorithm>
#include <cstring>
#include <limits>

#include "check.h"
#include "sampler.h"

namespace prism::cudacheck {
namespace {

uint64_t keyOf(float z, int64_t t) {
  uint32_t u;
  std::memcpy(&u, &z, 4);
  const uint32_t ordered = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<uint64_t>(ordered) << 32) | (0xffffffffu - static_cast<uint32_t>(t));
}

uint64_t massOf(float z, float maxZ) { return static_cast<uint64_t>(static_cast<double>(std::exp(z - maxZ)) * 1099511627776.0); }

struct Seq {
  bool sample = true;
  float temperature = 0, topP = 1, rep = 1, pres = 0, freq = 0;
  int32_t topK = 0, topLogprobs = -1;
  std::vector<int32_t> penalty;
  int maskKind = 0;  // 0 none, 1 ~10% allowed, 2 nothing allowed
  double u = 0.5;
};

// The processed logits (penalties, mask, temperature) as sampler.cc computes them.
std::vector<float> processed(const float* logits, int64_t V, const Seq& q, const uint32_t* mask) {
  std::vector<float> z(logits, logits + V);
  std::vector<int> counts(static_cast<size_t>(V), 0);
  if (!q.penalty.empty() && (q.rep != 1.0f || q.pres != 0.0f || q.freq != 0.0f)) {
    for (int32_t t : q.penalty) counts[t]++;
    for (int32_t t : q.penalty) {
      const int c = counts[t];
      if (c == 0) continue;
      float v = z[t];
      if (q.rep != 1.0f) v = v > 0 ? v / q.rep : v * q.rep;
      v -= q.pres + q.freq * static_cast<float>(c);
      z[t] = v;
      counts[t] = 0;
    }
  }
  if (mask)
    for (int64_t t = 0; t < V; t++)
      if (!((mask[t >> 5] >> (t & 31)) & 1u)) z[t] = -std::numeric_limits<float>::infinity();
  if (q.temperature > 0 && q.temperature != 1.0f) {
    const float inv = 1.0f / q.temperature;
    for (float& v : z) v *= inv;
  }
  return z;
}

// The token k_sampling.cu draws for `u` (see the file comment), or -1 for greedy cases.
int64_t gpuRuleDraw(const std::vector<float>& z, const Seq& q) {
  if (!(q.temperature > 0) || q.topK == 1) return -1;
  const int64_t V = static_cast<int64_t>(z.size());
  std::vector<uint64_t> keys;
  uint64_t best = 0;
  for (int64_t t = 0; t < V; t++)
    if (z[t] > -std::numeric_limits<float>::infinity()) {
      keys.push_back(keyOf(z[t], t));
      best = std::max(best, keys.back());
    }
  const float maxZ = z[static_cast<size_t>(0xffffffffu - static_cast<uint32_t>(best))];
  std::sort(keys.rbegin(), keys.rend());
  const size_t nAllowed = keys.size();
  const size_t k = q.topK > 0 && static_cast<size_t>(q.topK) < nAllowed ? static_cast<size_t>(q.topK) : nAllowed;
  uint64_t floor = k < nAllowed ? keys[k - 1] : 0;
  auto tokenOf = [](uint64_t key) { return static_cast<int64_t>(0xffffffffu - static_cast<uint32_t>(key)); };
  if (q.topP < 1.0f) {
    uint64_t total = 0;
    for (size_t i = 0; i < k; i++) total += massOf(z[tokenOf(keys[i])], maxZ);
    const double want = std::ceil(static_cast<double>(q.topP) * static_cast<double>(total));
    uint64_t target = want < 1.0 ? 1 : static_cast<uint64_t>(want);
    target = std::min(target, total);
    uint64_t cum = 0;
    for (size_t i = 0; i < k; i++) {
      cum += massOf(z[tokenOf(keys[i])], maxZ);
      if (cum >= target) {
        floor = std::max(floor, keys[i]);
        break;
      }
    }
  }
  uint64_t kept = 0;
  for (int64_t t = 0; t < V; t++)
    if (z[t] > -std::numeric_limits<float>::infinity() && keyOf(z[t], t) >= floor) kept += massOf(z[t], maxZ);
  uint64_t target = static_cast<uint64_t>(q.u * static_cast<double>(kept));
  if (target >= kept) target = kept - 1;
  uint64_t acc = 0;
  for (int64_t t = 0; t < V; t++) {
    if (!(z[t] > -std::numeric_limits<float>::infinity()) || keyOf(z[t], t) < floor) continue;
    acc += massOf(z[t], maxZ);
    if (acc > target) return t;
  }
  return -2;
}

}  // namespace

Result checkSampling(const Options& o) {
  // The error measure: 1 per disagreeing token, id or error code, plus logprob differences.
  Result r{"sampling (penalties, mask, top-k/p, logprobs)", 0, 0, 2e-4, ""};
  std::mt19937_64 rng(o.seed * 47);
  std::vector<int64_t> vocabs = {1000, 49152};
  if (!o.quick) vocabs.push_back(128256);
  for (int64_t V : vocabs) {
    std::vector<Seq> seqs(10);
    seqs[1].topLogprobs = 5;
    seqs[2] = Seq{true, 0.8f, 1, 1, 0, 0, 40, 0, {}, 0, 0.3};
    seqs[3] = Seq{true, 1.0f, 0.9f, 1, 0, 0, 0, 0, {}, 0, 0.77};
    seqs[4] = Seq{true, 0.7f, 0.8f, 1.3f, 0.5f, 0.2f, 100, 2, {}, 0, 0.05};
    seqs[5] = Seq{true, 1.2f, 1, 1, 0, 0, 0, 3, {}, 1, 0.999};
    seqs[6] = Seq{true, 0.0f, 1, 1, 0, 0, 0, 1, {}, 2, 0.5};
    seqs[7] = Seq{false, 0.0f, 1, 1, 0, 0, 0, 2, {}, 0, 0.5};
    seqs[8] = Seq{true, 0.0f, 1, 1.5f, 0.3f, 0.1f, 0, 20, {}, 0, 0.5};
    seqs[9] = Seq{true, 0.9f, 0.5f, 1, 0, 0, 1, -1, {}, 0, 0.5};  // top-k 1: greedy
    std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(V - 1));
    for (int i : {4, 8})
      for (int k = 0; k < 300; k++) seqs[i].penalty.push_back(k % 3 == 0 ? 7 : tok(rng));
    const int S = static_cast<int>(seqs.size());
    std::vector<float> logits = randomVector(rng, static_cast<size_t>(S * V), 3.0f);
    for (int s = 0; s < S; s++) logits[s * V + tok(rng)] = 15.0f;  // a clear favourite somewhere
    const int64_t words = (V + 31) / 32;
    std::vector<int32_t> masks(static_cast<size_t>(2 * words), 0);
    std::uniform_int_distribution<int> tenth(0, 9);
    for (int64_t t = 0; t < V; t++)
      if (tenth(rng) == 0) masks[t >> 5] |= static_cast<int32_t>(1u << (t & 31));
    // row 1 stays all zero: nothing allowed
    std::vector<uint8_t> sample(S);
    std::vector<float> temp(S), topP(S), rep(S), pres(S), freq(S);
    std::vector<int32_t> topK(S), topLp(S), maskRow(S), penOff{0}, pen;
    std::vector<double> uni(S);
    for (int s = 0; s < S; s++) {
      const Seq& q = seqs[s];
      sample[s] = q.sample;
      temp[s] = q.temperature;
      topP[s] = q.topP;
      rep[s] = q.rep;
      pres[s] = q.pres;
      freq[s] = q.freq;
      topK[s] = q.topK;
      topLp[s] = q.topLogprobs;
      maskRow[s] = q.maskKind == 0 ? -1 : q.maskKind - 1;
      uni[s] = q.u;
      pen.insert(pen.end(), q.penalty.begin(), q.penalty.end());
      penOff.push_back(static_cast<int32_t>(pen.size()));
    }
    pc_step_plan p{};
    p.S = S;
    p.sample = sample.data();
    p.temperature = temp.data();
    p.top_p = topP.data();
    p.repetition_penalty = rep.data();
    p.presence_penalty = pres.data();
    p.frequency_penalty = freq.data();
    p.top_k = topK.data();
    p.penalty_token_offsets = penOff.data();
    p.penalty_tokens = pen.data();
    p.n_penalty_tokens = static_cast<int64_t>(pen.size());
    p.uniform = uni.data();
    p.allowed_mask_rows = maskRow.data();
    p.top_logprobs = topLp.data();
    int32_t stride = 0;
    for (int32_t n : topLp) stride = std::max(stride, n);
    std::vector<int32_t> tokens(S), errors(S), topIds(static_cast<size_t>(S * std::max(stride, 1)));
    std::vector<float> logprobs(S), topValues(topIds.size());
    pc_step_result res{};
    res.tokens = tokens.data();
    res.logprobs = logprobs.data();
    res.errors = errors.data();
    res.top_ids = topIds.data();
    res.top_values = topValues.data();
    o.lib->check(o.lib->pc_check_sample(o.device, logits.data(), V, &p, masks.data(), 2, &res), "pc_check_sample");

    SamplerScratch scratch;
    scratch.reserve(V);
    std::vector<int32_t> cpuTopIds(static_cast<size_t>(std::max(stride, 1)));
    std::vector<float> cpuTopValues(cpuTopIds.size());
    for (int s = 0; s < S; s++) {
      const Seq& q = seqs[s];
      const uint32_t* mask = maskRow[s] >= 0 ? reinterpret_cast<const uint32_t*>(masks.data()) + maskRow[s] * words : nullptr;
      SampleParams sp;
      sp.temperature = q.temperature;
      sp.topK = q.topK;
      sp.topP = q.topP;
      sp.repetitionPenalty = q.rep;
      sp.presencePenalty = q.pres;
      sp.frequencyPenalty = q.freq;
      sp.penaltyTokens = q.penalty.data();
      sp.penaltyCount = static_cast<int64_t>(q.penalty.size());
      sp.allowedMask = mask;
      sp.topLogprobs = q.topLogprobs;
      SampleOutcome cpu;
      std::fill(cpuTopIds.begin(), cpuTopIds.end(), -1);
      sampleToken(&logits[static_cast<size_t>(s) * V], V, sp, scratch, cpu, cpuTopIds.data(), cpuTopValues.data());
      const std::string at = "V=" + std::to_string(V) + " seq " + std::to_string(s);
      double err = 0;
      const int cpuError = cpu.error.empty() ? 0 : cpu.error.find("NaN") != std::string::npos ? 1 : 2;
      if (errors[s] != cpuError) err += 1;
      const std::vector<float> z = processed(&logits[static_cast<size_t>(s) * V], V, q, mask);
      int64_t expected = cpu.token;
      if (cpuError == 0) {
        const int64_t drawn = gpuRuleDraw(z, q);
        if (drawn != -1) expected = drawn;  // sampled: the GPU's own rule on the same u
      }
      if (!q.sample) expected = -1;
      if (cpuError != 0) expected = -1;
      if (tokens[s] != expected) err += 1;
      if (q.topLogprobs >= 0 && cpuError == 0) {
        // The logprob of the token the GPU chose, on the CPU's processed logits.
        double lse = -1e300;
        {
          float mx = -std::numeric_limits<float>::infinity();
          for (float v : z) mx = std::max(mx, v);
          double se = 0;
          for (float v : z) se += std::exp(static_cast<double>(v) - mx);
          lse = mx + std::log(se);
        }
        const int64_t chosen = q.sample ? tokens[s] : cpu.token;
        if (chosen >= 0) err += std::fabs(logprobs[s] - (z[chosen] - lse));
        for (int i = 0; i < q.topLogprobs; i++) {
          if (topIds[static_cast<size_t>(s) * stride + i] != cpuTopIds[i]) err += 1;
          else err += std::fabs(topValues[static_cast<size_t>(s) * stride + i] - cpuTopValues[i]);
        }
      }
      r.observe(err, at);
    }
  }
  // NaN logits fail the sequence (error 1), whatever its parameters.
  {
    const int64_t V = 777;
    std::vector<float> logits = randomVector(rng, V, 1.0f);
    logits[300] = std::numeric_limits<float>::quiet_NaN();
    uint8_t sample = 1;
    float temp = 0.5f, topP = 1, one = 1, zero = 0;
    int32_t topK = 0, topLp = 0, maskRow = -1, penOff[2] = {0, 0};
    double u = 0.5;
    pc_step_plan p{};
    p.S = 1;
    p.sample = &sample;
    p.temperature = &temp;
    p.top_p = &topP;
    p.repetition_penalty = &one;
    p.presence_penalty = &zero;
    p.frequency_penalty = &zero;
    p.top_k = &topK;
    p.penalty_token_offsets = penOff;
    p.uniform = &u;
    p.allowed_mask_rows = &maskRow;
    p.top_logprobs = &topLp;
    int32_t token = 0, error = 0, ids = 0;
    float lp = 0, vals = 0;
    pc_step_result res{&token, &lp, &error, 0, &ids, &vals, nullptr};
    o.lib->check(o.lib->pc_check_sample(o.device, logits.data(), V, &p, nullptr, 0, &res), "pc_check_sample");
    r.observe(error == 1 && token == -1 ? 0.0 : 1.0, "NaN logits");
  }
  return r;
}

}  // namespace prism::cudacheck
