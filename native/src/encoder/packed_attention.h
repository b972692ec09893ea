// Bidirectional multi-head attention over whole inputs packed end to end (no padding): every
// query of an input attends to every key of that input and to no other's. The encoders
// (encoder_forward.cc) and the vision encoder (vision/vision_forward.cc) run their attention
// here.
#pragma once
#include <cstdint>
#include <vector>

#include "thread_pool.h"

namespace prism {

// qkv: [T × 3D] rows [q (D) | k (D) | v (D)], D = heads × headDim (headDim a multiple of 8);
// out: [T × D]. Input s is rows seqOffsets[s] .. seqOffsets[s+1]. scores: one buffer per pool
// thread of at least the longest input's length. One work item is (input, head); softmax in
// f32 with the max subtracted, scores scaled by 1/sqrt(headDim).
void packedAttention(ThreadPool& pool, const float* qkv, float* out, const int32_t* seqOffsets, int32_t S,
                     int64_t heads, int64_t headDim, std::vector<std::vector<float>>& scores);

}  // namespace prism
