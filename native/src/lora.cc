#include "lora.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>
#include <stdexcept>

#include "kernels/lora_kernels.h"
#include "simd.h"

namespace prism {
namespace {

const char* kTargetNames[kLoraTargets] = {"q", "k", "v", "o", "gate", "up", "down"};

struct SiteTarget {
  LoraTarget target;
  int64_t offset;  // first output column inside the fused output row
};

// The targets a fused linear carries, with their output column offsets, and its input width.
int siteTargets(LoraSite site, const ModelConfig& c, SiteTarget out[3], int64_t* in) {
  const int64_t q = c.heads * c.headDim, kv = c.kvHeads * c.headDim, I = c.intermediate;
  switch (site) {
    case LoraSite::Qkv:
      out[0] = {LoraTarget::Q, 0};
      out[1] = {LoraTarget::K, q};
      out[2] = {LoraTarget::V, q + kv};
      *in = c.hidden;
      return 3;
    case LoraSite::O:
      out[0] = {LoraTarget::O, 0};
      *in = q;
      return 1;
    case LoraSite::GateUp:
      out[0] = {LoraTarget::Gate, 0};
      out[1] = {LoraTarget::Up, I};
      *in = c.hidden;
      return 2;
    case LoraSite::Down:
      out[0] = {LoraTarget::Down, 0};
      *in = I;
      return 1;
  }
  return 0;
}

void targetShape(const ModelConfig& c, LoraTarget t, int64_t* in, int64_t* out) {
  const int64_t q = c.heads * c.headDim, kv = c.kvHeads * c.headDim;
  switch (t) {
    case LoraTarget::Q: *in = c.hidden; *out = q; return;
    case LoraTarget::K:
    case LoraTarget::V: *in = c.hidden; *out = kv; return;
    case LoraTarget::O: *in = q; *out = c.hidden; return;
    case LoraTarget::Gate:
    case LoraTarget::Up: *in = c.hidden; *out = c.intermediate; return;
    case LoraTarget::Down: *in = c.intermediate; *out = c.hidden; return;
  }
}

// Element loaders for the two storage types.
struct F32 {
  static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
  static float load1(const float* p) { return *p; }
};
struct F16 {
  static __m256 load8(const uint16_t* p) { return simd::loadHalf8(p); }
  static float load1(const uint16_t* p) { return _cvtsh_ss(*p); }
};

template <typename L, typename W>
float dot(const float* x, const W* a, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), L::load8(a + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), L::load8(a + i + 8), s1);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), L::load8(a + i), s0);
  float s = simd::hsum(_mm256_add_ps(s0, s1));
  for (; i < n; i++) s += x[i] * L::load1(a + i);
  return s;
}

constexpr int64_t kTile = 64;  // expand: output columns per work item (8 AVX accumulators)
constexpr int32_t kShrinkRanks = 4;  // shrink: rank indices per work item

// Bᵀ is stored tile-major: the columns [c0, c0 + w) of every rank row, w = min(kTile, out -
// c0), form one contiguous [rank × w] block at tileOffset(c0). An expand item then streams
// one contiguous block instead of rank strided pieces of a row: with several adapters per
// step their weights come from memory every step, and strided 128-byte pieces defeat the
// hardware prefetcher (the decode step's cost was that stream, not the FLOPs).
constexpr int64_t tileOffset(int64_t c0, int64_t rank) { return c0 * rank; }

// y[0, w) += Σ_j h[j] · bt[j·ld + (0, w)], w <= kTile.
template <typename L, typename W>
void expandTile(float* y, const float* h, const W* bt, int64_t rank, int64_t ld, int64_t w) {
  const int64_t nv = w / 8;
  __m256 acc[kTile / 8];
  for (int64_t v = 0; v < nv; v++) acc[v] = _mm256_loadu_ps(y + 8 * v);
  for (int64_t j = 0; j < rank; j++) {
    const __m256 hj = _mm256_set1_ps(h[j]);
    const W* b = bt + j * ld;
    for (int64_t v = 0; v < nv; v++) acc[v] = _mm256_fmadd_ps(hj, L::load8(b + 8 * v), acc[v]);
  }
  for (int64_t v = 0; v < nv; v++) _mm256_storeu_ps(y + 8 * v, acc[v]);
  for (int64_t c = nv * 8; c < w; c++) {
    float s = y[c];
    for (int64_t j = 0; j < rank; j++) s += h[j] * L::load1(bt + j * ld + c);
    y[c] = s;
  }
}

