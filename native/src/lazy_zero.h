// Zero-filled buffers whose pages become resident only when first written.
//
// A context's activation buffers are sized for the largest prefill (maxBatchTokens, 8192 by
// default): ~1.2 GB at 1B shapes, of which a decode step touches a few rows. std::vector's
// resize() writes every element, so all of it was resident from load on. LazyZeroVector
// gets large allocations straight from mmap (pages the kernel zero-fills on first touch)
// and constructs elements without writing them, so the buffer still reads as zeros — the
// same values as before, no code may notice — but costs memory only for the rows a step
// actually used. Small allocations come from calloc (zeroed the ordinary way).
//
// resize() yields zeros only for memory the vector has not used before (a fresh
// allocation); shrinking and growing again keeps the old values, unlike std::vector. The
// buffers this is for are sized once and never shrink.
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

namespace prism {

void* lazyZeroAlloc(size_t bytes);
void lazyZeroFree(void* p, size_t bytes) noexcept;

template <class T>
struct LazyZeroAllocator {
  using value_type = T;
  LazyZeroAllocator() = default;
  template <class U>
  LazyZeroAllocator(const LazyZeroAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(lazyZeroAlloc(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { lazyZeroFree(p, n * sizeof(T)); }
  // Default-initialisation: for the arithmetic types used here, no write at all.
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U>
  bool operator==(const LazyZeroAllocator<U>&) const noexcept { return true; }
};

template <class T>
using LazyZeroVector = std::vector<T, LazyZeroAllocator<T>>;

// Allocations of at least this many bytes are mapped (whole pages, untouched until used).
inline constexpr size_t kLazyZeroMapBytes = size_t(1) << 20;

inline void* lazyZeroAlloc(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes < kLazyZeroMapBytes) {
    void* p = std::calloc(1, bytes);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

inline void lazyZeroFree(void* p, size_t bytes) noexcept {
  if (!p) return;
  if (bytes == 0) bytes = 1;
  if (bytes < kLazyZeroMapBytes) std::free(p);
  else munmap(p, bytes);
}

}  // namespace prism
