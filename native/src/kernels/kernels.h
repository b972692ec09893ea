// Kernel contract between the model code (forward.cc, owned by the model/forward-pass work)
// and the matmul/quantization kernels (kernels/*.cc). Shapes are stated where declared.
//
// Storage types follow GGML's numbering so GGUF tensors map 1:1. Weight matrices are stored
// row-major as GGUF stores them: `rows` output features, each row `cols` input features
// packed in blocks of the type (e.g. Q4_1: 32 values per 20-byte block).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/decode_tuning.h"
#include "kernels/layout.h"
#include "lazy_zero.h"
#include "thread_pool.h"

namespace prism {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  IQ4_NL = 20,
  IQ4_XS = 23,
  BF16 = 30,
};

// Values per block and bytes per block of each storage type (F32/F16/BF16: block of 1).
int64_t typeBlockValues(TensorType t);
size_t typeBlockBytes(TensorType t);
// Bytes of one row of `cols` values; throws std::invalid_argument if cols is not a multiple
// of the block size.
size_t typeRowBytes(TensorType t, int64_t cols);
const char* typeName(TensorType t);
bool typeFromName(const std::string& name, TensorType* out);
// True for the types this build can compute with.
bool typeSupported(uint32_t ggmlType);

// How a quantized-weight matmul rounds its activations before the integer dot products.
// Int8: per 32 values, scale max|x|/127, maddubs dot products (llama.cpp's Q8 scheme; the
// fastest). Int16: per 32 values, scale max|x|/32767, weights widened to int16 and madd dot
// products — rounding error ~256x smaller (near-f32 logits) for roughly twice the integer
// work per weight. Float weights (F32/F16/BF16) ignore it: their activations stay f32.
// Chosen explicitly per weight by the model code, never inferred from the type.
enum class ActivationPrecision : uint8_t { Int8 = 0, Int16 = 1 };

// Allocator of repacked weight bytes. Decode streams every weight byte once per token; with
// 4 KiB pages every 4 KiB of a stream costs a TLB miss (the pool is ~100x the TLB's reach)
// and restarts the hardware prefetcher. Buffers of 2 MiB or more are 2 MiB aligned and
// their whole 2 MiB pages are marked MADV_HUGEPAGE (transparent huge pages, where the
// kernel allows them) before the first write; the partial last page stays small, so
// resident memory does not grow. Smaller ones made while a model loads are packed into
// that model's huge-page chunks (kernels/weight_memory.h); elsewhere (tests, temporaries)
// they are plain 64-byte-aligned allocations.
void* allocWeightBytes(size_t n);
void freeWeightBytes(void* p) noexcept;
template <class T>
struct WeightAllocator {
  using value_type = T;
  WeightAllocator() = default;
  template <class U>
  WeightAllocator(const WeightAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(allocWeightBytes(n * sizeof(T))); }
  void deallocate(T* p, size_t) noexcept { freeWeightBytes(p); }
  template <class U>
  bool operator==(const WeightAllocator<U>&) const noexcept { return true; }
};
using WeightBytes = std::vector<uint8_t, WeightAllocator<uint8_t>>;
// The KV cache takes the same pages (context.h): attention reads every sequence's pages of
// every layer at each step, scattered over the pool, a TLB entry per 4 KiB page otherwise.
template <class T>
using HugePageVector = std::vector<T, WeightAllocator<T>>;

// A linear layer's weight, ready for the kernels. Created once at load time by
// prepareLinear(); `data` points either into the mmapped file (zero copy) or into `owned`
// (when the kernels repack rows into an interleaved layout they prefer, or convert a type).
struct LinearWeight {
  TensorType type = TensorType::F32;  // type of the stored data (after any conversion)
  int64_t rows = 0;                   // output features
  int64_t cols = 0;                   // input features
  const uint8_t* data = nullptr;
  // How the bytes are arranged (kernels/layout.h): the file's blocks, or a layout of the
  // kernels' own that prepareLinear repacked them into.
  kernels::Layout layout = kernels::Layout::Gguf;
  WeightBytes owned;
  size_t bytes = 0;  // bytes of weight data read per use (for the roofline)
  ActivationPrecision precision = ActivationPrecision::Int8;
  // prepareLinear repacks into `owned` every quantized type for int8 activations, and for
  // int16 the 4-bit types (and on AVX-512 Q8_0); the rest, float types among them, stay
  // zero copy. When `owned` is non-empty the kernels read it rather than `data`, so a
  // copied LinearWeight stays valid.
};

// The bytes a kernel reads: `owned` when the weight was repacked (robust to a LinearWeight
// having been copied, which would leave `data` pointing at the original's buffer).
inline const uint8_t* weightData(const LinearWeight& W) { return W.owned.empty() ? W.data : W.owned.data(); }