// Runs body(begin, end) over [0, n) on the pool, or inline when the work is small.
template <typename F>
void runItems(ThreadPool& pool, int64_t n, int64_t workPerItem, F&& body) {
  if (n <= 0) return;
  if (pool.size() == 1 || n == 1 || n * workPerItem < 32768) {
    body(int64_t{0}, n);
    return;
  }
  pool.parallelFor(n, body);
}

}  // namespace

bool loraTargetFromName(const std::string& name, LoraTarget* out) {
  for (int i = 0; i < kLoraTargets; i++)
    if (name == kTargetNames[i]) {
      *out = static_cast<LoraTarget>(i);
      return true;
    }
  return false;
}

std::shared_ptr<Adapter> buildAdapter(const ModelConfig& cfg, const std::vector<LoraSource>& sources, LoraStorage storage) {
  auto a = std::make_shared<Adapter>();
  a->storage = storage;
  a->layers.resize(cfg.layers);
  a->hidden = cfg.hidden;
  a->intermediate = cfg.intermediate;
  a->heads = cfg.heads;
  a->kvHeads = cfg.kvHeads;
  a->headDim = cfg.headDim;
  a->ropeNeox = cfg.ropeNeox;
  for (const LoraSource& s : sources) {
    const std::string where = "layer " + std::to_string(s.layer) + " target '" + kTargetNames[static_cast<int>(s.target)] + "'";
    if (s.layer < 0 || s.layer >= cfg.layers)
      throw std::invalid_argument(where + ": layer must be in [0, " + std::to_string(cfg.layers) + ")");
    // A mixture-of-experts FFN has no single gate/up/down for an adapter to add to.
    if (cfg.experts > 0 && (s.target == LoraTarget::Gate || s.target == LoraTarget::Up || s.target == LoraTarget::Down))
      throw std::invalid_argument(where + ": the FFN of a mixture-of-experts model takes no adapter");
    LoraMatrix& m = a->layers[s.layer][static_cast<int>(s.target)];
    if (m.rank != 0) throw std::invalid_argument(where + ": given twice");
    int64_t in = 0, out = 0;
    targetShape(cfg, s.target, &in, &out);
    if (s.rank < 1 || s.rank > 65536) throw std::invalid_argument(where + ": rank must be in [1, 65536]");
    if (!std::isfinite(s.scale)) throw std::invalid_argument(where + ": scale must be finite");
    if (s.aLen != static_cast<size_t>(s.rank * in))
      throw std::invalid_argument(where + ": A has " + std::to_string(s.aLen) + " values, expected rank × in = " +
                                  std::to_string(s.rank) + " × " + std::to_string(in));
    if (s.bLen != static_cast<size_t>(out * s.rank))
      throw std::invalid_argument(where + ": B has " + std::to_string(s.bLen) + " values, expected out × rank = " +
                                  std::to_string(out) + " × " + std::to_string(s.rank));
    m.rank = s.rank;
    m.in = in;
    m.out = out;
    m.scale = s.scale;
    // Bᵀ with the output rows in the base model's order, stored tile by tile (tileOffset).
    const bool permute = !cfg.ropeNeox && (s.target == LoraTarget::Q || s.target == LoraTarget::K);
    const int64_t hd = cfg.headDim, half = hd / 2;
    std::vector<float> bt(static_cast<size_t>(s.rank * out));
    for (int64_t r = 0; r < out; r++) {
      int64_t dst = r;
      if (permute) {
        const int64_t h = r / hd, rem = r % hd;
        dst = h * hd + 2 * (rem % half) + rem / half;
      }
      const int64_t c0 = dst / kTile * kTile, w = std::min(kTile, out - c0);
      for (int64_t j = 0; j < s.rank; j++) bt[tileOffset(c0, s.rank) + j * w + (dst - c0)] = s.b[r * s.rank + j];
    }
    if (storage == LoraStorage::F32) {
      m.a32.assign(s.a, s.a + s.aLen);
      m.bt32 = std::move(bt);
      a->bytes += (m.a32.size() + m.bt32.size()) * sizeof(float);
    } else {
      m.a16.resize(s.aLen);
      m.bt16.resize(bt.size());
      for (size_t i = 0; i < s.aLen; i++) m.a16[i] = _cvtss_sh(s.a[i], _MM_FROUND_TO_NEAREST_INT);
      for (size_t i = 0; i < bt.size(); i++) m.bt16[i] = _cvtss_sh(bt[i], _MM_FROUND_TO_NEAREST_INT);
      a->bytes += (m.a16.size() + m.bt16.size()) * sizeof(uint16_t);
    }
    a->maxRank = std::max(a->maxRank, s.rank);
  }
  // Into one arena, in the order apply() reads them: per layer and site, the A of each
  // target, then the Bᵀ of each.
  auto align = [](size_t n) { return (n + 63) / 64 * 64; };
  size_t total = 0;
  for (auto& layer : a->layers)
    for (LoraMatrix& m : layer)
      total += align(m.a32.size() * 4) + align(m.bt32.size() * 4) + align(m.a16.size() * 2) + align(m.bt16.size() * 2);
  a->arena = std::make_unique<HugeArena>(total);
  size_t at = 0;
  auto place = [&](const void* src, size_t n) {
    uint8_t* dst = a->arena->data + at;
    if (n) std::memcpy(dst, src, n);
    at += align(n);
    return dst;
  };
  // Sites in order: QKV (A q,k,v then Bᵀ q,k,v), O, gate-up, down.
  static constexpr int kSites[4][2] = {{0, 3}, {3, 4}, {4, 6}, {6, 7}};
  for (auto& layer : a->layers)
    for (const auto& site : kSites) {
      for (int t = site[0]; t < site[1]; t++) {
        LoraMatrix& m = layer[t];
        if (!m.a32.empty()) m.pa32 = reinterpret_cast<const float*>(place(m.a32.data(), m.a32.size() * 4));
        if (!m.a16.empty()) m.pa16 = reinterpret_cast<const uint16_t*>(place(m.a16.data(), m.a16.size() * 2));
      }
      for (int t = site[0]; t < site[1]; t++) {
        LoraMatrix& m = layer[t];
        if (!m.bt32.empty()) m.pbt32 = reinterpret_cast<const float*>(place(m.bt32.data(), m.bt32.size() * 4));
        if (!m.bt16.empty()) m.pbt16 = reinterpret_cast<const uint16_t*>(place(m.bt16.data(), m.bt16.size() * 2));
        std::vector<float>().swap(m.a32);
        std::vector<float>().swap(m.bt32);
        std::vector<uint16_t>().swap(m.a16);
        std::vector<uint16_t>().swap(m.bt16);
      }
    }
  return a;
}

