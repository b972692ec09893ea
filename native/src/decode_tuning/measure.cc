#include "decode_tuning/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

namespace prism {

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(at);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

// The fewest wins out of n rounds that a fair coin reaches with probability ≤ 5% (one-sided
// sign test): a candidate must win at least this many rounds to replace the incumbent.
int winsNeeded(int n) {
  double tail = 0, c = 1;  // c = C(n, k) / 2^n, from k = n down
  const double all = std::ldexp(1.0, -n);
  c = all;
  int k = n;
  for (; k >= 0; --k) {
    tail += c;
    if (tail > 0.05) return k + 1;
    c = c * static_cast<double>(k) / static_cast<double>(n - k + 1);
  }
  return 0;
}

class Race {
 public:
  Race(const std::vector<TuneLayer>& layers, ThreadPool& pool, KernelScratch& scratch, WeightPrefetcher& prefetcher)
      : layers_(layers), pool_(pool), scratch_(scratch), prefetcher_(prefetcher) {
    int64_t cols = 1, rows = 1;
    size_t bytes = 0;
    for (const TuneLayer& l : layers) {
      bytes += l.bytes;
      for (const LinearWeight* w : l.mats) {
        cols = std::max(cols, w->cols);
        rows = std::max(rows, w->rows);
      }
    }
    // Trials of at least ~16 MiB of weights: long enough (a millisecond or more) that the
    // timer and the joins' jitter stay small against it.
    const size_t per = std::max<size_t>(1, bytes / layers.size());
    group_ = std::min(layers.size(), std::max<size_t>(1, (size_t(16) << 20) / per + 1));
    x_.resize(static_cast<size_t>(cols));
    y_.resize(static_cast<size_t>(rows));
    uint32_t s = 12345;
    for (float& v : x_) {
      s = s * 1664525u + 1013904223u;
      v = static_cast<float>(static_cast<int32_t>(s >> 8) % 2001 - 1000) / 1000.0f;
    }
  }

  // Seconds per weight byte of one trial of `t` on the next slice of the ring.
  double trial(const DecodeTuning& t) {
    scratch_.setDecodeTuning(t);
    prefetcher_.setEnabled(t.idlePrefetch);
    size_t bytes = 0;
    const auto start = Clock::now();
    for (size_t k = 0; k < group_; ++k) {
      const TuneLayer& l = layers_[(ring_ + k) % layers_.size()];
      const TuneLayer& after = layers_[(ring_ + k + 1) % layers_.size()];
      for (size_t m = 0; m < l.mats.size(); ++m) {
        prefetcher_.setNext(m + 1 < l.mats.size() ? l.mats[m + 1] : after.mats.front());
        const LinearWeight& w = *l.mats[m];
        matmul(w, x_.data(), 1, w.cols, y_.data(), w.rows, pool_, scratch_);
      }
      bytes += l.bytes;
    }
    prefetcher_.setNext(nullptr);
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    ring_ = (ring_ + group_) % layers_.size();
    return secs / static_cast<double>(std::max<size_t>(bytes, 1));
  }

  // Incumbent, its copy and the candidates, once each per round in a shuffled order, until
  // the deadline (or 48 rounds).
  TuneStage stage(const std::string& name, const DecodeTuning& incumbent, const std::vector<DecodeTuning>& candidates,
                  Clock::time_point deadline, const TuneBudget& budget) {
    TuneStage st;
    st.name = name;
    st.winner = incumbent;
    const size_t n = candidates.size();
    std::vector<std::vector<double>> ratios(n);
    std::vector<double> noise, incumbentTimes;
    std::vector<int> wins(n, 0);
    std::vector<size_t> order(n + 2);
    std::vector<double> times(n + 2);
    while (Clock::now() < deadline && st.rounds < 48) {
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng_);
      for (size_t i : order) times[i] = trial(i < 2 ? incumbent : candidates[i - 2]);
      // The reference is the mean of the incumbent's two trials: one slow trial of it (a
      // preemption, a bandwidth dip) moves every ratio of the round only half as far.
      const double ref = 0.5 * (times[0] + times[1]);
      noise.push_back(std::log(times[1] / times[0]));
      incumbentTimes.push_back(ref);
      for (size_t c = 0; c < n; ++c) {
        ratios[c].push_back(times[c + 2] / ref);
        if (times[c + 2] < ref) wins[c]++;
      }
      st.rounds++;
    }
    st.noise = st.rounds >= 4 ? quantile(noise, 0.75) - quantile(noise, 0.25) : NAN;
    for (size_t c = 0; c < n; ++c) st.entries.push_back({candidates[c], median(ratios[c]), wins[c]});
    incumbentRate_ = 1.0 / median(incumbentTimes);
    if (st.rounds < budget.minRounds) {
      inconclusive_ = true;
      return st;
    }
    // Ratios of the incumbent to its copy spread over an interquartile range of e^noise: when
    // that is wider than 4× the margin, a win by the margin cannot be told from the noise.
    if (!(st.noise <= 4 * budget.margin)) {
      inconclusive_ = true;
      return st;
    }
    const TuneStage::Entry* best = nullptr;
    for (const auto& e : st.entries)
      if (best == nullptr || e.medianRatio < best->medianRatio) best = &e;
    if (best != nullptr && best->medianRatio < 1 - budget.margin && best->wins >= winsNeeded(st.rounds)) {
      st.winner = best->tuning;
      incumbentRate_ = incumbentRate_ / best->medianRatio;
    }
    return st;
  }

