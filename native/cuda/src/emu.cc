// The fiber scheduler behind emu.h. One launch at a time per calling thread; each block's
// threads are fibers with their own stacks (kept between launches). On x86-64 a fiber switch
// is a few instructions of our own (callee-saved registers and the stack pointer): ucontext's
// swapcontext makes a system call per switch, which made an emulated forward pass minutes
// long; elsewhere ucontext is used.
#define PCEMU_IMPLEMENTATION
#include "emu.h"

#include <sys/mman.h>
#include <ucontext.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__x86_64__)
// pcemu_switch(from, to): saves the callee-saved registers, MXCSR and the x87 control word on
// the current stack, stores the stack pointer in *from, and resumes the stack `to`.
asm(R"(
.text
.globl pcemu_switch
.type pcemu_switch,@function
pcemu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size pcemu_switch,.-pcemu_switch
.section .note.GNU-stack,"",@progbits
.text
)");
extern "C" void pcemu_switch(void** from, void* to);
#define PCEMU_OWN_SWITCH 1
#else
#define PCEMU_OWN_SWITCH 0
#endif

namespace pcemu {
namespace {

constexpr size_t kStackBytes = 256 * 1024;

enum class State { Ready, AtBlockBarrier, AtWarpBarrier, Done };

struct Fiber {
  ucontext_t ctx{};
  void* sp = nullptr;  // PCEMU_OWN_SWITCH: the saved stack pointer
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
  void* schedulerSp = nullptr;
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
#if PCEMU_OWN_SWITCH
  pcemu_switch(&f.sp, tl.schedulerSp);
#else
  swapcontext(&f.ctx, &tl.scheduler);
#endif
}

void fiberEntry() {
  (*tl.body)();
  tl.current->state = State::Done;
#if PCEMU_OWN_SWITCH
  pcemu_switch(&tl.current->sp, tl.schedulerSp);  // never resumed
  __builtin_trap();
#endif
  // ucontext: returning resumes uc_link (the scheduler).
}

void resume(Fiber& f) {
#if PCEMU_OWN_SWITCH
  pcemu_switch(&tl.schedulerSp, f.sp);
#else
  swapcontext(&tl.scheduler, &f.ctx);
#endif
}

void prepare(Fiber& f) {
  if (f.stack == nullptr) {
    f.stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (f.stack == MAP_FAILED) {
      f.stack = nullptr;
      throw std::runtime_error("pcemu: cannot map a fiber stack");
    }
  }
#if PCEMU_OWN_SWITCH
  // The frame pcemu_switch pops on the first switch into the fiber: MXCSR and x87 control
  // word, six registers, then fiberEntry as the return address, above it a null "return
  // address" so that fiberEntry starts with the stack aligned as after a call.
  auto* top = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(f.stack) + kStackBytes) & ~uintptr_t{15});
  uint64_t* frame = top - 9;
  frame[0] = 0x1F80u | (uint64_t{0x037F} << 32);  // default MXCSR, x87 control word
  for (int i = 1; i <= 6; i++) frame[i] = 0;
  frame[7] = reinterpret_cast<uint64_t>(&fiberEntry);
  frame[8] = 0;
  f.sp = frame;
#else
  getcontext(&f.ctx);
  f.ctx.uc_stack.ss_sp = f.stack;
  f.ctx.uc_stack.ss_size = kStackBytes;
  f.ctx.uc_link = &tl.scheduler;
  makecontext(&f.ctx, fiberEntry, 0);
#endif
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
      resume(f);
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

namespace {

// PCEMU_PROFILE: seconds and launches per kernel name, printed at exit.
struct Profile {
  std::mutex mu;
  std::map<std::string, std::pair<double, long>> byName;
  ~Profile() {
    for (const auto& [name, v] : byName) std::fprintf(stderr, "pcemu: %-28s %8.3f s %8ld launches\n", name.c_str(), v.first, v.second);
  }
};
Profile* profile() {
  static Profile* p = std::getenv("PCEMU_PROFILE") ? new Profile() : nullptr;
  return p;
}
struct ProfileAtExit {
  ~ProfileAtExit() { delete profile(); }
} profileAtExit;

}  // namespace

void launch(dim3 grid, dim3 block, size_t dynamicSmemBytes, const std::function<void()>& body, const char* name) {
  const auto t0 = std::chrono::steady_clock::now();
  struct Record {
    const char* name;
    std::chrono::steady_clock::time_point t0;
    ~Record() {
      if (Profile* p = profile()) {
        std::lock_guard<std::mutex> lock(p->mu);
        auto& v = p->byName[name];
        v.first += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        v.second++;
      }
    }
  } record{name, t0};
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
