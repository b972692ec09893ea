// Batched multi-LoRA: adapters resident in a fixed number of slots, and the low-rank update
// y[t] += scale · B·(A·x[t]) applied after a base linear layer to the rows t of the
// sequences that use an adapter — each row gets only its own adapter's update.
//
// Per step, prepare() sorts the step's rows by adapter slot (a counting sort into buffers
// reserved at context creation: no allocation in the decode loop). Each site (the fused
// QKV, O, gate-up and down linears) then runs two parallel passes, in the spirit of
// Punica/S-LoRA's SGMV: shrink, h[row] = scale · A·x[row] for every (target, adapter
// group, rank index), then expand, y[row] += Bᵀ-weighted sum of h[row] for every
// (target, adapter group, 64-column tile). Rows of one adapter share every load of its A
// and B, and a step with no adapter rows costs nothing.
//
// Shapes: A is [rank × in] (PEFT lora_A.weight), B is kept transposed as Bᵀ [rank × out],
// stored as contiguous [rank × 64]-column tiles so each expand item streams one block; Q/K columns of Bᵀ are permuted to the
// base model's row order (llama.cpp's GGUF llama files permute Q/K rows for adjacent-pair
// RoPE; the same permutation applies to the rows of B).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "model.h"
#include "step_plan.h"
#include "thread_pool.h"

namespace prism {

enum class LoraTarget : int { Q = 0, K, V, O, Gate, Up, Down };
constexpr int kLoraTargets = 7;
bool loraTargetFromName(const std::string& name, LoraTarget* out);

enum class LoraStorage { F32, F16 };

// One adapted linear layer. rank == 0: this adapter leaves the layer alone.
struct LoraMatrix {
  int64_t rank = 0, in = 0, out = 0;
  float scale = 0;
  // Where apply() reads them: the adapter's arena (one of the two pairs is null).
  const float *pa32 = nullptr, *pbt32 = nullptr;  // F32 storage: A [rank × in], Bᵀ [rank × out] tile-major
  const uint16_t *pa16 = nullptr, *pbt16 = nullptr;  // F16 storage
  // Built here first, then moved into the arena and released.
  std::vector<float> a32, bt32;
  std::vector<uint16_t> a16, bt16;
};

// One block for all of an adapter's matrices, on transparent huge pages where the kernel
// allows: with 8 rank-64 adapters a decode step reads ~300 MB of them, and on 4 KiB pages
// every 4 KiB of that stream costs a TLB miss (a two-level page walk under a hypervisor).
struct HugeArena {
  explicit HugeArena(size_t bytes);
  ~HugeArena();
  HugeArena(const HugeArena&) = delete;
  HugeArena& operator=(const HugeArena&) = delete;
  uint8_t* data = nullptr;
  size_t bytes = 0;
};

struct Adapter {
  LoraStorage storage = LoraStorage::F32;
  int64_t maxRank = 0;
  size_t bytes = 0;
  std::vector<std::array<LoraMatrix, kLoraTargets>> layers;
  std::unique_ptr<HugeArena> arena;
  // The base model's shape the matrices were built for (bind refuses any other).
  int64_t hidden = 0, intermediate = 0, heads = 0, kvHeads = 0, headDim = 0;
  bool ropeNeox = false;
  bool fits(const ModelConfig& c) const {
    return static_cast<int64_t>(layers.size()) == c.layers && hidden == c.hidden && intermediate == c.intermediate &&
           heads == c.heads && kvHeads == c.kvHeads && headDim == c.headDim && ropeNeox == c.ropeNeox;
  }
};

// Input (rows of `in` floats) and output column offsets of the targets of one fused linear.
enum class LoraSite { Qkv, O, GateUp, Down };

// Builds an adapter for `cfg` from HF-ordered matrices: `a` [rank × in], `b` [out × rank].
// Throws std::invalid_argument naming the layer/target on a shape mismatch.
struct LoraSource {
  int64_t layer = 0;
  LoraTarget target = LoraTarget::Q;
  int64_t rank = 0;
  float scale = 1;
  const float* a = nullptr;
  size_t aLen = 0;
  const float* b = nullptr;
  size_t bLen = 0;
};
std::shared_ptr<Adapter> buildAdapter(const ModelConfig& cfg, const std::vector<LoraSource>& sources, LoraStorage storage);

class LoraRunner {
 public:
  // Reserves every per-step buffer for up to maxTokens rows and maxRank.
  void init(const ModelConfig& cfg, int64_t slots, int64_t maxRank, int64_t maxTokens);
  int64_t slots() const { return static_cast<int64_t>(slots_.size()); }
  int64_t maxRank() const { return maxRank_; }
  bool bound(int64_t slot) const { return slot >= 0 && slot < slots() && slots_[slot] != nullptr; }
  // Puts `a` (or nothing) in `slot`; the caller makes sure no step is running.
  void bind(int64_t slot, std::shared_ptr<const Adapter> a);

  // Groups the step's rows by the slot of their sequence (plan.adapterSlots, -1 = base).
  void prepare(const StepPlanData& plan, const std::vector<int32_t>& tokenSeq);
  bool active() const { return nGroups_ > 0; }
  // y[t, offset(target) ...] += update, for every target of `site` and every adapter row t.
  // x: [T × in] with row stride `in` of the site; y: row stride ldy.
  void apply(int64_t layer, LoraSite site, const float* x, float* y, int64_t ldy, ThreadPool& pool);
  // The adapter weights the base linear of (layer, site) prefetches while it runs
  // (KernelScratch::setPrefetch): the stream of A and Bᵀ blocks that apply() will read this
  // step, in apply()'s order, from a cursor kept at or ahead of this site. Without it, with
  // several adapters in a step, the shrink and expand passes stream every A and Bᵀ from
  // memory each step at memory speed, while the base matmuls leave the bus idle. Returns the
  // number of spans (0 when the step has no adapter rows). Call in the forward pass's order.
  int prefetchSpans(int64_t layer, LoraSite site, const PrefetchSpan** spans);

 private:
  struct Group {
    int32_t slot, begin, end;  // rows_[begin, end) use slots_[slot]
  };
  struct Item {
    int16_t target, group;  // index into the site's targets, into groups_
    int32_t index;          // rank index (shrink) or column tile (expand)
  };
  const ModelConfig* cfg_ = nullptr;
  int64_t maxRank_ = 0, maxTokens_ = 0;
  std::vector<std::shared_ptr<const Adapter>> slots_;
  std::vector<int32_t> rows_;        // step rows sorted by slot
  std::vector<int32_t> slotCount_;   // per slot (counting sort)
  std::vector<Group> groups_;
  int32_t nGroups_ = 0;
  std::vector<Item> items_;
  std::vector<float> h_;             // [3 targets × maxTokens × maxRank]: shrink results
  std::vector<PrefetchSpan> spans_;  // prefetchSpans()' answer
  std::vector<PrefetchSpan> siteBuf_;  // [2 × 3 targets × slots]: one site's weights
  int64_t pfSite_ = 0;               // prefetch cursor: layer × 4 + site, byte offset in it
  size_t pfOffset_ = 0;
  // The weights apply(layer, site) reads this step, in its order; returns their count.
  int siteSpans(int64_t layer, int site, PrefetchSpan* out, size_t* bytes) const;
  bool avx512_ = false;              // the AVX-512 kernels (kernels/lora_kernels.h) may run
};

}  // namespace prism