  bool inconclusive() const { return inconclusive_; }
  double incumbentRate() const { return incumbentRate_; }

 private:
  const std::vector<TuneLayer>& layers_;
  ThreadPool& pool_;
  KernelScratch& scratch_;
  WeightPrefetcher& prefetcher_;
  std::vector<float> x_, y_;
  size_t ring_ = 0, group_ = 1;
  std::mt19937 rng_{27};
  bool inconclusive_ = false;
  double incumbentRate_ = 0;
};

DecodeTuning with(DecodeTuning t, PrefetchHint hint, int aheadHalves) {
  t.hint = hint;
  t.aheadHalves = static_cast<uint8_t>(aheadHalves);
  return t;
}

}  // namespace

std::string TuneResult::summary() const {
  std::ostringstream o;
  char buf[64];
  for (const TuneStage& s : stages) {
    o << s.name << ": " << s.rounds << " rounds, noise ";
    std::snprintf(buf, sizeof buf, "%.3f", s.noise);
    o << buf << ";";
    for (const auto& e : s.entries) {
      std::snprintf(buf, sizeof buf, "%.3f", e.medianRatio);
      o << ' ' << e.tuning.describe() << ' ' << buf << " (" << e.wins << " wins)";
    }
    o << " -> " << s.winner.describe() << '\n';
  }
  return o.str();
}

TuneResult measureDecodeTuning(const std::vector<TuneLayer>& layers, const DecodeTuning& base, ThreadPool& pool,
                               KernelScratch& scratch, WeightPrefetcher& prefetcher, const TuneBudget& budget) {
  const DecodeTuning savedTuning = scratch.decodeTuning();
  TuneResult r;
  const auto start = Clock::now();
  Race race(layers, pool, scratch, prefetcher);
  // Warm-up: page tables, the pool's threads, the branch predictors.
  for (int i = 0; i < 2; ++i) race.trial(base);
  const auto at = [&](double fraction) {
    return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(budget.totalMs * fraction));
  };

  // 1. Prefetch: none (the hardware prefetchers alone), non-temporal at half, one and two
  // tiles, T0 one tile, L2 (T1) one and two tiles.
  std::vector<DecodeTuning> prefetch = {with(base, PrefetchHint::None, 2), with(base, PrefetchHint::Nta, 1),
                                        with(base, PrefetchHint::Nta, 4),  with(base, PrefetchHint::T0, 2),
                                        with(base, PrefetchHint::T1, 2),   with(base, PrefetchHint::T1, 4)};
  r.stages.push_back(race.stage("prefetch", base, prefetch, at(0.45), budget));
  DecodeTuning best = r.stages.back().winner;

  // 2. Tile height: half and twice the kernels' own (each kernel clamps to its registers).
  if (!race.inconclusive()) {
    DecodeTuning two = best, eight = best;
    two.rows = 2;
    eight.rows = 8;
    r.stages.push_back(race.stage("rows", best, {two, eight}, at(0.65), budget));
    best = r.stages.back().winner;
  }
  // 3. The idle prefetcher.
  if (!race.inconclusive()) {
    DecodeTuning flipped = best;
    flipped.idlePrefetch = !best.idlePrefetch;
    r.stages.push_back(race.stage("idle", best, {flipped}, at(0.8), budget));
    best = r.stages.back().winner;
  }
  // 4. The winner against the base, head to head.
  r.ratioToDefault = 1;
  if (!race.inconclusive() && !(best == base)) {
    TuneStage final = race.stage("against the base", base, {best}, at(1.0), budget);
    r.ratioToDefault = final.entries.front().medianRatio;
    if (!(final.winner == best)) best = base;
    r.stages.push_back(final);
  }
  r.conclusive = !race.inconclusive();
  r.tuning = r.conclusive ? best : base;
  r.gbps = race.incumbentRate() / 1e9;
  r.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  scratch.setDecodeTuning(savedTuning);
  prefetcher.setEnabled(savedTuning.idlePrefetch);
  return r;
}

}  // namespace prism
