// Run-time kernel selection: CPUID (+ the PRISM_ISA override) picks the highest instruction
// set family once; matmul() looks the weight's kernels up in the traits table
// (layout_traits.h) and runs that family's, or the next lower family's where it has none.
// Also: prepareLinear, KernelScratch, the test entry point and the memory-bandwidth probe.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels/amx/amx.h"
#include "kernels/isa_kernels.h"
#include "kernels/internal.h"
#include "kernels/layout_traits.h"
#include "kernels/planes.h"
#include "kernels/q4xv.h"
#include "kernels/q8xv.h"
#include "switches.h"

namespace prism {

using namespace kernels;

namespace {

const char* isaName(Isa isa) {
  switch (isa) {
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx2:
      return "avx2";
    case Isa::Reference:
      return "reference";
  }
  return "reference";
}

bool parseIsa(const std::string& name, Isa* out) {
  if (name == "avx512") *out = Isa::Avx512;
  else if (name == "avx2") *out = Isa::Avx2;
  else if (name == "reference") *out = Isa::Reference;
  else return false;
  return true;
}

Isa bestSupportedIsa() {
  if (cpuHasAvx512()) return Isa::Avx512;
  if (cpuHasAvx2()) return Isa::Avx2;
  return Isa::Reference;
}

// The family in use: the CPU's best, or a lower one PRISM_ISA forces (switches.h; read once).
// A malformed value must not take the process down (selectedIsa() is called from places that
// cannot throw, e.g. cpuFeatures()), so it is ignored with a one-time warning on stderr; the
// switch report (modelInfo's switches) carries it too.
Isa selection() {
  static const Isa isa = [] {
    // In the order of the switch's values: avx512|avx2|reference.
    static constexpr Isa kForced[] = {Isa::Avx512, Isa::Avx2, Isa::Reference};
    const Isa best = bestSupportedIsa();
    std::string error;
    const int forced = switchChoice(Switch::Isa, -1, &error);
    if (!error.empty()) std::fprintf(stderr, "prism: %s; using %s\n", error.c_str(), isaName(best));
    // Only a lower family can be forced: asking for more than the CPU has keeps the best.
    return forced < 0 ? best : std::min(kForced[forced], best);
  }();
  return isa;
}

Isa currentIsa() { return selection(); }

// How a call may use the AMX tiles (kernels/amx/amx.h): never, for batches of at least
// kAmxMinTokens tokens (matmul(), when amxEnabled()), or always (the "amx" test family).
enum class AmxUse { Off, Batches, Always };

void runMatmul(Isa isa, AmxUse amx, const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y,
               int64_t ldy, ThreadPool& pool, KernelScratch& scratch) {
  if (n <= 0 || W.rows == 0) return;
  const Kernels& k = kernelsFor(W);
  if (isa >= Isa::Avx512 && amx != AmxUse::Off && (amx == AmxUse::Always || n >= kAmxMinTokens)) {
    // The tiles unpack whole repacked matrices (not a MoE expert's row slice, which owns no
    // bytes: moe.cc).
    if (k.amx && W.precision == ActivationPrecision::Int8 && !W.owned.empty()) {
      k.amx(W, x, n, ldx, y, ldy, pool, scratch);
      return;
    }
  }
  MatmulKernel kernel = nullptr;
  if (isa >= Isa::Avx512) kernel = k.avx512.of(W.precision);
  if (!kernel && isa >= Isa::Avx2) kernel = k.avx2.of(W.precision);
  if (kernel) kernel(W, x, n, ldx, y, ldy, pool, scratch);
  else matmulReference(W, x, n, ldx, y, ldy, pool);
}

// The float GEMM of `isa` for W's type (float_gemm.h), or null: not a float weight in the
// file's own layout, or the reference family.
MatmulKernel floatGemmFor(Isa isa, const LinearWeight& W) {
  if (W.layout != Layout::Gguf || isa == Isa::Reference) return nullptr;
  const bool wide = isa >= Isa::Avx512;
  switch (W.type) {
    case TensorType::F32:
      return wide ? &IsaKernels<Isa::Avx512>::floatGemm<TensorType::F32> : &IsaKernels<Isa::Avx2>::floatGemm<TensorType::F32>;
    case TensorType::F16:
      return wide ? &IsaKernels<Isa::Avx512>::floatGemm<TensorType::F16> : &IsaKernels<Isa::Avx2>::floatGemm<TensorType::F16>;
    case TensorType::BF16:
      return wide ? &IsaKernels<Isa::Avx512>::floatGemm<TensorType::BF16>
                  : &IsaKernels<Isa::Avx2>::floatGemm<TensorType::BF16>;
    default:
      return nullptr;
  }
}

void runMatmulManyTokens(Isa isa, const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                         ThreadPool& pool, KernelScratch& scratch) {
  if (n <= 0 || W.rows == 0) return;
  if (MatmulKernel gemm = floatGemmFor(isa, W)) gemm(W, x, n, ldx, y, ldy, pool, scratch);
  else runMatmul(isa, amxEnabled() ? AmxUse::Batches : AmxUse::Off, W, x, n, ldx, y, ldy, pool, scratch);
}

}  // namespace

namespace kernels {

bool cpuHasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return has;
}

bool cpuHasAvx512() {
  static const bool has = cpuHasAvx2() && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
  return has;
}

}  // namespace kernels

