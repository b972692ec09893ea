// A model of CUDA's execution on the CPU, for testing the kernels where there is no GPU
// (the PRISM_CUDA_EMU build, see compat.h). It keeps what the kernels' correctness depends
// on and nothing else:
//  - a launch runs every block of the grid, one block after another;
//  - the threads of a block are fibers on the calling thread; each runs until it reaches a
//    barrier (__syncthreads, __syncwarp, a warp shuffle) and the next one runs, so shared
//    memory written before a barrier is seen after it, and a missing barrier shows up as a
//    read of what another thread has not written yet (threads run in index order);
//  - a barrier some threads of the block (or warp) never reach is reported, not hung on;
//  - atomics are plain read-modify-writes (fibers never interleave inside one);
//  - shared memory starts filled with 0xff bytes (NaN as floats), so a read of shared memory
//    no thread wrote shows up in the results.
// Speed is not a goal: the tests run it on small shapes.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};

namespace pcemu {

struct ThreadState {
  dim3 threadIdx;
};
struct BlockState {
  dim3 blockIdx, blockDim, gridDim;
};

// The running fiber's and block's coordinates (valid only inside a kernel body).
const ThreadState& thread();
const BlockState& block();
void* dynamicSmem();

// Lane (0..31) of the calling thread: its linear index in the block, modulo 32.
int lane();
void syncthreads();
void syncwarp();
// Exchanges 8 bytes between the lanes of the calling thread's warp.
uint64_t exchange(uint64_t mine, int srcLane);

template <typename T>
T shfl(T v, int srcLane) {
  static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = exchange(bits, srcLane);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}
template <typename T>
T shflXor(T v, int laneMask) {
  return shfl(v, lane() ^ laneMask);
}

// Runs `body` as every thread of every block of the grid; returns when all have finished.
// Throws std::runtime_error on a barrier that cannot complete. With PCEMU_PROFILE set in the
// environment, the time of each kernel (by `name`) is summed and printed at exit.
void launch(dim3 grid, dim3 block, size_t dynamicSmemBytes, const std::function<void()>& body,
            const char* name = "kernel");

}  // namespace pcemu

// The CUDA names kernels use (emu.cc, which implements the model, does without them).
#ifndef PCEMU_IMPLEMENTATION
#define threadIdx (::pcemu::thread().threadIdx)
#define blockIdx (::pcemu::block().blockIdx)
#define blockDim (::pcemu::block().blockDim)
#define gridDim (::pcemu::block().gridDim)
#define __syncthreads() ::pcemu::syncthreads()
#define __syncwarp() ::pcemu::syncwarp()
#define __threadfence() ((void)0)
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)
#endif

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline int atomicAdd(int* p, int v) {
  const int old = *p;
  *p = old + v;
  return old;
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p = old + v;
  return old;
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  *p = old + v;
  return old;
}
inline float atomicAdd(float* p, float v) {
  const float old = *p;
  *p = old + v;
  return old;
}
inline int atomicExch(int* p, int v) {
  const int old = *p;
  *p = v;
  return old;
}
inline int atomicMax(int* p, int v) {
  const int old = *p;
  if (v > old) *p = v;
  return old;
}
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __clz(unsigned v) { return v == 0 ? 32 : __builtin_clz(v); }
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
