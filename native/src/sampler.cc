#include "sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "simd.h"

namespace prism {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// sum(exp(z - maxZ)) over a whole row, 8 lanes at a time (-inf entries contribute 0).
// Per-lane partial sums in float, combined in double: a 150k vocabulary stays accurate.
double sumExp(const float* z, int64_t n, float maxZ) {
  const __m256 vm = _mm256_set1_ps(maxZ);
  double sum = 0;
  int64_t i = 0;
  while (i + 8 <= n) {
    __m256 acc = _mm256_setzero_ps();
    const int64_t end = std::min(n, i + 4096) & ~int64_t{7};
    for (; i + 8 <= end; i += 8) acc = _mm256_add_ps(acc, simd::exp(_mm256_sub_ps(_mm256_loadu_ps(z + i), vm)));
    sum += simd::hsum(acc);
  }
  for (; i < n; i++) sum += std::exp(static_cast<double>(z[i] - maxZ));
  return sum;
}

// log(sum(exp(z))) over the whole row (the normaliser of the processed distribution).
double logSumExp(const float* z, int64_t n, float maxZ) { return maxZ + std::log(sumExp(z, n, maxZ)); }

// min-p (Hugging Face's MinPLogitsWarper): keeps the candidates idx[0..n) whose probability is
// at least minP times the most likely one's, in their order; returns how many are kept.
int64_t keepMinP(const float* z, int32_t* idx, int64_t n, float maxZ, float minP) {
  const double floor = static_cast<double>(maxZ) + std::log(static_cast<double>(minP));
  int64_t kept = 0;
  for (int64_t t = 0; t < n; t++)
    if (static_cast<double>(z[idx[t]]) >= floor) idx[kept++] = idx[t];
  return kept;
}

// Locally typical sampling (Meister et al.; Hugging Face's TypicalLogitsWarper): over the
// candidates idx[0..n), renormalised, orders them by |-log p - H| (H the entropy) and keeps the
// fewest whose mass reaches `mass` (ties with the last one kept too, at least one). idx[0..kept)
// ends in that order; returns how many are kept.
int64_t keepTypical(const float* z, int32_t* idx, int64_t n, float maxZ, float mass, float* shift) {
  double total = 0;
  for (int64_t t = 0; t < n; t++) total += std::exp(static_cast<double>(z[idx[t]] - maxZ));
  const double lse = static_cast<double>(maxZ) + std::log(total);
  double entropy = 0;
  for (int64_t t = 0; t < n; t++) {
    const double lp = static_cast<double>(z[idx[t]]) - lse;
    entropy -= std::exp(lp) * lp;
  }
  for (int64_t t = 0; t < n; t++)
    shift[idx[t]] = static_cast<float>(std::fabs(-(static_cast<double>(z[idx[t]]) - lse) - entropy));
  std::sort(idx, idx + n, [shift](int32_t a, int32_t b) { return shift[a] < shift[b] || (shift[a] == shift[b] && a < b); });
  // The first position whose cumulative mass reaches `mass` is the last one kept.
  double cum = 0;
  int64_t last = n - 1;
  for (int64_t t = 0; t < n; t++) {
    cum += std::exp(static_cast<double>(z[idx[t]]) - lse);
    if (!(cum < mass)) {
      last = t;
      break;
    }
  }
  int64_t kept = last + 1;
  while (kept < n && shift[idx[kept]] <= shift[idx[last]]) kept++;
  return kept;
}

}  // namespace

double logSumExpRow(const float* z, int64_t n) {
  float maxZ = kNegInf;
  for (int64_t i = 0; i < n; i++) maxZ = std::max(maxZ, z[i]);
  return logSumExp(z, n, maxZ);
}

double uniformFromSeed(uint64_t seed, uint64_t counter) {
  uint64_t r = splitmix64(splitmix64(seed) ^ splitmix64(counter + 0x632BE59BD9B4E019ull));
  return static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);
}

