// Sampling on the GPU, one block per sequence: only token ids (and the logprobs asked for)
// come back to the host. The rules are the CPU sampler's (native/src/sampler.cc):
// penalties over the token history, the allowed-token mask, temperature, greedy argmax
// (lowest id on ties) or top-k then top-p then a draw with the host's uniform number.
//
// Candidates are ranked by a 64-bit key, the logit's order-preserving bits above the
// complement of the token id, so every key is distinct and ties go to the lower id as on
// the CPU. The k-th largest key (top-k, top logprobs) and the top-p cut are found by radix
// selection, 8 bits at a time, with histograms in shared memory. Probability masses are
// fixed-point integers (exp(z - max)·2^40): their sums do not depend on the order threads
// add them, so the same seed gives the same token on every run and in every batch. The draw
// walks the kept tokens in vocabulary order (the CPU walks a cut list best-first: the same
// distribution, not always the same token for the same number).
#include <cmath>

#include "kernels.h"

namespace pc {
namespace {

constexpr int kThreads = 1024;
constexpr double kMassScale = 1099511627776.0;  // 2^40

PC_DEVICE uint64_t keyOf(float z, int64_t t) {
  const uint32_t u = __float_as_uint(z);
  const uint32_t ordered = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<uint64_t>(ordered) << 32) | (0xffffffffu - static_cast<uint32_t>(t));
}
PC_DEVICE int64_t tokenOfKey(uint64_t key) { return 0xffffffffu - static_cast<uint32_t>(key & 0xffffffffu); }

PC_DEVICE uint64_t massOf(float z, float maxZ) {
  return static_cast<uint64_t>(static_cast<double>(expf(z - maxZ)) * kMassScale);
}

// Block-wide reductions over kThreads threads (32 warps); `scratch` holds 32 entries.
PC_DEVICE uint64_t blockMaxU64(uint64_t v, uint64_t* scratch) {
  for (int m = 16; m > 0; m >>= 1) {
    const uint64_t o = shflXor(v, m);
    v = o > v ? o : v;
  }
  __syncthreads();
  if (laneId() == 0) scratch[warpId()] = v;
  __syncthreads();
  v = scratch[laneId()];
  for (int m = 16; m > 0; m >>= 1) {
    const uint64_t o = shflXor(v, m);
    v = o > v ? o : v;
  }
  return v;
}
PC_DEVICE uint64_t blockSumU64(uint64_t v, uint64_t* scratch) {
  for (int m = 16; m > 0; m >>= 1) v += shflXor(v, m);
  __syncthreads();
  if (laneId() == 0) scratch[warpId()] = v;
  __syncthreads();
  v = scratch[laneId()];
  for (int m = 16; m > 0; m >>= 1) v += shflXor(v, m);
  return v;
}

struct Shared {
  uint64_t scratch[32];
  unsigned count[256];
  unsigned long long mass[256];
  uint64_t scan[kThreads];
  uint64_t top[kThreads];
  uint64_t prefix;
  uint64_t above;
  unsigned remaining;
  int digit;
  int64_t chosen;
  unsigned topCount;
};

// The k-th largest key (k ≥ 1, at most the number of candidates) among tokens with a finite
// logit and key ≥ floor.
PC_DEVICE uint64_t selectKth(const float* z, int64_t V, unsigned k, uint64_t floor, Shared& sh) {
  const int tid = static_cast<int>(threadIdx.x);
  uint64_t prefix = 0, mask = 0;
  if (tid == 0) sh.remaining = k;
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int d = tid; d < 256; d += kThreads) sh.count[d] = 0;
    __syncthreads();
    for (int64_t t = tid; t < V; t += kThreads) {
      const float v = z[t];
      if (!(v > -INFINITY)) continue;
      const uint64_t key = keyOf(v, t);
      if (key >= floor && (key & mask) == prefix) atomicAdd(&sh.count[(key >> shift) & 255], 1u);
    }
    __syncthreads();
    if (tid == 0) {
      unsigned rem = sh.remaining;
      int digit = 0;
      for (int d = 255; d >= 0; d--) {
        if (sh.count[d] >= rem) {
          digit = d;
          break;
        }
        rem -= sh.count[d];
      }
      sh.remaining = rem;
      sh.digit = digit;
    }
    __syncthreads();
    prefix |= static_cast<uint64_t>(sh.digit) << shift;
    mask |= uint64_t{255} << shift;
  }
  return prefix;
}