const char* selectedIsa() { return isaName(currentIsa()); }

bool amxPrefillSelected() { return currentIsa() == Isa::Avx512 && amxEnabled(); }

namespace {

// Repacks a tensor into the layout the kernels of `isa` read for its type and activation
// precision, sizing `owned`, and returns that layout (Layout::Gguf: none; the kernels read the
// file's bytes in place). Only Layout::Q4XV and Layout::Q8XV depend on the family: only the
// AVX-512 one reads them.
Layout repackFor(Isa isa, TensorType type, const uint8_t* data, int64_t rows, int64_t cols,
                 ActivationPrecision precision, WeightBytes* owned) {
  const bool q4 = type == TensorType::Q4_0 || type == TensorType::Q4_1 || type == TensorType::Q4_K;
  if (precision == ActivationPrecision::Int8) {
    // Int8 activations: every quantized type in the group order (internal.h, planes.h), one
    // dot-product instruction per 16 blocks, at the file's bytes per weight or close to them.
    if (type == TensorType::Q4_K) return repackQ4GK(data, rows, cols, owned);  // Q4_K's scale encoding
    // Q4_0 / Q4_1: f16 scales where exact.
    if (q4) return repackQ4G(type, data, rows, cols, owned);
    if (type == TensorType::Q8_0) return repackQ8G(data, rows, cols, owned);
    // Q6_K: the Q4_K_M mix keeps its output head and some FFN tensors in Q6_K, a quarter of
    // the bytes of a 1B model.
    if (type == TensorType::Q6_K) return repackQ6G(data, rows, cols, owned);
    // Q5_0 / Q5_1 / Q5_K / Q3_K / Q2_K / IQ4_NL / IQ4_XS: bit planes.
    if (const Layout planes = planeLayoutFor(type); planes != Layout::Gguf) {
      repackPlanes(type, data, rows, cols, owned);
      return planes;
    }
    return Layout::Gguf;
  }
  if (q4 && isa >= Isa::Avx512) {
    // Int16 activations on the AVX-512 kernels: 16-row records whose every kernel forms each
    // block's exact integer dot (q4xv.h), so a token's bits never depend on its step's shape
    // and an extra token of a step (speculation's verify) costs little.
    repackQ4XV(type, data, rows, cols, owned);
    return Layout::Q4XV;
  }
  if (type == TensorType::Q8_0 && isa >= Isa::Avx512) {
    // Int16 activations on the AVX-512 kernels: the same exact-integer formulation as Q4XV
    // (q8xv.h), the file's bytes in 16-row records. An owned copy: the embedding lookup of a
    // tied head keeps reading the file's rows (Model::embedData).
    repackQ8XV(data, rows, cols, owned);
    return Layout::Q8XV;
  }
  if (q4) {
    // 4-bit weights are repacked once (Layout::Q4X, internal.h): unpacking two blocks then
    // takes one load and two masks, and the per-block offsets become a vector dot product.
    owned->resize(q4xRowBytes(cols) * static_cast<size_t>(rows));
    repackQ4X(type, data, rows, cols, owned->data());
    return Layout::Q4X;
  }
  return Layout::Gguf;
}

// prepareLinear for the kernels of `isa` (the family in effect, or the one a test asks for).
LinearWeight prepareFor(Isa isa, TensorType type, const uint8_t* data, int64_t rows, int64_t cols,
                        ActivationPrecision precision) {
  if (rows < 0) throw std::invalid_argument("prepareLinear: rows must be >= 0");
  if (cols <= 0) throw std::invalid_argument("prepareLinear: cols must be > 0");
  if (precision != ActivationPrecision::Int8 && precision != ActivationPrecision::Int16)
    throw std::invalid_argument("prepareLinear: precision must be Int8 or Int16");
  LinearWeight w;
  w.precision = precision;
  w.type = type;
  w.rows = rows;
  w.cols = cols;
  w.data = data;
  w.bytes = typeRowBytes(type, cols) * static_cast<size_t>(rows);
  w.layout = repackFor(isa, type, data, rows, cols, precision, &w.owned);
  if (w.layout == Layout::Gguf) return w;
  // The traits table's stride rule is what every kernel and the reference read by: a repack
  // that disagrees with it is a bug, caught here before any kernel reads past the bytes.
  if (w.owned.size() != layoutBytes(w.layout, type, rows, cols))
    throw std::logic_error(std::string("prepareLinear: the ") + layoutTraits(w.layout).name + " repack made " +
                           std::to_string(w.owned.size()) + " bytes, its stride rule " +
                           std::to_string(layoutBytes(w.layout, type, rows, cols)));
  w.data = w.owned.data();
  w.bytes = w.owned.size();
  return w;
}

}  // namespace

