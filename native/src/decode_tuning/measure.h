// The measurement behind a context's DecodeTuning (kernels/decode_tuning.h): a short race
// of candidate settings on the model's own decode matmuls, FFTW-style.
//
// A trial runs one candidate over one slice of layers (every matmul of those layers for one
// token, in the forward pass's order, with the idle prefetcher aimed as the forward pass
// aims it) and counts bytes per second. Trials walk the layers as a ring, so no trial finds
// its weights in a cache the previous one filled. The host's memory bandwidth swings with
// its neighbours from one second to the next, so candidates are never compared across
// time: every round runs the incumbent, a second copy of the incumbent and each candidate
// once, in a shuffled order, and a candidate is judged by the median over rounds of its rate
// against the incumbent's in the same round. It replaces the incumbent only when that
// median beats it by a margin and it won a clear majority of rounds (a sign test); the
// incumbent's copy measures the noise floor, and a race whose floor is too wide to tell 2%
// apart (a busy machine) keeps the incumbent and says so.
//
// Stages, each starting from the winner of the last: the prefetch hint and distance; the
// tile height; the idle prefetcher. The race starts from a base (the host default, choose.h)
// and a last head-to-head of the winner against that base guards against a chain of small
// wrong calls.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "thread_pool.h"
#include "weight_prefetch.h"

namespace prism {

// One layer's decode matmuls in forward order.
struct TuneLayer {
  std::vector<const LinearWeight*> mats;
  size_t bytes = 0;
};

struct TuneBudget {
  double totalMs = 1200;  // wall time of the whole race
  int minRounds = 8;      // a stage with fewer rounds than this decides nothing
  double margin = 0.02;   // a candidate must be this much faster (median paired ratio)
};

struct TuneStage {
  std::string name;
  int rounds = 0;
  // Per candidate: its setting, the median of its paired time ratio to the incumbent and the
  // rounds it won.
  struct Entry {
    DecodeTuning tuning;
    double medianRatio = 1;
    int wins = 0;
  };
  std::vector<Entry> entries;
  double noise = 0;  // the interquartile range of the incumbent against its own copy
  DecodeTuning winner;
};

struct TuneResult {
  DecodeTuning tuning;
  bool conclusive = true;  // false: the noise floor hid every difference (a busy machine)
  double ms = 0;           // wall time the race took
  double gbps = 0;         // the winner's median weight bytes per second in its trials
  double ratioToDefault = 1;  // the winner's step time ÷ the base's, paired (final stage)
  std::vector<TuneStage> stages;
  std::string summary() const;  // one line per stage, for logs and contextInfo
};

// Runs the race on `layers` (at least one, each with at least one matrix) with the pool and
// scratch of the context that will decode, every stage's candidates derived from `base`
// (which an inconclusive race returns); leaves the scratch's tuning and the prefetcher as it
// found them.
TuneResult measureDecodeTuning(const std::vector<TuneLayer>& layers, const DecodeTuning& base, ThreadPool& pool,
                               KernelScratch& scratch, WeightPrefetcher& prefetcher, const TuneBudget& budget);

}  // namespace prism
