// What the decode tuning is cached under, and what the benchmark prints beside a row: the
// CPU (vendor, family/model/stepping, brand, cache sizes) and the memory facts that change
// what decode can stream (transparent huge pages).
#pragma once
#include <cstddef>
#include <string>

namespace prism {

struct HostInfo {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD", ...
  int family = 0, model = 0, stepping = 0;
  std::string brand;  // CPUID's brand string, trimmed
  // Per-core data caches and the last level, in bytes (0: unknown), from sysfs.
  size_t l1d = 0, l2 = 0, l3 = 0;
  std::string thp;  // the selected mode of /sys/kernel/mm/transparent_hugepage/enabled
  // "<vendor> family F model M stepping S, <brand>": the CPU part of the cache key.
  std::string cpuKey() const;
  // One line: the CPU, its caches and the huge-page mode.
  std::string describe() const;
};

const HostInfo& hostInfo();

// Anonymous memory of this process backed by transparent huge pages (AnonHugePages in
// /proc/self/smaps_rollup), in bytes; -1 when it cannot be read.
long long anonHugeBytes();

}  // namespace prism
