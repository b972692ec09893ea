// Where repacked weight bytes live (allocWeightBytes in kernels.h): a model's small weights
// are packed into its own 2 MiB-aligned chunks marked for transparent huge pages.
//
// Why: decode streams every weight byte once per token, and most matrices of a small model
// are well under 2 MiB (the default model's 210 Q/K/V/O/gate/up/down matrices are 83-663
// KiB, ~75% of its weight bytes). Allocated one by one they sat in 4 KiB pages, each one
// costing the TLB an entry per 4 KiB of the stream. Packed into huge-page chunks, the default
// model's one-token step took 0.79x the time (paired, same process; docs/benchmarks.md).
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace prism {

// One model's chunks. Allocation only; every chunk goes back when the arena is destroyed,
// which the model does after its weights (Model::weightArena is its first member).
class WeightArena {
 public:
  WeightArena() = default;
  WeightArena(const WeightArena&) = delete;
  WeightArena& operator=(const WeightArena&) = delete;
  ~WeightArena();

  // 64-byte-aligned room for n bytes (n below kWeightHugePage), in the current chunk or a new one.
  void* allocate(size_t n);
  // Bytes held in chunks (what resident memory can reach once every page is touched).
  size_t chunkBytes() const;

 private:
  struct Chunk {
    uint8_t* base;
    size_t size;
  };
  mutable std::mutex mu_;
  std::vector<Chunk> chunks_;
  size_t used_ = 0;  // bytes taken in the last chunk
};

// While a scope is alive, buffers under 2 MiB that allocWeightBytes hands out on this thread
// come from `arena` (model loading opens one; kernels' tests and temporaries do not).
class WeightArenaScope {
 public:
  explicit WeightArenaScope(WeightArena* arena);
  ~WeightArenaScope();
  WeightArenaScope(const WeightArenaScope&) = delete;
  WeightArenaScope& operator=(const WeightArenaScope&) = delete;

 private:
  WeightArena* previous_;
};

constexpr size_t kWeightHugePage = size_t(2) << 20;

// True when `p` lies in a live arena's chunk (its bytes go back with the arena, not one by one).
bool inWeightArena(const void* p);

}  // namespace prism
