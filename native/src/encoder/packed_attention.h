// Bidirectional multi-head attention over whole inputs packed end to end (no padding): every
// query of an input attends to every key of that input and to no other's. The encoders
// (encoder_forward.cc) and the vision encoder (vision/vision_forward.cc) run their attention
// here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "thread_pool.h"

namespace prism {

// qkv: [T × 3D] rows [q (D) | k (D) | v (D)], D = heads × headDim (headDim a multiple of 8);
// out: [T × D]. Input s is rows seqOffsets[s] .. seqOffsets[s+1]. scratch: one buffer per pool
// thread (the head's keys transposed and a block of queries' scores), grown here when it holds
// fewer than packedAttentionScratch(longest input, headDim) floats. One work item is (input,
// head), taken by whichever thread is free; softmax in f32 with the max subtracted, scores
// scaled by 1/sqrt(headDim).
void packedAttention(ThreadPool& pool, const float* qkv, float* out, const int32_t* seqOffsets, int32_t S,
                     int64_t heads, int64_t headDim, std::vector<std::vector<float>>& scratch);

// Floats of scratch one thread needs for inputs of up to `longest` tokens.
size_t packedAttentionScratch(int64_t longest, int64_t headDim);

}  // namespace prism