HugeArena::HugeArena(size_t n) : bytes(n) {
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t size = std::max<size_t>(kHuge, (n + kHuge - 1) / kHuge * kHuge);
  data = static_cast<uint8_t*>(std::aligned_alloc(kHuge, size));
  if (!data) throw std::bad_alloc();
  madvise(data, size, MADV_HUGEPAGE);  // a hint: without it (or if refused) 4 KiB pages
}

HugeArena::~HugeArena() { std::free(data); }

void LoraRunner::init(const ModelConfig& cfg, int64_t slots, int64_t maxRank, int64_t maxTokens) {
  cfg_ = &cfg;
  maxRank_ = maxRank;
  maxTokens_ = maxTokens;
  slots_.assign(slots, nullptr);
  if (slots == 0) return;
  rows_.resize(maxTokens);
  slotCount_.resize(slots);
  groups_.resize(slots);
  // Expand items: 3 targets × slots × column tiles of the widest output; shrink: × maxRank.
  const int64_t widest = std::max({cfg.heads * cfg.headDim, cfg.hidden, cfg.intermediate});
  items_.reserve(3 * slots * std::max(maxRank, (widest + kTile - 1) / kTile));
  h_.resize(3 * maxTokens * maxRank);
  siteBuf_.resize(2 * 3 * slots);
  spans_.resize(5 * 2 * 3 * slots);  // up to five sites' spans (one layer ahead)
  avx512_ = std::strcmp(selectedIsa(), "avx512") == 0;
}

int LoraRunner::siteSpans(int64_t layer, int site, PrefetchSpan* out, size_t* bytes) const {
  SiteTarget st[3];
  int64_t in = 0;
  const int nt = siteTargets(static_cast<LoraSite>(site), *cfg_, st, &in);
  int n = 0;
  *bytes = 0;
  for (int pass = 0; pass < 2; pass++)  // A (read by the shrink pass), then Bᵀ (expand)
    for (int ti = 0; ti < nt; ti++)
      for (int g = 0; g < nGroups_; g++) {
        const LoraMatrix& m = slots_[groups_[g].slot]->layers[layer][static_cast<int>(st[ti].target)];
        if (m.rank == 0) continue;
        const size_t count = static_cast<size_t>(m.rank * (pass == 0 ? m.in : m.out));
        if (m.pa16)
          out[n++] = {pass == 0 ? static_cast<const void*>(m.pa16) : m.pbt16, count * sizeof(uint16_t)};
        else
          out[n++] = {pass == 0 ? static_cast<const void*>(m.pa32) : m.pbt32, count * sizeof(float)};
        *bytes += out[n - 1].bytes;
      }
  return n;
}

