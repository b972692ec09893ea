// AMX-BF16 detection and the weights the bf16 driver serves (built with the baseline flags:
// it runs on every CPU, before anything knows whether the tiles exist).
#include <cpuid.h>

#include "kernels/amx/amx.h"
#include "kernels/amx/bf16_amx.h"
#include "kernels/internal.h"
#include "kernels/q4xv.h"
#include "switches.h"

namespace prism::kernels {

bool cpuHasAmxBf16() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool bf16 = (d >> 22) & 1;  // CPUID.(7,0):EDX[22] AMX-BF16
    return bf16 && cpuHasAmxInt8() && cpuHasAvx512Bf16();
  }();
  return has;
}

// Opt-in (PRISM_AMX_BF16=1): the bf16 products are not bit-identical to the int16 kernels of
// one-token steps, so with it on a sequence's tokens depend on how its steps were shaped
// (preemption's recompute, a 16-token verify step, a batch of 16); off, every step shape
// gives the same bits, which the engine's preemption, speculation and LoRA tests hold.
bool amxBf16Enabled() {
  static const bool enabled = switchOn(Switch::AmxBf16, false) && cpuHasAmxBf16();
  return enabled;
}

bool amxBf16Handles(const LinearWeight& W) {
  if (W.precision != ActivationPrecision::Int16 || W.cols % kQK != 0) return false;
  return W.layout == Layout::Q4XV;
}

}  // namespace prism::kernels