// The largest key τ such that the mass of candidates (finite, key ≥ floor) with key ≥ τ is
// at least `target` (≥ 1, at most their total): the top-p cut.
PC_DEVICE uint64_t selectByMass(const float* z, int64_t V, float maxZ, uint64_t target, uint64_t floor, Shared& sh) {
  const int tid = static_cast<int>(threadIdx.x);
  uint64_t prefix = 0, mask = 0;
  if (tid == 0) sh.above = 0;
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int d = tid; d < 256; d += kThreads) {
      sh.count[d] = 0;
      sh.mass[d] = 0;
    }
    __syncthreads();
    for (int64_t t = tid; t < V; t += kThreads) {
      const float v = z[t];
      if (!(v > -INFINITY)) continue;
      const uint64_t key = keyOf(v, t);
      if (key >= floor && (key & mask) == prefix) {
        const int d = static_cast<int>((key >> shift) & 255);
        atomicAdd(&sh.count[d], 1u);
        atomicAdd(&sh.mass[d], static_cast<unsigned long long>(massOf(v, maxZ)));
      }
    }
    __syncthreads();
    if (tid == 0) {
      uint64_t above = sh.above;
      int digit = 0;
      for (int d = 255; d >= 0; d--) {
        if (sh.count[d] > 0 && above + sh.mass[d] >= target) {
          digit = d;
          break;
        }
        above += sh.mass[d];
      }
      sh.above = above;
      sh.digit = digit;
    }
    __syncthreads();
    prefix |= static_cast<uint64_t>(sh.digit) << shift;
    mask |= uint64_t{255} << shift;
  }
  return prefix;
}

// One block per sequence with sampling to do (penalties applied already).
__global__ void __launch_bounds__(kThreads) sampleKernel(SamplingParams p) {
  __shared__ Shared sh;
  const int s = static_cast<int>(blockIdx.x), tid = static_cast<int>(threadIdx.x);
  const int row = p.seqRow[s];
  const int nTop = p.topLogprobs[s];
  int32_t* topIds = p.outTopIds + static_cast<int64_t>(s) * p.topStride;
  float* topValues = p.outTopValues + static_cast<int64_t>(s) * p.topStride;
  for (int i = tid; i < p.topStride; i += kThreads) {
    topIds[i] = -1;
    topValues[i] = NAN;
  }
  if (row < 0) {
    if (tid == 0) {
      p.outToken[s] = -1;
      p.outLogprob[s] = NAN;
      p.outError[s] = 0;
    }
    return;
  }
  const int64_t V = p.V;
  float* z = p.logits + static_cast<int64_t>(row) * V;
  const float temp = p.temperature[s];
  const bool greedy = !(temp > 0.0f);
  const bool scale = !greedy && temp != 1.0f;
  const float inv = scale ? 1.0f / temp : 1.0f;
  const uint32_t* mask = p.maskRow[s] >= 0 ? p.masks + static_cast<int64_t>(p.maskRow[s]) * ((V + 31) / 32) : nullptr;

  // Mask and temperature in place; the best key and whether any logit is NaN.
  uint64_t best = 0;
  unsigned nan = 0, allowed = 0;
  for (int64_t t = tid; t < V; t += kThreads) {
    float v = z[t];
    if (mask && !((mask[t >> 5] >> (t & 31)) & 1u)) v = -INFINITY;
    if (scale) v *= inv;
    z[t] = v;
    if (v != v) nan = 1;
    else if (v > -INFINITY) {
      allowed++;
      const uint64_t key = keyOf(v, t);
      best = key > best ? key : best;
    }
  }
  best = blockMaxU64(best, sh.scratch);
  nan = static_cast<unsigned>(blockSumU64(nan, sh.scratch));
  const unsigned nAllowed = static_cast<unsigned>(blockSumU64(allowed, sh.scratch));
  if (nan > 0 || nAllowed == 0) {
    if (tid == 0) {
      p.outToken[s] = -1;
      p.outLogprob[s] = NAN;
      p.outError[s] = nan > 0 ? 1 : 2;
    }
    return;
  }
  const int64_t bestToken = tokenOfKey(best);
  const float maxZ = z[bestToken];
  int64_t chosen = bestToken;

  if (!greedy && p.topK[s] != 1) {
    const int topK = p.topK[s];
    const unsigned k = topK > 0 && static_cast<unsigned>(topK) < nAllowed ? static_cast<unsigned>(topK) : nAllowed;
    uint64_t floor = k < nAllowed ? selectKth(z, V, k, 0, sh) : 0;
    const float topP = p.topP[s];
    if (topP < 1.0f) {
      uint64_t local = 0;
      for (int64_t t = tid; t < V; t += kThreads) {
        const float v = z[t];
        if (v > -INFINITY && keyOf(v, t) >= floor) local += massOf(v, maxZ);
      }
      const uint64_t total = blockSumU64(local, sh.scratch);
      double want = std::ceil(static_cast<double>(topP) * static_cast<double>(total));
      uint64_t target = want < 1.0 ? 1 : static_cast<uint64_t>(want);
      if (target > total) target = total;
      const uint64_t cut = selectByMass(z, V, maxZ, target, floor, sh);
      floor = cut > floor ? cut : floor;
    }
    // The draw: contiguous ranges of the vocabulary per thread, scanned in id order.
    const int64_t per = (V + kThreads - 1) / kThreads;
    const int64_t lo = tid * per, hi = lo + per < V ? lo + per : V;
    uint64_t mine = 0;
    for (int64_t t = lo; t < hi; t++) {
      const float v = z[t];
      if (v > -INFINITY && keyOf(v, t) >= floor) mine += massOf(v, maxZ);
    }
    sh.scan[tid] = mine;
    __syncthreads();
    for (int off = 1; off < kThreads; off <<= 1) {  // inclusive prefix sums
      const uint64_t add = tid >= off ? sh.scan[tid - off] : 0;
      __syncthreads();
      sh.scan[tid] += add;
      __syncthreads();
    }
    const uint64_t kept = sh.scan[kThreads - 1];
    const double u = p.uniform[s];
    uint64_t target = static_cast<uint64_t>(u * static_cast<double>(kept));
    if (target >= kept) target = kept - 1;
    if (tid == 0) sh.chosen = bestToken;  // kept ≥ the best token's 2^40: always replaced
    __syncthreads();
    const uint64_t before = sh.scan[tid] - mine;
    if (mine > 0 && before <= target && target < before + mine) {
      uint64_t acc = before;
      for (int64_t t = lo; t < hi; t++) {
        const float v = z[t];
        if (!(v > -INFINITY) || keyOf(v, t) < floor) continue;
        acc += massOf(v, maxZ);
        if (acc > target) {
          sh.chosen = t;
          break;
        }
      }
    }
    __syncthreads();
    chosen = sh.chosen;
  }

  float logprob = NAN;
  if (nTop >= 0) {
    float se = 0.0f;
    for (int64_t t = tid; t < V; t += kThreads) se += expf(z[t] - maxZ);
    __shared__ float fscratch[32];
    se = blockSum(se, fscratch);
    const float lse = maxZ + logf(se);
    logprob = z[chosen] - lse;
    if (nTop > 0) {
      const unsigned n = static_cast<unsigned>(nTop) < nAllowed ? static_cast<unsigned>(nTop) : nAllowed;
      const uint64_t floor = selectKth(z, V, n, 0, sh);
      sh.top[tid] = 0;
      if (tid == 0) sh.topCount = 0;
      __syncthreads();
      for (int64_t t = tid; t < V; t += kThreads) {
        const float v = z[t];
        if (v > -INFINITY && keyOf(v, t) >= floor) sh.top[atomicAdd(&sh.topCount, 1u)] = keyOf(v, t);
      }
      __syncthreads();
      for (int size = 2; size <= kThreads; size <<= 1) {  // bitonic sort, descending
        for (int j = size >> 1; j > 0; j >>= 1) {
          const int partner = tid ^ j;
          if (partner > tid) {
            const uint64_t a = sh.top[tid], b = sh.top[partner];
            const bool descending = (tid & size) == 0;
            if (descending ? a < b : a > b) {
              sh.top[tid] = b;
              sh.top[partner] = a;
            }
          }
          __syncthreads();
        }
      }
      if (tid < static_cast<int>(n)) {
        const int64_t t = tokenOfKey(sh.top[tid]);
        topIds[tid] = static_cast<int32_t>(t);
        topValues[tid] = z[t] - lse;
      }
    }
  }
  if (tid == 0) {
    p.outToken[s] = p.sample[s] ? static_cast<int32_t>(chosen) : -1;
    p.outLogprob[s] = logprob;
    p.outError[s] = 0;
  }
}