int LoraRunner::prefetchSpans(int64_t layer, LoraSite site, const PrefetchSpan** spans) {
  *spans = spans_.data();
  if (nGroups_ == 0) return 0;
  // This linear's share of the layer's base weights sets how many bytes it prefetches: the
  // layer's adapter bytes × share, so the prefetch runs at the layer's average rate. It
  // starts where the last one stopped (at least at this site) and stays within one layer
  // ahead. The QKV and O linears are short next to their adapter bytes; the gate-up and
  // down linears run ahead into the next sites, so the cursor leads by about a site.
  const ModelConfig& c = *cfg_;
  const int64_t q = c.heads * c.headDim, kv = c.kvHeads * c.headDim;
  const double elems[4] = {static_cast<double>(c.hidden * (q + 2 * kv)), static_cast<double>(q * c.hidden),
                           static_cast<double>(c.hidden * 2 * c.intermediate),
                           static_cast<double>(c.intermediate * c.hidden)};
  size_t layerBytes = 0;
  for (int s = 0; s < 4; s++) {
    size_t b = 0;
    siteSpans(layer, s, siteBuf_.data(), &b);
    layerBytes += b;
  }
  size_t budget = static_cast<size_t>(static_cast<double>(layerBytes) * elems[static_cast<int>(site)] /
                                      (elems[0] + elems[1] + elems[2] + elems[3]));
  const int64_t here = layer * 4 + static_cast<int64_t>(site);
  if (pfSite_ < here) {
    pfSite_ = here;
    pfOffset_ = 0;
  }
  int n = 0;
  while (budget > 0 && pfSite_ < here + 4 && pfSite_ < c.layers * 4) {
    size_t siteBytes = 0;
    const int m = siteSpans(pfSite_ / 4, static_cast<int>(pfSite_ % 4), siteBuf_.data(), &siteBytes);
    size_t at = 0;  // byte offset of span i in the site
    for (int i = 0; i < m && budget > 0; at += siteBuf_[i].bytes, i++) {
      const size_t end = at + siteBuf_[i].bytes;
      if (end <= pfOffset_) continue;
      const size_t from = pfOffset_ - at, take = std::min(budget, end - pfOffset_);
      spans_[n++] = {static_cast<const char*>(siteBuf_[i].data) + from, take};
      budget -= take;
      pfOffset_ += take;
    }
    if (pfOffset_ >= siteBytes) {
      pfSite_++;
      pfOffset_ = 0;
    }
  }
  return n;
}

void LoraRunner::bind(int64_t slot, std::shared_ptr<const Adapter> a) {
  if (slot < 0 || slot >= slots()) throw std::invalid_argument("slot must be in [0, " + std::to_string(slots()) + ")");
  if (a && a->maxRank > maxRank_)
    throw std::invalid_argument("adapter rank " + std::to_string(a->maxRank) + " exceeds the context's maxLoraRank " +
                                std::to_string(maxRank_));
  if (a && !a->fits(*cfg_)) throw std::invalid_argument("the adapter was built for a model of another shape");
  slots_[slot] = std::move(a);
}

void LoraRunner::prepare(const StepPlanData& plan, const std::vector<int32_t>& tokenSeq) {
  nGroups_ = 0;
  pfSite_ = 0;
  pfOffset_ = 0;
  if (plan.adapterSlots.empty() || slots_.empty()) return;
  bool any = false;
  for (int32_t s = 0; s < plan.S; s++) any |= plan.adapterSlots[s] >= 0;
  if (!any) return;
  std::fill(slotCount_.begin(), slotCount_.end(), 0);
  for (int32_t t = 0; t < plan.T; t++) {
    const int32_t slot = plan.adapterSlots[tokenSeq[t]];
    if (slot >= 0) slotCount_[slot]++;
  }
  int32_t pos = 0;
  for (int32_t slot = 0; slot < static_cast<int32_t>(slots_.size()); slot++) {
    const int32_t n = slotCount_[slot];
    if (n > 0) groups_[nGroups_++] = {slot, pos, pos + n};
    slotCount_[slot] = pos;  // becomes the fill cursor
    pos += n;
  }
  for (int32_t t = 0; t < plan.T; t++) {
    const int32_t slot = plan.adapterSlots[tokenSeq[t]];
    if (slot >= 0) rows_[slotCount_[slot]++] = t;
  }
}

