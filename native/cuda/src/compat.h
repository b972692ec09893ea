// What the kernels may use of CUDA C++, defined for the two ways this library is built:
//  - by nvcc for the GPU (the real build; __CUDACC__);
//  - by a plain C++ compiler with PRISM_CUDA_EMU, for tests on machines without a GPU: every
//    kernel body then runs on the CPU under emu.h's model of CUDA's execution (blocks run
//    one after another, the threads of a block as cooperative fibers that switch at
//    barriers and warp shuffles), so the kernels' indexing, reductions and orchestration
//    are checked against the CPU reference in CI, not only on a GPU.
// Kernels use only the names below (plus plain C++): launch() instead of <<<...>>>,
// PC_DYNAMIC_SMEM instead of `extern __shared__`, and the f16/bf16 helpers instead of the
// cuda_fp16 types. Code that only the real build has (tensor-core inline assembly, cuBLASLt)
// sits behind `#if PC_REAL_CUDA`.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__) && !defined(PRISM_CUDA_EMU)
#define PC_REAL_CUDA 1
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#else
#define PC_REAL_CUDA 0
#ifndef PRISM_CUDA_EMU
#error "native/cuda is built by nvcc, or by a C++ compiler with -DPRISM_CUDA_EMU"
#endif
#include <cmath>

#include "emu.h"
#endif

namespace pc {

#if PC_REAL_CUDA
#define PC_DEVICE __device__ __forceinline__
#define PC_HD __host__ __device__ __forceinline__
#define PC_DYNAMIC_SMEM(T, name) \
  extern __shared__ __align__(16) unsigned char pcDynamicSmem_[]; \
  T* name = reinterpret_cast<T*>(pcDynamicSmem_)

PC_HD float f16ToFloat(uint16_t h) { return __half2float(__ushort_as_half(h)); }
PC_HD uint16_t floatToF16(float f) { return __half_as_ushort(__float2half_rn(f)); }
PC_HD float bf16ToFloat(uint16_t h) { return __bfloat162float(__ushort_as_bfloat16(h)); }
PC_HD uint16_t floatToBf16(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }

PC_DEVICE float warpSum(float v) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}
PC_DEVICE float warpMax(float v) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, m));
  return v;
}
template <typename T>
PC_DEVICE T shflXor(T v, int laneMask) {
  return __shfl_xor_sync(0xffffffffu, v, laneMask);
}
template <typename T>
PC_DEVICE T shfl(T v, int srcLane) {
  return __shfl_sync(0xffffffffu, v, srcLane);
}
// acc + the dot product of the four signed bytes of a and b (dp4a: IDP.4A in SASS).
PC_DEVICE int dot4i8(int a, int b, int acc) { return __dp4a(a, b, acc); }
// A load that bypasses L1 (another block of the same launch wrote it; __threadfence orders).
PC_DEVICE float loadL2(const float* p) { return __ldcg(p); }
PC_DEVICE int roundToInt(float f) { return __float2int_rn(f); }
#else
#define PC_DEVICE inline
#define PC_HD inline
#define PC_DYNAMIC_SMEM(T, name) T* name = reinterpret_cast<T*>(::pcemu::dynamicSmem())

inline float f16ToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      man <<= 1;
      e++;
    } while ((man & 0x400u) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline uint16_t floatToF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (ax < 0x38800000u) {  // f16 subnormal (or zero): round to nearest even at 2^-24
    float a;
    std::memcpy(&a, &ax, 4);
    const float scaled = a * 16777216.0f;  // 2^24: exact
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  const uint32_t rounded = ax + 0xfffu + ((ax >> 13) & 1u);  // nearest even on 13 dropped bits
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}
inline float bf16ToFloat(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline uint16_t floatToBf16(float f) {
  uint32_t n;
  std::memcpy(&n, &f, 4);
  if ((n & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((n >> 16) | 64);
  return static_cast<uint16_t>((static_cast<uint64_t>(n) + (0x7fffu + ((n >> 16) & 1u))) >> 16);
}
inline float warpSum(float v) {
  for (int m = 16; m > 0; m >>= 1) v += ::pcemu::shflXor(v, m);
  return v;
}
inline float warpMax(float v) {
  for (int m = 16; m > 0; m >>= 1) v = std::fmax(v, ::pcemu::shflXor(v, m));
  return v;
}
template <typename T>
inline T shflXor(T v, int laneMask) {
  return ::pcemu::shflXor(v, laneMask);
}
template <typename T>
inline T shfl(T v, int srcLane) {
  return ::pcemu::shfl(v, srcLane);
}
inline int dot4i8(int a, int b, int acc) {
  for (int i = 0; i < 4; i++)
    acc += static_cast<int>(static_cast<int8_t>(a >> (8 * i))) * static_cast<int>(static_cast<int8_t>(b >> (8 * i)));
  return acc;
}
inline float loadL2(const float* p) { return *p; }
inline int roundToInt(float f) { return static_cast<int>(std::nearbyint(f)); }  // nearest even, as __float2int_rn
#endif

constexpr int kWarp = 32;

PC_HD int ceilDiv(int a, int b) { return (a + b - 1) / b; }
PC_HD int64_t ceilDiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Lane and warp of the calling thread in a one-dimensional block.
PC_DEVICE int laneId() { return static_cast<int>(threadIdx.x) & (kWarp - 1); }
PC_DEVICE int warpId() { return static_cast<int>(threadIdx.x) / kWarp; }

// Sum over a whole one-dimensional block (a multiple of 32 threads, at most 1024). `scratch`
// holds 32 floats of shared memory; every thread gets the total. The order of additions is
// fixed by the block shape, so the result does not change from run to run.
PC_DEVICE float blockSum(float v, float* scratch) {
  v = warpSum(v);
  const int nWarps = static_cast<int>(blockDim.x) / kWarp;
  __syncthreads();  // scratch may still be read by a previous call
  if (laneId() == 0) scratch[warpId()] = v;
  __syncthreads();
  float t = laneId() < nWarps ? scratch[laneId()] : 0.0f;
  return warpSum(t);
}
PC_DEVICE float blockMax(float v, float* scratch) {
  v = warpMax(v);
  const int nWarps = static_cast<int>(blockDim.x) / kWarp;
  __syncthreads();
  if (laneId() == 0) scratch[warpId()] = v;
  __syncthreads();
  float t = laneId() < nWarps ? scratch[laneId()] : -INFINITY;
  return warpMax(t);
}

}  // namespace pc