LinearWeight prepareLinear(TensorType type, const uint8_t* data, int64_t rows, int64_t cols,
                           ActivationPrecision precision) {
  return prepareFor(currentIsa(), type, data, rows, cols, precision);
}

void KernelScratch::reserve(int64_t maxRows, int64_t maxCols, int threads) {
  if (maxRows < 0 || maxCols < 0) throw std::invalid_argument("KernelScratch::reserve: negative size");
  // Room for the wider (int16) activations: any weight of the context may use them; and for
  // the Q4G int8 activations, padded to whole 16-block groups.
  size_t need = std::max({quantizedActivationBytes(maxRows, maxCols, sizeof(int16_t)),
                          q4gActivationBytes(maxRows, maxCols), q8xvActivationBytes(maxRows, maxCols) + 64});
  if (amxEnabled()) need = std::max(need, amxScratchBytes(maxRows, maxCols, threads));
#ifdef PRISM_Q4XV_AMX
  // The Q4XV / Q8XV activations followed by their AMX-INT8 kernels' own room (q4xv.h, q8xv.h).
  if (amxEnabled())
    need = std::max({need, q4xvActivationBytes(maxRows, maxCols) + 64 + q4xvAmxScratchBytes(maxRows, maxCols, threads),
                     q8xvActivationBytes(maxRows, maxCols) + 64 + q8xvAmxScratchBytes(threads)});
#endif
  // The float GEMM's packed activations (matmulManyTokens), of the wider family the CPU runs.
  if (cpuHasAvx2()) need = std::max(need, IsaKernels<Isa::Avx2>::floatGemmScratchBytes(maxRows, maxCols, threads));
  if (cpuHasAvx512()) need = std::max(need, IsaKernels<Isa::Avx512>::floatGemmScratchBytes(maxRows, maxCols, threads));
  if (buf_.size() < need) buf_.resize(need);
}

uint8_t* KernelScratch::bytes(size_t n) {
  // Sized by reserve(); growing here is a safety net for a caller that under-reserved (it
  // allocates once, outside any parallel region), not the normal path.
  if (buf_.size() < n) buf_.resize(n);
  return buf_.data();
}

void KernelScratch::setPrefetch(const PrefetchSpan* spans, int n) {
  spans_ = spans;
  nSpans_ = n;
  prefetchBytes_ = 0;
  for (int i = 0; i < n; i++) prefetchBytes_ += spans[i].bytes;
}