void LoraRunner::apply(int64_t layer, LoraSite site, const float* x, float* y, int64_t ldy, ThreadPool& pool) {
  if (nGroups_ == 0) return;
  SiteTarget st[3];
  int64_t in = 0;
  const int nt = siteTargets(site, *cfg_, st, &in);
  auto matrix = [&](int ti, int g) -> const LoraMatrix& {
    return slots_[groups_[g].slot]->layers[layer][static_cast<int>(st[ti].target)];
  };
  auto hRow = [&](int ti, int32_t pos) { return h_.data() + (ti * maxTokens_ + pos) * maxRank_; };

  // Shrink: one item per (target, group, block of kShrinkRanks rank indices).
  items_.clear();
  int64_t rowsTotal = 0;
  for (int g = 0; g < nGroups_; g++) rowsTotal += groups_[g].end - groups_[g].begin;
  for (int ti = 0; ti < nt; ti++)
    for (int g = 0; g < nGroups_; g++)
      for (int32_t j = 0; j < matrix(ti, g).rank; j += kShrinkRanks)
        items_.push_back({static_cast<int16_t>(ti), static_cast<int16_t>(g), j});
  if (items_.empty()) return;
  const int64_t perItem = in * kShrinkRanks * std::max<int64_t>(1, rowsTotal / nGroups_);
  const bool wide = avx512_ && in % 8 == 0;
  runItems(pool, static_cast<int64_t>(items_.size()), perItem, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; k++) {
      const Item it = items_[k];
      const LoraMatrix& m = matrix(it.target, it.group);
      const Group& g = groups_[it.group];
      const int32_t j1 = std::min<int32_t>(it.index + kShrinkRanks, static_cast<int32_t>(m.rank));
      if (wide) {
        kernels::loraShrinkAvx512(x, in, rows_.data() + g.begin, g.end - g.begin, m.pa16, m.pa32, in, it.index, j1, m.scale,
                                  hRow(it.target, g.begin), maxRank_);
        continue;
      }
      for (int32_t j = it.index; j < j1; j++)
        for (int32_t pos = g.begin; pos < g.end; pos++) {
          const float* xr = x + static_cast<int64_t>(rows_[pos]) * in;
          const float d =
              m.pa32 ? dot<F32>(xr, m.pa32 + j * in, in) : dot<F16>(xr, m.pa16 + j * in, in);
          hRow(it.target, pos)[j] = m.scale * d;
        }
    }
  });

  // Expand: one item per (target, group, column tile).
  items_.clear();
  int64_t maxRankHere = 1;
  for (int ti = 0; ti < nt; ti++)
    for (int g = 0; g < nGroups_; g++) {
      const LoraMatrix& m = matrix(ti, g);
      if (m.rank == 0) continue;
      maxRankHere = std::max(maxRankHere, m.rank);
      for (int32_t c = 0; c * kTile < m.out; c++) items_.push_back({static_cast<int16_t>(ti), static_cast<int16_t>(g), c});
    }
  runItems(pool, static_cast<int64_t>(items_.size()), kTile * maxRankHere * std::max<int64_t>(1, rowsTotal / nGroups_),
           [&](int64_t b, int64_t e) {
             for (int64_t k = b; k < e; k++) {
               const Item it = items_[k];
               const LoraMatrix& m = matrix(it.target, it.group);
               const Group& g = groups_[it.group];
               const int64_t c0 = static_cast<int64_t>(it.index) * kTile, w = std::min(kTile, m.out - c0);
               const int64_t off = tileOffset(c0, m.rank);
               if (avx512_ && w % 16 == 0) {
                 kernels::loraExpandAvx512(y + st[it.target].offset + c0, ldy, rows_.data() + g.begin, g.end - g.begin,
                                           hRow(it.target, g.begin), maxRank_,
                                           m.pbt16 ? m.pbt16 + off : nullptr, m.pbt32 ? m.pbt32 + off : nullptr,
                                           m.rank, w);
                 continue;
               }
               for (int32_t pos = g.begin; pos < g.end; pos++) {
                 float* yr = y + static_cast<int64_t>(rows_[pos]) * ldy + st[it.target].offset + c0;
                 if (m.pbt32)
                   expandTile<F32>(yr, hRow(it.target, pos), m.pbt32 + off, m.rank, w, w);
                 else
                   expandTile<F16>(yr, hRow(it.target, pos), m.pbt16 + off, m.rank, w, w);
               }
             }
           });
}

}  // namespace prism
