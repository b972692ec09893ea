// The Layout::Q4XV AMX kernel's call counter (q4xv_amx.h), built with the baseline flags so that
// the addon can read it on any CPU.
#include "kernels/amx/q4xv_amx.h"

namespace prism::kernels {

std::atomic<uint64_t> q4xvAmxCallCount{0};

}  // namespace prism::kernels
