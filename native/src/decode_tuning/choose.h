// How a context gets its DecodeTuning (kernels/decode_tuning.h). The request is the context
// option `decodeTuning`, else the environment variable PRISM_DECODE_TUNING, else "host":
//   host     the constants with the tile height and prefetch hint measured faster on this
//            kind of CPU (8 rows and a T1 prefetch on Intel with AVX-512, the constants
//            elsewhere), nothing measured at load.
//   off      today's constants, nothing measured or read (the incumbent the race and the
//            A/B runs compare against).
//   auto     the cached choice for this CPU, ISA, thread count and model shape; on a miss,
//            a race of ~1.2 s on the model's own matmuls (measure.h) starting from the host
//            default, then cached. Models whose weights fit the last-level cache are not
//            measured: their decode is not bound by the memory, and the host default stands.
//   measure  race now even if a choice is cached or the weights fit the cache, and cache
//            the result.
//   <spec>   a setting as DecodeTuning::describe() writes it ("prefetch=t1:2,rows=8,idle=off"),
//            used as given.
// A race that the machine's noise makes inconclusive keeps the host default and is not written
// to the cache file, so a later process tries again; within one process an `auto` key is
// raced at most once (a server that opens several contexts pays the second once).
#pragma once
#include <string>

#include "kernels/kernels.h"
#include "model.h"
#include "thread_pool.h"
#include "weight_prefetch.h"

namespace prism {

struct DecodeTuningChoice {
  DecodeTuning tuning;
  // "host", "off", "given", "cached", "measured", "fits-cache" (weights within the last-level
  // cache), "inconclusive" (the race could not tell the settings apart).
  std::string source;
  std::string detail;  // the race's stages, or the cache entry's date and ratio
  double measuredMs = 0;
  double ratioToDefault = 1;
  std::string cachePath;
};

// Validates a request (for the addon: a RangeError naming the option and the rule).
bool validDecodeTuningRequest(const std::string& request, std::string* error);

// `request` empty: PRISM_DECODE_TUNING, else host. An invalid environment value is ignored
// with a warning on stderr (as PRISM_ISA is), so a typo never stops a server from starting.
DecodeTuningChoice chooseDecodeTuning(const Model& model, ThreadPool& pool, KernelScratch& scratch,
                                      WeightPrefetcher& prefetcher, const std::string& request);

// The shape part of the cache key: the types and shapes of every layer's matrices.
std::string decodeShapeKey(const Model& model);

}  // namespace prism
