// The little of the CUDA runtime the library uses, behind one interface with two builds:
// runtime_cuda.cu (the GPU: cudaMalloc, streams, events, graphs) and runtime_emu.cc (the
// PRISM_CUDA_EMU test build: host memory, work done at once). Every failure throws
// pc::Error with the CUDA call and its message; capi.cu turns it into the C error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "compat.h"

namespace pc {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct DeviceProperties {
  std::string name;
  size_t totalBytes = 0, freeBytes = 0;
  int multiprocessors = 0, major = 0, minor = 0;
  size_t l2Bytes = 0;
  size_t sharedPerBlockOptin = 0;
  // From the memory clock and bus width (the datasheet rate); 0 when unknown.
  double peakBandwidthGBs = 0;
  bool emulated = false;
};

int deviceCount();
DeviceProperties deviceProperties(int device);
// Makes `device` current for the calling thread (every entry point calls it first).
void useDevice(int device);

class Stream;

// Device memory (cudaMalloc), freed by the destructor. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) { allocate(bytes); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), mapped_(std::exchange(o.mapped_, false)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      mapped_ = std::exchange(o.mapped_, false);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }
  void allocate(size_t bytes);
  // Memory that reads as zeros (the KV cache, the penalty counts).
  void allocateZeroed(size_t bytes, const Stream& s);
  void release() noexcept;
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
  bool mapped_ = false;  // emulation: an anonymous mapping (zero pages until written)
};

// Page-locked host memory (cudaMallocHost): the staging area of every step's copies.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { release(); }
  void allocate(size_t bytes);
  void release() noexcept;
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void synchronize() const;
  void* handle() const { return s_; }  // cudaStream_t

 private:
  void* s_ = nullptr;
};

void copyToDevice(void* dst, const void* src, size_t bytes, const Stream& s);
void copyToHost(void* dst, const void* src, size_t bytes, const Stream& s);
void copyDeviceToDevice(void* dst, const void* src, size_t bytes, const Stream& s);
void fillBytes(void* dst, int value, size_t bytes, const Stream& s);

// Elapsed-time measurement between two points of a stream.
class Timer {
 public:
  Timer();
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  void start(const Stream& s);
  void stop(const Stream& s);
  double milliseconds();  // waits for the stop point

 private:
  void* a_ = nullptr;
  void* b_ = nullptr;
  double hostStart_ = 0, hostStop_ = 0;
};

// A captured sequence of stream work replayed with one launch (decode steps, by batch size).
class Graph {
 public:
  Graph() = default;
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void beginCapture(const Stream& s);
  void endCapture(const Stream& s);
  // After a failure inside a capture: ends it if the stream is still capturing, drops what was
  // captured and clears the launch error, so the stream runs work again. Never throws.
  void abandonCapture(const Stream& s) noexcept;
  void launch(const Stream& s) const;
  bool ready() const { return exec_ != nullptr; }
  // Kernel nodes of the captured graph.
  int64_t kernelNodes() const;

 private:
  void* graph_ = nullptr;
  void* exec_ = nullptr;
};
// False in the emulation build (nothing to capture: work runs at once).
bool graphsSupported();

// Kernels launched through launch() by the calling thread so far (a step's launch count).
uint64_t launchesSoFar();
void noteLaunch();

// Throws pc::Error naming `what` if the last kernel launch failed.
void checkLaunch(const char* what);
// Lets a kernel use more than 48 KB of dynamic shared memory.
void allowSharedMemory(const void* kernel, size_t bytes);

// kernel<<<grid, block, smem, stream>>>(args...), or its emulation.
template <typename... Params, typename... Args>
void launch(const char* what, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, const Stream& s,
            Args... args) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;
  if (smem > 48 * 1024) allowSharedMemory(reinterpret_cast<const void*>(kernel), smem);
  noteLaunch();
#if PC_REAL_CUDA
  kernel<<<grid, block, smem, static_cast<cudaStream_t>(s.handle())>>>(static_cast<Params>(args)...);
  checkLaunch(what);
#else
  (void)s;
  try {
    pcemu::launch(grid, block, smem, [&] { kernel(static_cast<Params>(args)...); }, what);
  } catch (const std::exception& e) {
    throw Error(std::string(what) + ": " + e.what());
  }
#endif
}

}  // namespace pc
