// Paged causal attention against a double-precision softmax over the same f16 cache:
// prefill chunks on top of cached prefixes and single decode tokens, GQA groups of 1 to 8,
// head dims 64/96/128, small and large blocks, shuffled block tables, one and many splits,
// with and without a sliding window. Under a window, the table entries of blocks wholly
// before every window of the step point at a block of NaN (as the engine's released pages
// point at whatever block 0 holds): reading one would turn the output into NaN.
#include <algorithm>
#include <numeric>

#include "check.h"

namespace prism::cudacheck {

Result checkAttention(const Options& o) {
  Result r{"attention (paged, split-K)", 0, 0, 2e-5, ""};
  std::mt19937_64 rng(o.seed * 43);
  struct Case {
    int heads, kvHeads, hd, blockSize;
    std::vector<int> lengths;  // context of each sequence after the step
    std::vector<int> step;     // tokens of each sequence in the step (1 = decode)
    int splits;                // 0 = as a step would choose
    int window = 0;            // sliding window (0: none)
  };
  std::vector<Case> cases = {
      {4, 2, 64, 16, {5, 37}, {5, 1}, 1},
      {8, 2, 128, 16, {70, 3}, {1, 3}, 0},
      {6, 6, 96, 128, {200}, {20}, 3},
      {32, 8, 64, 16, {33, 1, 17}, {9, 1, 1}, 0},
      {4, 2, 64, 16, {100, 37}, {20, 1}, 1, 24},
      {8, 2, 128, 16, {300, 70}, {1, 1}, 0, 40},
      {32, 8, 64, 16, {90, 5}, {33, 5}, 0, 16},
      {6, 6, 96, 32, {150}, {150}, 3, 33},
  };
  if (!o.quick) {
    cases.push_back({32, 8, 128, 128, {1100, 300}, {1, 1}, 0});
    cases.push_back({32, 8, 128, 16, {700}, {300}, 0});
    cases.push_back({24, 8, 128, 64, {513, 4000, 2}, {1, 1, 2}, 7});
    cases.push_back({32, 4, 64, 128, {2048}, {2048}, 1});
    cases.push_back({32, 8, 128, 16, {4000, 900}, {1, 1}, 0, 1024});
    cases.push_back({32, 8, 128, 16, {3000}, {512}, 0, 700});
  }
  for (const Case& c : cases) {
    const int S = static_cast<int>(c.lengths.size()), hd = c.hd, group = c.heads / c.kvHeads;
    // Blocks each sequence needs, drawn from a shuffled pool.
    std::vector<int32_t> tableOffsets{0}, tables;
    int totalBlocks = 0;
    for (int len : c.lengths) totalBlocks += (len + c.blockSize - 1) / c.blockSize;
    const int kvBlocks = totalBlocks + 4;  // the last one: NaN
    const int nanBlock = kvBlocks - 1;
    std::vector<int32_t> pool(static_cast<size_t>(kvBlocks - 1));
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    int used = 0;
    for (int len : c.lengths) {
      for (int b = 0; b < (len + c.blockSize - 1) / c.blockSize; b++) tables.push_back(pool[static_cast<size_t>(used++)]);
      tableOffsets.push_back(static_cast<int32_t>(tables.size()));
    }
    const size_t cacheElems = static_cast<size_t>(kvBlocks) * c.kvHeads * c.blockSize * hd;
    std::vector<uint16_t> kc(cacheElems), vc(cacheElems);
    {
      const std::vector<float> kv = randomVector(rng, 2 * cacheElems, 1.0f);
      for (size_t i = 0; i < cacheElems; i++) {
        kc[i] = toHalf(kv[i]);
        vc[i] = toHalf(kv[cacheElems + i]);
      }
    }
    for (size_t i = static_cast<size_t>(nanBlock) * c.kvHeads * c.blockSize * hd; i < cacheElems; i++)
      kc[i] = vc[i] = 0x7E00;  // f16 NaN
    std::vector<int32_t> offsets{0}, positions;
    for (int s = 0; s < S; s++) {
      for (int i = 0; i < c.step[s]; i++) positions.push_back(c.lengths[s] - c.step[s] + i);
      offsets.push_back(static_cast<int32_t>(positions.size()));
    }
    // The first position a token sees.
    auto lowest = [&](int pos) { return c.window > 0 ? std::max(0, pos - c.window + 1) : 0; };
    for (int s = 0; s < S; s++) {  // blocks behind the step's first window: "released"
      const int lo = lowest(positions[static_cast<size_t>(offsets[s])]);
      for (int b = 0; (b + 1) * c.blockSize <= lo; b++) tables[static_cast<size_t>(tableOffsets[s] + b)] = nanBlock;
    }
    const int T = static_cast<int>(positions.size());
    // q scaled as the forward pass leaves it (1/sqrt(hd) folded in): scores of order 1-3.
    const std::vector<float> q = randomVector(rng, static_cast<size_t>(T) * c.heads * hd, 1.5f / std::sqrt(static_cast<float>(hd)));
    std::vector<double> ref(static_cast<size_t>(T) * c.heads * hd, 0.0);
    auto cacheAt = [&](const std::vector<uint16_t>& cache, int s, int pos, int g, int d) {
      const int32_t blk = tables[static_cast<size_t>(tableOffsets[s] + pos / c.blockSize)];
      return fromHalf(cache[((static_cast<size_t>(blk) * c.kvHeads + g) * c.blockSize + pos % c.blockSize) * hd + d]);
    };
    for (int s = 0; s < S; s++)
      for (int t = offsets[s]; t < offsets[s + 1]; t++)
        for (int h = 0; h < c.heads; h++) {
          const int g = h / group;
          const float* qv = &q[(static_cast<size_t>(t) * c.heads + h) * hd];
          const int lo = lowest(positions[t]);
          std::vector<double> sc(static_cast<size_t>(positions[t] + 1), 0.0);
          double mx = -1e300;
          for (int p = lo; p <= positions[t]; p++) {
            double a = 0;
            for (int d = 0; d < hd; d++) a += static_cast<double>(qv[d]) * cacheAt(kc, s, p, g, d);
            sc[p] = a;
            mx = std::max(mx, a);
          }
          double sum = 0;
          for (int p = lo; p <= positions[t]; p++) sum += (sc[p] = std::exp(sc[p] - mx));
          double* out = &ref[(static_cast<size_t>(t) * c.heads + h) * hd];
          for (int p = lo; p <= positions[t]; p++)
            for (int d = 0; d < hd; d++) out[d] += sc[p] / sum * cacheAt(vc, s, p, g, d);
        }
    pc_attention_check a{};
    a.heads = c.heads;
    a.kv_heads = c.kvHeads;
    a.head_dim = hd;
    a.block_size = c.blockSize;
    a.kv_blocks = kvBlocks;
    a.k_cache = kc.data();
    a.v_cache = vc.data();
    a.q = q.data();
    a.T = T;
    a.S = S;
    a.seq_token_offsets = offsets.data();
    a.positions = positions.data();
    a.block_table_offsets = tableOffsets.data();
    a.block_tables = tables.data();
    a.n_block_tables = static_cast<int64_t>(tables.size());
    a.splits = c.splits;
    a.window = c.window;
    std::vector<float> out(ref.size());
    o.lib->check(o.lib->pc_check_attention(o.device, &a, out.data()), "pc_check_attention");
    r.observe(relError(out, ref), "heads " + std::to_string(c.heads) + "/" + std::to_string(c.kvHeads) + " hd " +
                                      std::to_string(hd) + " T " + std::to_string(T) + " splits " + std::to_string(c.splits) +
                                      " window " + std::to_string(c.window));
  }
  return r;
}

}  // namespace prism::cudacheck