// Penalties over each sequence's token history (HF repetition penalty, OpenAI presence and
// frequency), applied once per distinct token: counts are gathered in a zeroed array and
// taken back out (atomicExch) by the first thread to meet each token, leaving it zero again.
__global__ void penaltyKernel(SamplingParams p) {
  int32_t* counts = p.penaltyCounts + static_cast<int64_t>(blockIdx.x) * p.V;
  for (int s = static_cast<int>(blockIdx.x); s < p.S; s += static_cast<int>(gridDim.x)) {
    const int row = p.seqRow[s];
    const float rep = p.repetitionPenalty[s], pres = p.presencePenalty[s], freq = p.frequencyPenalty[s];
    const int b = p.penaltyOffsets[s], e = p.penaltyOffsets[s + 1];
    if (row < 0 || e == b || (rep == 1.0f && pres == 0.0f && freq == 0.0f)) continue;
    for (int k = b + static_cast<int>(threadIdx.x); k < e; k += static_cast<int>(blockDim.x))
      atomicAdd(&counts[p.penaltyTokens[k]], 1);
    __syncthreads();
    float* z = p.logits + static_cast<int64_t>(row) * p.V;
    for (int k = b + static_cast<int>(threadIdx.x); k < e; k += static_cast<int>(blockDim.x)) {
      const int32_t t = p.penaltyTokens[k];
      const int c = atomicExch(&counts[t], 0);
      if (c > 0) {
        float v = z[t];
        if (rep != 1.0f) v = v > 0 ? v / rep : v * rep;
        v -= pres + freq * static_cast<float>(c);
        z[t] = v;
      }
    }
    __syncthreads();
  }
}

}  // namespace

void sample(const SamplingParams& p, const Stream& s) {
  if (p.S == 0) return;
  const int blocks = p.S < kPenaltyBlocks ? p.S : kPenaltyBlocks;
  launch("penalties", penaltyKernel, dim3(static_cast<unsigned>(blocks)), dim3(256), 0, s, p);
  launch("sample", sampleKernel, dim3(static_cast<unsigned>(p.S)), dim3(kThreads), 0, s, p);
}

}  // namespace pc
