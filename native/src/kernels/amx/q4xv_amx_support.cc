// The kLayoutQ4XV AMX kernel's test visibility (q4xv_amx.h), built with the baseline flags so
// that the addon can reach it on any CPU: the call counter, and a matmul of a GGUF 4-bit weight
// that runs the tiles for any n.
#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "kernels/amx/amx.h"
#include "kernels/amx/q4xv_amx.h"
#include "kernels/q4xv.h"
#include "thread_pool.h"

namespace prism::kernels {

std::atomic<uint64_t> q4xvAmxCallCount{0};

void q4xvAmxMatmulForTest(TensorType type, const uint8_t* weights, int64_t rows, int64_t cols, const float* x,
                          int64_t n, float* y) {
  if (!cpuHasAmxInt8()) throw std::invalid_argument("q4xv amx: this CPU (or the OS) offers no AMX-INT8");
  if (type != TensorType::Q4_0 && type != TensorType::Q4_1 && type != TensorType::Q4_K)
    throw std::invalid_argument("q4xv amx: type must be Q4_0, Q4_1 or Q4_K");
  if (rows < 1 || n < 1) throw std::invalid_argument("q4xv amx: rows and n must be >= 1");
  typeRowBytes(type, cols);  // throws unless cols is whole blocks of the type
  WeightBytes packed;
  repackQ4XV(type, weights, rows, cols, &packed);
  // Several threads, so the split of the row groups is exercised; one caller at a time.
  static std::mutex mutex;
  static ThreadPool pool(static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 2u, 4u)));
  std::lock_guard<std::mutex> lock(mutex);
  KernelScratch scratch;
  // The activations at q4xvScratchBase, the kernel's room after them (q4xv.h), sized at once.
  scratch.bytes(q4xvActivationBytes(n, cols) + 64 + q4xvAmxScratchBytes(n, cols, pool.size()));
  const Q4XVActivations xa = q4xvQuantizeScalar(x, n, cols, cols, q4xvScratchBase(scratch));
  q4xvMatmulAmx(packed.data(), rows, cols, xa, n, y, rows, pool, scratch);
}

}  // namespace prism::kernels
