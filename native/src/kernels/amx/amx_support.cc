// AMX detection and the one-time permission request (built with the baseline flags: it runs
// on every CPU, before anything knows whether AMX exists).
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels/amx/amx.h"
#include "kernels/internal.h"
#include "switches.h"

namespace prism::kernels {

namespace {

// Linux's arch_prctl request for an extended state component, and AMX's tile data (XSAVE
// component 18): the tile registers are off for a process until it asks (Linux 5.16+).
constexpr long kArchReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

bool probeAmx() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool tile = (d >> 24) & 1, int8 = (d >> 25) & 1;
  if (!tile || !int8 || !cpuHasAvx512()) return false;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

}  // namespace

bool cpuHasAmxInt8() {
  static const bool has = probeAmx();
  return has;
}

bool amxEnabled() {
  static const bool enabled = switchOn(Switch::Amx, true) && cpuHasAmxInt8();
  return enabled;
}

}  // namespace prism::kernels
