// runtime.h in the PRISM_CUDA_EMU test build: "device" memory is host memory and every
// piece of stream work is done when it is enqueued, so synchronisation is a no-op.
#include <sys/mman.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include "runtime.h"

namespace pc {
namespace {

double nowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int deviceCount() { return 1; }

DeviceProperties deviceProperties(int device) {
  if (device != 0) throw Error("emulated CUDA: there is only device 0");
  DeviceProperties p;
  p.name = "emulated CUDA device (CPU, PRISM_CUDA_EMU test build)";
  // Small, so that engines sized from free memory stay small on the machine running tests.
  p.totalBytes = size_t{1} << 30;
  p.freeBytes = size_t{1} << 30;
  p.multiprocessors = 4;
  p.major = 9;
  p.minor = 0;
  p.l2Bytes = size_t{4} << 20;
  p.sharedPerBlockOptin = 227 * 1024;
  p.emulated = true;
  return p;
}

void useDevice(int device) {
  if (device != 0) throw Error("emulated CUDA: there is only device 0");
}

void DeviceBuffer::allocate(size_t bytes) {
  release();
  if (bytes == 0) return;
  // 256-byte aligned like cudaMalloc; filled with 0xff (NaN as floats) so a read of memory
  // nothing wrote shows up in results, as uninitialised device memory would.
  p_ = std::aligned_alloc(256, (bytes + 255) & ~size_t{255});
  if (!p_) throw Error("emulated CUDA: cannot allocate " + std::to_string(bytes) + " bytes");
  std::memset(p_, 0xff, bytes);
  bytes_ = bytes;
}
void DeviceBuffer::allocateZeroed(size_t bytes, const Stream&) {
  release();
  if (bytes == 0) return;
  // Zero pages until written: a KV pool sized for the "device" costs the host only what the
  // steps touch.
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw Error("emulated CUDA: cannot map " + std::to_string(bytes) + " bytes");
  p_ = p;
  bytes_ = bytes;
  mapped_ = true;
}

void DeviceBuffer::release() noexcept {
  if (mapped_) munmap(p_, bytes_);
  else std::free(p_);
  p_ = nullptr;
  bytes_ = 0;
  mapped_ = false;
}

void PinnedBuffer::allocate(size_t bytes) {
  release();
  if (bytes == 0) return;
  p_ = std::aligned_alloc(256, (bytes + 255) & ~size_t{255});
  if (!p_) throw Error("emulated CUDA: cannot allocate pinned memory");
  bytes_ = bytes;
}
void PinnedBuffer::release() noexcept {
  std::free(p_);
  p_ = nullptr;
  bytes_ = 0;
}

Stream::Stream() = default;
Stream::~Stream() = default;
void Stream::synchronize() const {}

void copyToDevice(void* dst, const void* src, size_t bytes, const Stream&) {
  if (bytes) std::memcpy(dst, src, bytes);
}
void copyToHost(void* dst, const void* src, size_t bytes, const Stream&) {
  if (bytes) std::memcpy(dst, src, bytes);
}
void copyDeviceToDevice(void* dst, const void* src, size_t bytes, const Stream&) {
  if (bytes) std::memmove(dst, src, bytes);
}
void fillBytes(void* dst, int value, size_t bytes, const Stream&) {
  if (bytes) std::memset(dst, value, bytes);
}

Timer::Timer() = default;
Timer::~Timer() = default;
void Timer::start(const Stream&) { hostStart_ = nowMs(); }
void Timer::stop(const Stream&) { hostStop_ = nowMs(); }
double Timer::milliseconds() { return hostStop_ - hostStart_; }

Graph::~Graph() = default;
void Graph::beginCapture(const Stream&) { throw Error("emulated CUDA: no graphs"); }
void Graph::endCapture(const Stream&) { throw Error("emulated CUDA: no graphs"); }
void Graph::abandonCapture(const Stream&) noexcept {}
void Graph::launch(const Stream&) const { throw Error("emulated CUDA: no graphs"); }
bool graphsSupported() { return false; }

int64_t Graph::kernelNodes() const { return 0; }

namespace {
thread_local uint64_t launches = 0;  // a step's launches all happen on the thread running it
}
uint64_t launchesSoFar() { return launches; }
void noteLaunch() { launches++; }

void checkLaunch(const char*) {}
void allowSharedMemory(const void*, size_t) {}

}  // namespace pc