void KernelScratch::prefetchSlice(int64_t part, int64_t parts) const {
  if (prefetchBytes_ == 0 || parts <= 0) return;
  const size_t begin = prefetchBytes_ * static_cast<size_t>(part) / static_cast<size_t>(parts);
  const size_t end = prefetchBytes_ * static_cast<size_t>(part + 1) / static_cast<size_t>(parts);
  size_t at = 0;  // byte offset of span i within the concatenation
  for (int i = 0; i < nSpans_ && at < end; at += spans_[i].bytes, i++) {
    const size_t b = std::max(begin, at), e = std::min(end, at + spans_[i].bytes);
    const char* p = static_cast<const char*>(spans_[i].data);
    for (size_t o = b - at; o < e - at; o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
  }
}

void matmul(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
            ThreadPool& pool, KernelScratch& scratch) {
  runMatmul(currentIsa(), amxEnabled() ? AmxUse::Batches : AmxUse::Off, W, x, n, ldx, y, ldy, pool, scratch);
}

void matmulManyTokens(const LinearWeight& W, const float* x, int64_t n, int64_t ldx, float* y, int64_t ldy,
                      ThreadPool& pool, KernelScratch& scratch) {
  runMatmulManyTokens(currentIsa(), W, x, n, ldx, y, ldy, pool, scratch);
}

namespace {

// The exact-integer int16 layouts' test families (matmulForTest): the GGUF weight repacked
// into Layout::Q4XV (q4xv.h) or Layout::Q8XV (q8xv.h), x quantized by the scalar int16
// quantizer (the AVX-512 one's bits), then the layout's scalar statement ("-scalar") or its
// AMX-INT8 kernel whatever n ("-amx"; matmul() hands the tiles only steps of the layout's
// AMX minimum or more).
void xvMatmulForTest(TensorType type, const uint8_t* weights, int64_t rows, int64_t cols, const float* x, int64_t n,
                     float* y, const std::string& isa, const std::string& family) {
  const bool q8 = family.starts_with("q8xv"), tiles = family.ends_with("-amx");
  if (isa != family + "+int16") throw std::invalid_argument("isa " + family + " needs +int16; got '" + isa + "'");
  if (tiles && !cpuHasAmxInt8())
    throw std::invalid_argument("isa " + family + " is not supported by this CPU (or the OS refused it)");
  if (q8 && type != TensorType::Q8_0) throw std::invalid_argument("isa " + family + " runs only Q8_0 weights");
  if (!q8 && type != TensorType::Q4_0 && type != TensorType::Q4_1 && type != TensorType::Q4_K)
    throw std::invalid_argument("isa " + family + " runs only Q4_0, Q4_1 and Q4_K weights");
  if (n < 0) throw std::invalid_argument("n must be >= 0");
  typeRowBytes(type, cols);  // throws unless cols is whole blocks
  WeightBytes packed;
  if (q8) repackQ8XV(weights, rows, cols, &packed);
  else repackQ4XV(type, weights, rows, cols, &packed);
  if (!tiles) {
    std::vector<uint8_t> buf(q4xvActivationBytes(n, cols) + 64);
    uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
    const Q4XVActivations xa = q4xvQuantizeScalar(x, n, cols, cols, base);
    if (q8) q8xvMatmulScalar(packed.data(), rows, cols, xa, n, y, rows);
    else q4xvMatmulScalar(packed.data(), rows, cols, xa, n, y, rows);
    return;
  }
#ifdef PRISM_Q4XV_AMX
  // Several threads, so the split of the row groups is exercised; one caller at a time.
  static std::mutex amxMutex;
  static ThreadPool amxPool(static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 2u, 4u)));
  std::lock_guard<std::mutex> lock(amxMutex);
  if (n == 0) return;
  // The activations at q4xvScratchBase, the kernel's room after them, sized at once.
  KernelScratch scratch;
  const size_t room = q8 ? q8xvAmxScratchBytes(amxPool.size()) : q4xvAmxScratchBytes(n, cols, amxPool.size());
  scratch.bytes(q8xvActivationBytes(n, cols) + 64 + room);
  const Q4XVActivations xa = q4xvQuantizeScalar(x, n, cols, cols, q4xvScratchBase(scratch));
  if (q8) q8xvMatmulAmx(packed.data(), rows, cols, xa, n, y, rows, amxPool, q8xvAmxWork(scratch, n, cols));
  else q4xvMatmulAmx(packed.data(), rows, cols, xa, n, y, rows, amxPool, scratch);
#else
  throw std::invalid_argument("isa " + family + ": this build has no AMX kernels of the int16 layouts");
#endif
}

}  // namespace