void sampleToken(const float* logits, int64_t V, const SampleParams& p, SamplerScratch& s, SampleOutcome& out,
                 int32_t* topIds, float* topValues) {
  float* z = s.z.data();
  std::copy(logits, logits + V, z);
  for (int64_t k = 0; k < p.biasCount; k++) z[p.biasTokens[k]] += p.biasValues[k];

  // Penalties over the token history, penaltyTokens then penaltyTail (counts kept zero
  // between calls: undone below).
  if (p.penaltyCount + p.penaltyTailCount > 0 &&
      (p.repetitionPenalty != 1.0f || p.presencePenalty != 0.0f || p.frequencyPenalty != 0.0f)) {
    int32_t* counts = s.counts.data();
    const int32_t* spans[2] = {p.penaltyTokens, p.penaltyTail};
    const int64_t lens[2] = {p.penaltyCount, p.penaltyTailCount};
    for (int h = 0; h < 2; h++)
      for (int64_t k = 0; k < lens[h]; k++) counts[spans[h][k]]++;
    for (int h = 0; h < 2; h++)
      for (int64_t k = 0; k < lens[h]; k++) {
        int32_t t = spans[h][k];
        int32_t c = counts[t];
        if (c == 0) continue;  // already applied for this distinct token
        float v = z[t];
        if (p.repetitionPenalty != 1.0f) v = v > 0 ? v / p.repetitionPenalty : v * p.repetitionPenalty;
        v -= p.presencePenalty + p.frequencyPenalty * static_cast<float>(c);
        z[t] = v;
        counts[t] = 0;
      }
  }
  for (int64_t k = 0; k < p.suppressCount; k++) z[p.suppressTokens[k]] = kNegInf;
  if (p.allowedMask) {
    for (int64_t t = 0; t < V; t++)
      if (!((p.allowedMask[t >> 5] >> (t & 31)) & 1u)) z[t] = kNegInf;
  }
  const bool greedy = !(p.temperature > 0.0f);
  if (!greedy && p.temperature != 1.0f) {
    const float inv = 1.0f / p.temperature;
    for (int64_t t = 0; t < V; t++) z[t] *= inv;
  }
  // NaN logits (a broken model) fail the request rather than poisoning the comparisons.
  int64_t best = -1;
  float maxZ = kNegInf;
  bool sawNan = false;
  for (int64_t t = 0; t < V; t++) {
    if (std::isnan(z[t])) sawNan = true;
    else if (z[t] > maxZ) maxZ = z[t], best = t;
  }
  if (sawNan || best < 0) {
    out.token = -1;
    out.logprob = std::numeric_limits<float>::quiet_NaN();
    out.error = sawNan ? "the model produced NaN logits: cannot sample"
                       : "no token is allowed: the allowed-token mask and the suppressed tokens (after penalties) exclude the whole vocabulary";
    return;
  }

  int32_t chosen = static_cast<int32_t>(best);
  if (!greedy && p.topK != 1) {
    // Candidates: the allowed tokens, cut to the top-k; for top-p, the best 256 of those are
    // sorted first and the sort widens to every candidate only if they do not reach p.
    int32_t* idx = s.idx.data();
    int64_t nAllowed = 0;
    for (int64_t t = 0; t < V; t++)
      if (z[t] > kNegInf) idx[nAllowed++] = static_cast<int32_t>(t);
    auto byLogit = [z](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); };
    // Top-k first (as HF and vLLM do): top-p then works on the renormalised top-k.
    int64_t k = p.topK > 0 ? std::min<int64_t>(p.topK, nAllowed) : nAllowed;
    if (k < nAllowed) std::nth_element(idx, idx + k, idx + nAllowed, byLogit);
    const bool useTopP = p.topP < 1.0f;
    int64_t n = k;
    if (useTopP) {
      double total = 0;
      if (k == nAllowed) {
        total = sumExp(z, V, maxZ);  // every allowed token: one vectorised pass (masked ones add 0)
      } else {
        for (int64_t t = 0; t < k; t++) total += std::exp(static_cast<double>(z[idx[t]] - maxZ));
      }
      int64_t guess = std::min<int64_t>(256, k);
      for (;;) {
        if (guess < k) std::nth_element(idx, idx + guess, idx + k, byLogit);
        std::sort(idx, idx + guess, byLogit);
        double cum = 0;
        int64_t cut = guess;
        bool reached = false;
        for (int64_t t = 0; t < guess; t++) {
          cum += std::exp(static_cast<double>(z[idx[t]] - maxZ)) / total;
          if (cum >= p.topP) {
            cut = t + 1;
            reached = true;
            break;
          }
        }
        if (!reached && guess < k) {
          guess = k;  // the guess was too small: sort every candidate
          continue;
        }
        n = cut;
        break;
      }
    }
    // min-p and typical-p after top-k and top-p, as Hugging Face orders its warpers.
    if (p.minP > 0.0f) n = keepMinP(z, idx, n, maxZ, p.minP);
    if (p.typicalP < 1.0f) n = keepTypical(z, idx, n, maxZ, p.typicalP, s.shift.data());
    if (n == nAllowed) {
      // No cut: draw over the whole row in vocabulary order, 8 lanes at a time (masked
      // tokens weigh exp(-inf) = 0).
      const double u = uniformFromSeed(p.seed, p.counter) * sumExp(z, V, maxZ);
      const __m256 vm = _mm256_set1_ps(maxZ);
      double acc = 0;
      int64_t t = 0;
      chosen = static_cast<int32_t>(best);
      for (; t + 8 <= V; t += 8) {
        const double chunk = simd::hsum(simd::exp(_mm256_sub_ps(_mm256_loadu_ps(z + t), vm)));
        if (acc + chunk > u) break;
        acc += chunk;
      }
      for (; t < V; t++) {
        acc += std::exp(static_cast<double>(z[t] - maxZ));
        if (u < acc && z[t] > kNegInf) {
          chosen = static_cast<int32_t>(t);
          break;
        }
      }
    } else {
      // Draw within the kept candidates (renormalised).
      double kept = 0;
      for (int64_t t = 0; t < n; t++) kept += std::exp(static_cast<double>(z[idx[t]] - maxZ));
      double u = uniformFromSeed(p.seed, p.counter) * kept;
      chosen = idx[n - 1];
      double acc = 0;
      for (int64_t t = 0; t < n; t++) {
        acc += std::exp(static_cast<double>(z[idx[t]] - maxZ));
        if (u < acc) {
          chosen = idx[t];
          break;
        }
      }
    }
  }
  out.token = chosen;
  if (p.topLogprobs >= 0) {
    const double lse = logSumExp(z, V, maxZ);
    out.logprob = static_cast<float>(z[chosen] - lse);
    if (p.topLogprobs > 0) {
      int32_t* idx = s.idx.data();
      int64_t n = 0;
      for (int64_t t = 0; t < V; t++)
        if (z[t] > kNegInf) idx[n++] = static_cast<int32_t>(t);
      int64_t k = std::min<int64_t>(p.topLogprobs, n);
      auto byLogit = [z](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); };
      std::partial_sort(idx, idx + k, idx + n, byLogit);
      for (int64_t t = 0; t < k; t++) {
        topIds[t] = idx[t];
        topValues[t] = static_cast<float>(z[idx[t]] - lse);
      }
    }
  } else {
    out.logprob = std::numeric_limits<float>::quiet_NaN();
  }
}

}  // namespace prism
