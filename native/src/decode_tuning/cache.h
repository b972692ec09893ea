// The decode tunings measured on this machine, kept in a small JSON file so a model is
// measured once per CPU, shape and thread count, not at every load:
//   $PRISM_CACHE_DIR/decode-tuning.json, else $XDG_CACHE_HOME/prism/, else ~/.cache/prism/.
// A missing, unreadable or malformed file is an empty cache (and a malformed one is
// replaced on the next store); a file that cannot be written leaves the tuning uncached.
#pragma once
#include <string>
#include <vector>

namespace prism {

struct TuningCacheEntry {
  std::string cpu;    // HostInfo::cpuKey()
  std::string isa;    // the kernel family in use (avx512, avx2)
  int threads = 0;
  std::string shape;  // the model's matrix shapes and types (choose.cc)
  std::string tuning; // DecodeTuning::describe()
  double ratioToDefault = 1;  // paired step-time ratio of the choice to the host default
  double gbps = 0;            // weight GB/s the choice streamed in the race
  double ms = 0;              // how long the race took
  std::string at;             // when (UTC, ISO 8601)
  std::string host;           // HostInfo::describe() when measured
};

// The cache file's path, or "" when no directory can be named (no HOME at all).
std::string tuningCachePath();

// The entry for (cpu, isa, threads, shape), if the file has one.
bool findTuning(const std::string& path, const TuningCacheEntry& key, TuningCacheEntry* out);

// Adds or replaces the entry (the file keeps the newest 64), written to a temporary file and
// renamed over the old one so a reader never sees half a file. Returns false if the file
// could not be written.
bool storeTuning(const std::string& path, const TuningCacheEntry& entry);

}  // namespace prism