void matmulForTest(TensorType type, const uint8_t* weights, int64_t rows, int64_t cols, const float* x,
                   int64_t n, float* y, const std::string& isa) {
  // "<family>" or "<family>+int8" / "<family>+int16" (the activation precision). The family
  // "amx" is avx512 with every int8 matmul of a layout the AMX driver serves on the tiles,
  // whatever n (the others run avx512); "avx512" itself never uses the tiles. "q4xv-scalar+int16" runs
  // the scalar statement of the Layout::Q4XV arithmetic (q4xv.h) on a 4-bit weight: the
  // bits the AVX-512 and AMX kernels of that layout must give; "q8xv-scalar+int16" the same
  // for Layout::Q8XV (q8xv.h) on a Q8_0 weight; "q4xv-amx+int16" / "q8xv-amx+int16" the
  // layout's AMX-INT8 kernel for any n (xvMatmulForTest).
  const size_t plus = isa.find('+');
  std::string family = isa.substr(0, plus);
  if (family == "q4xv-scalar" || family == "q4xv-amx" || family == "q8xv-scalar" || family == "q8xv-amx") {
    xvMatmulForTest(type, weights, rows, cols, x, n, y, isa, family);
    return;
  }
  // "avx2-gemm" / "avx512-gemm": that family's matmulManyTokens (float weights on the GEMM).
  const bool gemm = family.ends_with("-gemm");
  if (gemm) family = family.substr(0, family.size() - 5);
  if (gemm && family != "avx2" && family != "avx512")
    throw std::invalid_argument("isa " + isa + ": the GEMM families are avx2-gemm and avx512-gemm");
  const bool amx = family == "amx";
  if (amx) {
    if (!cpuHasAmxInt8()) throw std::invalid_argument("isa amx is not supported by this CPU (or the OS refused it)");
    family = "avx512";
  }
  ActivationPrecision precision = ActivationPrecision::Int8;
  if (plus != std::string::npos) {
    const std::string p = isa.substr(plus + 1);
    if (p == "int16") precision = ActivationPrecision::Int16;
    else if (p != "int8") throw std::invalid_argument("isa precision suffix must be +int8 or +int16; got '" + isa + "'");
  }
  if (amx && precision == ActivationPrecision::Int16)
    throw std::invalid_argument(
        "isa amx+int16 is not supported: the amx family runs int8 activations (the int16 layouts' tiles are "
        "q4xv-amx+int16 and q8xv-amx+int16)");
  Isa wanted;
  if (!parseIsa(family, &wanted)) {
    throw std::invalid_argument("isa must be one of amx, avx512, avx2, reference, avx512-gemm, avx2-gemm; got '" + isa + "'");
  }
  if (wanted > bestSupportedIsa()) {
    throw std::invalid_argument("isa " + family + " is not supported by this CPU");
  }
  if (n < 0) throw std::invalid_argument("n must be >= 0");
  LinearWeight W = prepareFor(wanted, type, weights, rows, cols, precision);
  // One shared pool for the tests (several threads, so the work splitting is exercised);
  // the mutex keeps concurrent callers from re-entering it.
  static std::mutex mutex;
  static ThreadPool pool(static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 2u, 4u)));
  std::lock_guard<std::mutex> lock(mutex);
  KernelScratch scratch;
  scratch.reserve(n, cols, pool.size());
  if (gemm) runMatmulManyTokens(wanted, W, x, n, cols, y, rows, pool, scratch);
  else runMatmul(wanted, amx ? AmxUse::Always : AmxUse::Off, W, x, n, cols, y, rows, pool, scratch);
}

double measureMemoryBandwidth(size_t bytes, int passes, ThreadPool& pool) {
  if (bytes < 4096 || passes < 1) throw std::invalid_argument("measureMemoryBandwidth: bytes >= 4096, passes >= 1");
  size_t count = bytes / sizeof(float) / 32 * 32;
  std::vector<float> buf(count, 1.0f);
  std::vector<float> sinks(static_cast<size_t>(pool.size()) * 16);
  double best = 1e30;
  for (int p = 0; p < passes; ++p) {
    auto start = std::chrono::steady_clock::now();
    auto task = [&](int thread, int threads) {
      size_t chunks = count / 32;
      size_t begin = chunks * thread / threads * 32, end = chunks * (thread + 1) / threads * 32;
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (size_t i = begin; i < end; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(&buf[i]));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(&buf[i + 8]));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(&buf[i + 16]));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(&buf[i + 24]));
      }
      __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
      // Written out so the loads are not optimised away.
      sinks[static_cast<size_t>(thread) * 16] += _mm256_cvtss_f32(s);
    };
    pool.run(TaskRef(task));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, secs);
  }
  return static_cast<double>(count * sizeof(float)) / best / 1e9;
}

}  // namespace prism
