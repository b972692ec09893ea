// The fiber scheduler behind emu.h. One launch at a time per calling thread; each block's
// threads are ucontext fibers with their own stacks (kept between launches).
#define PCEMU_IMPLEMENTATION
#include "emu.h"

#include <sys/mman.h>
#include <ucontext.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace pcemu {
namespace {

constexpr size_t kStackBytes = 256 * 1024;

enum class State { Ready, AtBlockBarrier, AtWarpBarrier, Done };

struct Fiber {
  ucontext_t ctx{};
  void* stack = nullptr;
  ThreadState ts;
  int linear = 0;
  State state = State::Ready;
  ~Fiber() {
    if (stack) munmap(stack, kStackBytes);
  }
};

struct Launch {
  ucontext_t scheduler{};
  std::vector<std::unique_ptr<Fiber>> fibers;  // grown, never shrunk (stacks are reused)
  int nThreads = 0;
  Fiber* current = nullptr;
  BlockState block;
  const std::function<void()>* body = nullptr;
  std::vector<unsigned char> smem;
  std::vector<uint64_t> slots;  // one per thread: the values a warp exchanges
  bool active = false;
};

thread_local Launch tl;

Fiber& currentFiber() {
  if (!tl.active || tl.current == nullptr) throw std::logic_error("pcemu: called outside a kernel");
  return *tl.current;
}

void yieldTo(State s) {
  Fiber& f = currentFiber();
  f.state = s;
  swapcontext(&f.ctx, &tl.scheduler);
}

void fiberEntry() {
  (*tl.body)();
  tl.current->state = State::Done;
  // Returning resumes uc_link (the scheduler).
}

void prepare(Fiber& f) {
  if (f.stack == nullptr) {
    f.stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (f.stack == MAP_FAILED) {
      f.stack = nullptr;
      throw std::runtime_error("pcemu: cannot map a fiber stack");
    }
  }
  getcontext(&f.ctx);
  f.ctx.uc_stack.ss_sp = f.stack;
  f.ctx.uc_stack.ss_size = kStackBytes;
  f.ctx.uc_link = &tl.scheduler;
  makecontext(&f.ctx, fiberEntry, 0);
  f.state = State::Ready;
}

[[noreturn]] void stuck(const std::string& why) {
  throw std::runtime_error("pcemu: block (" + std::to_string(tl.block.blockIdx.x) + "," +
                           std::to_string(tl.block.blockIdx.y) + "," + std::to_string(tl.block.blockIdx.z) + "): " + why);
}

// Runs the fibers of one block until all are done, releasing barriers as they fill.
void runBlock() {
  const int n = tl.nThreads;
  for (int i = 0; i < n; i++) prepare(*tl.fibers[i]);
  std::memset(tl.smem.data(), 0xff, tl.smem.size());
  for (;;) {
    for (int i = 0; i < n; i++) {
      Fiber& f = *tl.fibers[i];
      if (f.state != State::Ready) continue;
      tl.current = &f;
      swapcontext(&tl.scheduler, &f.ctx);
      tl.current = nullptr;
    }
    int done = 0, atBlock = 0;
    bool released = false;
    for (int w = 0; w * 32 < n; w++) {
      const int lo = w * 32, hi = std::min(n, lo + 32);
      int atWarp = 0, exited = 0;
      for (int i = lo; i < hi; i++) {
        atWarp += tl.fibers[i]->state == State::AtWarpBarrier;
        exited += tl.fibers[i]->state == State::Done;
      }
      if (atWarp == 0) continue;
      if (atWarp != hi - lo)
        stuck("warp " + std::to_string(w) + ": a warp shuffle or __syncwarp that " +
              std::to_string(hi - lo - atWarp) + " of its lanes never reach (" + std::to_string(exited) + " exited)");
      for (int i = lo; i < hi; i++) tl.fibers[i]->state = State::Ready;
      released = true;
    }
    if (released) continue;
    for (int i = 0; i < n; i++) {
      done += tl.fibers[i]->state == State::Done;
      atBlock += tl.fibers[i]->state == State::AtBlockBarrier;
    }
    if (done == n) return;
    if (atBlock + done == n) {
      if (done > 0)
        stuck("__syncthreads reached by " + std::to_string(atBlock) + " threads after " + std::to_string(done) +
              " others exited");
      for (int i = 0; i < n; i++) tl.fibers[i]->state = State::Ready;
      continue;
    }
    stuck("no thread can proceed");
  }
}

}  // namespace

const ThreadState& thread() { return currentFiber().ts; }
const BlockState& block() {
  if (!tl.active) throw std::logic_error("pcemu: called outside a kernel");
  return tl.block;
}
void* dynamicSmem() {
  if (!tl.active) throw std::logic_error("pcemu: called outside a kernel");
  return tl.smem.data();
}
int lane() { return currentFiber().linear & 31; }
void syncthreads() { yieldTo(State::AtBlockBarrier); }
void syncwarp() { yieldTo(State::AtWarpBarrier); }

uint64_t exchange(uint64_t mine, int srcLane) {
  Fiber& f = currentFiber();
  const int base = f.linear & ~31;
  tl.slots[f.linear] = mine;
  yieldTo(State::AtWarpBarrier);  // every lane has written
  const int src = base + (srcLane & 31);
  const uint64_t v = src < tl.nThreads ? tl.slots[src] : mine;
  yieldTo(State::AtWarpBarrier);  // every lane has read before the slots are reused
  return v;
}

void launch(dim3 grid, dim3 block, size_t dynamicSmemBytes, const std::function<void()>& body) {
  if (tl.active) throw std::logic_error("pcemu: a kernel launched another kernel");
  const long long threads = static_cast<long long>(block.x) * block.y * block.z;
  if (threads < 1 || threads > 1024) throw std::invalid_argument("pcemu: a block must have 1 to 1024 threads");
  if (grid.x < 1 || grid.y < 1 || grid.z < 1 || grid.y > 65535 || grid.z > 65535)
    throw std::invalid_argument("pcemu: bad grid dimensions");
  if (dynamicSmemBytes > 227 * 1024) throw std::invalid_argument("pcemu: more dynamic shared memory than a block can have");
  tl.nThreads = static_cast<int>(threads);
  while (static_cast<int>(tl.fibers.size()) < tl.nThreads) tl.fibers.push_back(std::make_unique<Fiber>());
  for (int i = 0; i < tl.nThreads; i++) {
    Fiber& f = *tl.fibers[i];
    f.linear = i;
    f.ts.threadIdx = dim3(i % block.x, (i / block.x) % block.y, i / (block.x * block.y));
  }
  tl.slots.assign(tl.nThreads, 0);
  tl.smem.assign(dynamicSmemBytes + 16, 0xff);
  tl.body = &body;
  tl.block.blockDim = block;
  tl.block.gridDim = grid;
  tl.active = true;
  try {
    for (unsigned z = 0; z < grid.z; z++)
      for (unsigned y = 0; y < grid.y; y++)
        for (unsigned x = 0; x < grid.x; x++) {
          tl.block.blockIdx = dim3(x, y, z);
          runBlock();
        }
  } catch (...) {
    tl.active = false;
    tl.current = nullptr;
    throw;
  }
  tl.active = false;
}

}  // namespace pcemu
