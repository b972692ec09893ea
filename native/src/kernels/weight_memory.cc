// allocWeightBytes / freeWeightBytes (kernels.h) and the per-model arena (weight_memory.h).
#include "kernels/weight_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <new>

#include "kernels/kernels.h"

namespace prism {

namespace {

// A chunk holds many small matrices: 16 huge pages, so a model of a few hundred MiB of
// small weights takes a handful of chunks, and the unused tail of the last one (never
// touched, so never resident) is at most one chunk.
constexpr size_t kChunkBytes = 16 * kWeightHugePage;

thread_local WeightArena* currentArena = nullptr;

// Every live chunk, start → end: freeWeightBytes tells arena buffers from its own.
std::mutex registryMutex;
std::map<uintptr_t, uintptr_t>& registry() {
  static std::map<uintptr_t, uintptr_t> chunks;
  return chunks;
}

void* allocHuge(size_t n) {
  void* p = std::aligned_alloc(kWeightHugePage, (n + kWeightHugePage - 1) & ~(kWeightHugePage - 1));
  if (!p) throw std::bad_alloc();
  // Advice only: where THP is off, or the kernel refuses, the pages are small, as before.
  madvise(p, n & ~(kWeightHugePage - 1), MADV_HUGEPAGE);
  return p;
}

}  // namespace

WeightArena::~WeightArena() {
  std::lock_guard<std::mutex> lock(registryMutex);
  for (const Chunk& c : chunks_) {
    registry().erase(reinterpret_cast<uintptr_t>(c.base));
    std::free(c.base);
  }
}

void* WeightArena::allocate(size_t n) {
  const size_t need = (n + 63) & ~size_t(63);
  std::lock_guard<std::mutex> lock(mu_);
  if (chunks_.empty() || chunks_.back().size - used_ < need) {
    const size_t size = std::max(kChunkBytes, (need + kWeightHugePage - 1) & ~(kWeightHugePage - 1));
    auto* base = static_cast<uint8_t*>(allocHuge(size));
    {
      std::lock_guard<std::mutex> reg(registryMutex);
      registry()[reinterpret_cast<uintptr_t>(base)] = reinterpret_cast<uintptr_t>(base) + size;
    }
    chunks_.push_back({base, size});
    used_ = 0;
  }
  void* p = chunks_.back().base + used_;
  used_ += need;
  return p;
}

size_t WeightArena::chunkBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t total = 0;
  for (const Chunk& c : chunks_) total += c.size;
  return total;
}

WeightArenaScope::WeightArenaScope(WeightArena* arena) : previous_(currentArena) { currentArena = arena; }
WeightArenaScope::~WeightArenaScope() { currentArena = previous_; }

bool inWeightArena(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(registryMutex);
  const auto& chunks = registry();
  auto it = chunks.upper_bound(a);
  if (it == chunks.begin()) return false;
  --it;
  return a >= it->first && a < it->second;
}

void* allocWeightBytes(size_t n) {
  if (n >= kWeightHugePage) return allocHuge(n);
  if (currentArena != nullptr) return currentArena->allocate(n);
  void* p = std::aligned_alloc(64, (n + 63) & ~size_t(63));
  if (!p) throw std::bad_alloc();
  return p;
}

void freeWeightBytes(void* p) noexcept {
  // Arena buffers go back with their arena (the model), all at once.
  if (p == nullptr || inWeightArena(p)) return;
  std::free(p);
}

}  // namespace prism
