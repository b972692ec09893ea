// runtime.h on the GPU: thin wrappers over the CUDA runtime that throw pc::Error.
#include <map>
#include <vector>
#include <mutex>
#include <string>

#include "runtime.h"

namespace pc {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorString(e));
}
cudaStream_t raw(const Stream& s) { return static_cast<cudaStream_t>(s.handle()); }

}  // namespace

int deviceCount() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) return 0;
  check(e, "cudaGetDeviceCount");
  return n;
}

DeviceProperties deviceProperties(int device) {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  DeviceProperties out;
  out.name = p.name;
  out.totalBytes = p.totalGlobalMem;
  out.multiprocessors = p.multiProcessorCount;
  out.major = p.major;
  out.minor = p.minor;
  out.l2Bytes = static_cast<size_t>(p.l2CacheSize);
  out.sharedPerBlockOptin = p.sharedMemPerBlockOptin;
  int clockKHz = 0, busBits = 0;
  if (cudaDeviceGetAttribute(&clockKHz, cudaDevAttrMemoryClockRate, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&busBits, cudaDevAttrGlobalMemoryBusWidth, device) == cudaSuccess)
    out.peakBandwidthGBs = 2.0 * clockKHz * 1e3 * (busBits / 8.0) / 1e9;  // double data rate
  cudaGetLastError();  // an attribute this driver lacks is not an error here
  int current = 0;
  check(cudaGetDevice(&current), "cudaGetDevice");
  check(cudaSetDevice(device), "cudaSetDevice");
  size_t freeBytes = 0, totalBytes = 0;
  check(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
  out.freeBytes = freeBytes;
  check(cudaSetDevice(current), "cudaSetDevice");
  return out;
}

void useDevice(int device) { check(cudaSetDevice(device), "cudaSetDevice"); }

void DeviceBuffer::allocate(size_t bytes) {
  release();
  if (bytes == 0) return;
  const cudaError_t e = cudaMalloc(&p_, bytes);
  if (e != cudaSuccess) {
    p_ = nullptr;
    cudaGetLastError();
    throw Error("cannot allocate " + std::to_string(bytes >> 20) + " MiB of device memory: " + cudaGetErrorString(e));
  }
  bytes_ = bytes;
}

void DeviceBuffer::allocateZeroed(size_t bytes, const Stream& s) {
  allocate(bytes);
  fillBytes(p_, 0, bytes, s);
}

void DeviceBuffer::release() noexcept {
  if (p_) cudaFree(p_);
  p_ = nullptr;
  bytes_ = 0;
}

void PinnedBuffer::allocate(size_t bytes) {
  release();
  if (bytes == 0) return;
  const cudaError_t e = cudaMallocHost(&p_, bytes);
  if (e != cudaSuccess) {
    p_ = nullptr;
    cudaGetLastError();
    throw Error("cannot allocate " + std::to_string(bytes >> 20) + " MiB of pinned host memory: " + cudaGetErrorString(e));
  }
  bytes_ = bytes;
}

void PinnedBuffer::release() noexcept {
  if (p_) cudaFreeHost(p_);
  p_ = nullptr;
  bytes_ = 0;
}

Stream::Stream() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  s_ = s;
}
Stream::~Stream() {
  if (s_) cudaStreamDestroy(static_cast<cudaStream_t>(s_));
}
void Stream::synchronize() const { check(cudaStreamSynchronize(raw(*this)), "cudaStreamSynchronize"); }

void copyToDevice(void* dst, const void* src, size_t bytes, const Stream& s) {
  if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, raw(s)), "cudaMemcpyAsync (to device)");
}
void copyToHost(void* dst, const void* src, size_t bytes, const Stream& s) {
  if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, raw(s)), "cudaMemcpyAsync (to host)");
}
void copyDeviceToDevice(void* dst, const void* src, size_t bytes, const Stream& s) {
  if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, raw(s)), "cudaMemcpyAsync (on device)");
}
void fillBytes(void* dst, int value, size_t bytes, const Stream& s) {
  if (bytes) check(cudaMemsetAsync(dst, value, bytes, raw(s)), "cudaMemsetAsync");
}

Timer::Timer() {
  cudaEvent_t a = nullptr, b = nullptr;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  a_ = a;
  b_ = b;
}
Timer::~Timer() {
  if (a_) cudaEventDestroy(static_cast<cudaEvent_t>(a_));
  if (b_) cudaEventDestroy(static_cast<cudaEvent_t>(b_));
}
void Timer::start(const Stream& s) { check(cudaEventRecord(static_cast<cudaEvent_t>(a_), raw(s)), "cudaEventRecord"); }
void Timer::stop(const Stream& s) { check(cudaEventRecord(static_cast<cudaEvent_t>(b_), raw(s)), "cudaEventRecord"); }
double Timer::milliseconds() {
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(b_)), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(a_), static_cast<cudaEvent_t>(b_)), "cudaEventElapsedTime");
  return ms;
}

Graph::~Graph() {
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
}
void Graph::beginCapture(const Stream& s) {
  check(cudaStreamBeginCapture(raw(s), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
}
void Graph::endCapture(const Stream& s) {
  cudaGraph_t g = nullptr;
  check(cudaStreamEndCapture(raw(s), &g), "cudaStreamEndCapture");
  graph_ = g;
  cudaGraphExec_t e = nullptr;
  check(cudaGraphInstantiate(&e, g, 0), "cudaGraphInstantiate");
  exec_ = e;
}
void Graph::abandonCapture(const Stream& s) noexcept {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(raw(s), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(raw(s), &g);
    if (g) cudaGraphDestroy(g);
  }
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
  exec_ = nullptr;
  graph_ = nullptr;
  cudaGetLastError();
}
void Graph::launch(const Stream& s) const {
  check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), raw(s)), "cudaGraphLaunch");
}
bool graphsSupported() { return true; }
int64_t Graph::kernelNodes() const {
  if (!graph_) return 0;
  cudaGraph_t g = static_cast<cudaGraph_t>(graph_);
  size_t count = 0;
  check(cudaGraphGetNodes(g, nullptr, &count), "cudaGraphGetNodes");
  std::vector<cudaGraphNode_t> nodes(count);
  check(cudaGraphGetNodes(g, nodes.data(), &count), "cudaGraphGetNodes");
  int64_t kernels = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    check(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType");
    kernels += type == cudaGraphNodeTypeKernel;
  }
  return kernels;
}

namespace {
thread_local uint64_t launches = 0;  // a step's launches all happen on the thread running it
}
uint64_t launchesSoFar() { return launches; }
void noteLaunch() { launches++; }

void checkLaunch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw Error(std::string("launching ") + what + ": " + cudaGetErrorString(e));
}

void allowSharedMemory(const void* kernel, size_t bytes) {
  // Once per kernel and size (a launch inside a graph capture must not change it).
  static std::mutex mu;
  static std::map<const void*, size_t> allowed;
  std::lock_guard<std::mutex> lock(mu);
  size_t& have = allowed[kernel];
  if (bytes <= have) return;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
        "cudaFuncSetAttribute (dynamic shared memory)");
  have = bytes;
}

}  // namespace pc
