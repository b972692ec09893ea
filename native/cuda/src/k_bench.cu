// The decode roofline's denominator: how fast this card reads memory, measured with a kernel
// that only reads (16-byte loads, grid-stride, several in flight per thread).
#include <algorithm>

#include "kernels.h"
#include "bench.h"

namespace pc {
namespace {

__global__ void readKernel(const uint4* __restrict__ p, int64_t n, unsigned* sink) {
  unsigned acc = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n; i += stride) {
    const uint4 a = p[i];
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the loads; almost never stores
}

}  // namespace

double measureReadBandwidth(int device, size_t bytes, int passes) {
  useDevice(device);
  bytes = std::max<size_t>(bytes & ~size_t{15}, 1 << 20);
  Stream s;
  DeviceBuffer buf(bytes), sink(256);
  fillBytes(buf.get(), 0x5a, bytes, s);
  const DeviceProperties props = deviceProperties(device);
  const dim3 grid(static_cast<unsigned>(props.multiprocessors * 8)), block(512);
  const int64_t n = static_cast<int64_t>(bytes / 16);
  launch("read bandwidth", readKernel, grid, block, 0, s, buf.get<const uint4>(), n, sink.get<unsigned>());  // warm-up
  double best = 0;
  Timer timer;
  for (int k = 0; k < passes; k++) {
    timer.start(s);
    launch("read bandwidth", readKernel, grid, block, 0, s, buf.get<const uint4>(), n, sink.get<unsigned>());
    timer.stop(s);
    const double ms = timer.milliseconds();
    if (ms > 0) best = std::max(best, static_cast<double>(bytes) / (ms * 1e6));
  }
  return best;
}

}  // namespace pc
