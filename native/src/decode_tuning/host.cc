#include "decode_tuning/host.h"

#include <cpuid.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace prism {

namespace {

std::string trim(std::string s) {
  const size_t b = s.find_first_not_of(" \t\n");
  const size_t e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string readLine(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return trim(line);
}

// "48K", "2048K", "300M" as sysfs writes cache sizes.
size_t parseSize(const std::string& s) {
  if (s.empty()) return 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return 0;
  switch (*end) {
    case 'K':
      return static_cast<size_t>(v) << 10;
    case 'M':
      return static_cast<size_t>(v) << 20;
    case 'G':
      return static_cast<size_t>(v) << 30;
    default:
      return static_cast<size_t>(v);
  }
}

HostInfo readHost() {
  HostInfo h;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    char v[13];
    std::memcpy(v, &b, 4);
    std::memcpy(v + 4, &d, 4);
    std::memcpy(v + 8, &c, 4);
    v[12] = '\0';
    h.vendor = v;
  }
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    const int base = static_cast<int>((a >> 8) & 0xF), ext = static_cast<int>((a >> 20) & 0xFF);
    h.family = base == 0xF ? base + ext : base;
    const int model = static_cast<int>((a >> 4) & 0xF), extModel = static_cast<int>((a >> 16) & 0xF);
    h.model = (base == 0x6 || base == 0xF) ? (extModel << 4) + model : model;
    h.stepping = static_cast<int>(a & 0xF);
  }
  unsigned top = __get_cpuid_max(0x80000000, nullptr);
  if (top >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      __get_cpuid(0x80000002 + i, &a, &b, &c, &d);
      std::memcpy(brand + 16 * i, &a, 4);
      std::memcpy(brand + 16 * i + 4, &b, 4);
      std::memcpy(brand + 16 * i + 8, &c, 4);
      std::memcpy(brand + 16 * i + 12, &d, 4);
    }
    h.brand = trim(brand);
  }
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = readLine(dir + "level"), type = readLine(dir + "type");
    if (level.empty()) continue;
    const size_t size = parseSize(readLine(dir + "size"));
    if (level == "1" && type == "Data") h.l1d = size;
    else if (level == "2") h.l2 = size;
    else if (level == "3") h.l3 = size;
  }
  // "always [madvise] never": the bracketed word.
  const std::string thp = readLine("/sys/kernel/mm/transparent_hugepage/enabled");
  const size_t open = thp.find('['), close = thp.find(']');
  h.thp = open != std::string::npos && close > open ? thp.substr(open + 1, close - open - 1) : "unknown";
  return h;
}

}  // namespace

std::string HostInfo::cpuKey() const {
  std::ostringstream o;
  o << vendor << " family " << family << " model " << model << " stepping " << stepping << ", " << brand;
  return o.str();
}

std::string HostInfo::describe() const {
  std::ostringstream o;
  auto kib = [](size_t b) { return b >= (size_t(1) << 20) ? std::to_string(b >> 20) + " MiB" : std::to_string(b >> 10) + " KiB"; };
  o << cpuKey() << "; L1d " << (l1d ? kib(l1d) : "?") << ", L2 " << (l2 ? kib(l2) : "?") << ", L3 "
    << (l3 ? kib(l3) : "?") << "; transparent huge pages " << thp;
  return o.str();
}

const HostInfo& hostInfo() {
  static const HostInfo h = readHost();
  return h;
}

long long anonHugeBytes() {
  std::ifstream f("/proc/self/smaps_rollup");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("AnonHugePages:", 0) == 0) {
      long long kb = -1;
      if (std::sscanf(line.c_str() + 14, "%lld", &kb) == 1) return kb * 1024;
    }
  }
  return -1;
}

}  // namespace prism