// Builds a LinearWeight for a GGUF/safetensors tensor [rows × cols] of `type` at `data`.
// The source bytes stay valid for the life of the model (mmap), so zero copy is allowed.
// `precision` selects the activation rounding of the quantized kernels (see above).
LinearWeight prepareLinear(TensorType type, const uint8_t* data, int64_t rows, int64_t cols,
                           ActivationPrecision precision = ActivationPrecision::Int8);

// Per-context scratch the kernels may use (activation quantization buffers etc.). Sized once
// by reserve() for the largest (n, cols) the context will run; matmul() never allocates
// (if a call needs more than was reserved, bytes() grows the buffer once, on the calling
// thread, rather than failing). One KernelScratch per concurrently running matmul.
//
// It also carries the memory a pass right after the matmul will read (the LoRA weights of the
// same linear, see native/src/lora.h): a quantized matmul is compute-bound and leaves the
// memory bus idle, so it prefetches those bytes into the cache between its row tiles, and
// the next pass finds them there instead of streaming them from memory at its own pace.
// Prefetching changes no result.
struct PrefetchSpan {
  const void* data;
  size_t bytes;
};
class KernelScratch {
 public:
  void reserve(int64_t maxRows, int64_t maxCols, int threads);
  uint8_t* bytes(size_t n);  // returns a buffer of at least n bytes (already reserved)
  // The spans to prefetch during the next matmul() calls (n = 0: none); the caller keeps
  // them alive and clears them after.
  void setPrefetch(const PrefetchSpan* spans, int n);
  bool hasPrefetch() const { return prefetchBytes_ > 0; }
  // Prefetches the part-th of `parts` equal slices of the spans' bytes (into L2).
  void prefetchSlice(int64_t part, int64_t parts) const;
  // How this context's single-token decode prefetches and tiles (decode_tuning.h); set by
  // the owner thread between steps, read by the kernels.
  const DecodeTuning& decodeTuning() const { return decode_; }
  void setDecodeTuning(const DecodeTuning& t) { decode_ = t; }

 private:
  // Sized for the largest prefill; pages become resident as steps use them (lazy_zero.h).
  LazyZeroVector<uint8_t> buf_;
  const PrefetchSpan* spans_ = nullptr;
  int nSpans_ = 0;
  size_t prefetchBytes_ = 0;
  DecodeTuning decode_;
};

// y[t * ldy + r] = sum_k W[r][k] * x[t * ldx + k]   for t in [0, n), r in [0, W.rows)
// x: n rows of W.cols floats. Runs on all threads of `pool` (called from the pool's owner
// thread). No allocation.
void matmul(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
            ThreadPool& pool, KernelScratch& scratch);

// matmul()'s contract for the passes of many tokens at once (the encoders: BERT-family
// embedders, the vision towers): float weights (F32 / F16 / BF16) run a GEMM on packed
// activations (float_gemm.h) in which every output sums its columns in order, so a token's
// result is the same whatever it is batched with, on either family; other weights run
// matmul(). The scratch is reserve()d as for matmul().
void matmulManyTokens(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                      ThreadPool& pool, KernelScratch& scratch);

// Dequantizes row `row` of a [rows × cols] matrix of `type` at `data` into `out` (cols floats).
// Used for embedding lookups.
void dequantizeRow(TensorType type, const uint8_t* data, int64_t cols, int64_t row, float* out);

// Instruction-set family in use: "avx512", "avx2" or "reference". Chosen once from CPUID;
// the switch PRISM_ISA (avx512|avx2|reference, switches.h) may force a lower one. Never
// throws: a malformed PRISM_ISA is ignored (warning on stderr; modelInfo's switch report).
const char* selectedIsa();
// Whether batches of 16+ tokens run on AMX int8 tiles (kernels/amx/amx.h): the CPU and OS
// allow it, the "avx512" family is selected and PRISM_AMX is not 0.
bool amxPrefillSelected();

// Streams `bytes` of memory `passes` times on all threads of `pool`; returns the best pass's
// read bandwidth in GB/s (the roofline's denominator). Allocates: not for the hot path.
double measureMemoryBandwidth(size_t bytes, int passes, ThreadPool& pool);

// Test hooks (exposed through native.ts): run the kernel of a given ISA on a plain row-major
// weight buffer, and the reference (de)quantizers. `isa` is a family name, optionally with
// the activation precision appended: "avx2+int16" (default "+int8"), so the hook reaches
// both kernel paths through the existing addon signature.
void matmulForTest(TensorType type, const uint8_t* weights, int64_t rows, int64_t cols,
                   const float* x, int64_t n, float* y, const std::string& isa);
void quantizeReference(TensorType type, const float* values, int64_t rows, int64_t cols,
                       uint8_t* out);
void dequantizeReference(TensorType type, const uint8_t* data, int64_t rows, int64_t cols,
                         float* out);

}  // namespace prism
