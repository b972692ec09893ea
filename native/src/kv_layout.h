// How the paged KV cache is laid out for a model (the engine's block manager keeps the same
// picture: engine/kv-layout.ts reads it from modelInfo).
//
// The pool is made of pages; a page holds the K and V of `pageLayers` layers for one block of
// `blockSize` positions. A model whose layers all attend alike (all to the whole context, or
// all through the same kind of sliding window) has one page per block holding every layer:
// the classic paged cache. A model that mixes global and sliding layers (Gemma 3: five sliding
// layers, then one global) keeps the two kinds in separate groups, so the block manager can
// release a sliding group's pages once they fall behind its window while the global group
// keeps the whole context: long contexts then cost window-sized memory in the sliding layers
// (vLLM's hybrid KV-cache manager does the same). Both groups draw pages from one pool, so no
// fixed split between them has to be guessed: the page size is the greatest common divisor of
// the two layer counts, and one block of a group takes (its layers / pageLayers) pages.
//
// A sequence's block table holds, per block, `pagesPerBlock` page ids: the global group's
// pages first, then the sliding group's. Layer l reads and writes entry
// `block * pagesPerBlock + layerPage[l]`, slot `layerSlot[l]` of that page.
#pragma once
#include <cstdint>
#include <numeric>
#include <vector>

#include "model.h"

namespace prism {

struct KvGroup {
  int64_t window = 0;  // 0: attends to the whole context; else the widest window of its layers
  int64_t pages = 0;   // pages one block of this group takes
};

struct KvLayout {
  int64_t pageLayers = 0;
  int64_t pagesPerBlock = 0;
  std::vector<KvGroup> groups;
  std::vector<int32_t> layerPage, layerSlot;  // per layer: entry within a block's pages, slot in that page

  static KvLayout forModel(const ModelConfig& c) {
    KvLayout k;
    std::vector<int64_t> global, sliding;
    int64_t widest = 0;
    for (int64_t l = 0; l < c.layers; l++) {
      (c.layerWindow[l] > 0 ? sliding : global).push_back(l);
      widest = std::max(widest, c.layerWindow[l]);
    }
    k.layerPage.assign(c.layers, 0);
    k.layerSlot.assign(c.layers, 0);
    if (global.empty() || sliding.empty()) {
      k.pageLayers = c.layers;
      k.groups.push_back({global.empty() ? widest : 0, 1});
      for (int64_t l = 0; l < c.layers; l++) k.layerSlot[l] = static_cast<int32_t>(l);
    } else {
      const int64_t nGlobal = static_cast<int64_t>(global.size()), nSliding = static_cast<int64_t>(sliding.size());
      k.pageLayers = std::gcd(nGlobal, nSliding);
      k.groups.push_back({0, nGlobal / k.pageLayers});
      k.groups.push_back({widest, nSliding / k.pageLayers});
      int64_t first = 0;
      for (const std::vector<int64_t>* kind : {&global, &sliding}) {
        for (size_t j = 0; j < kind->size(); j++) {
          const int64_t l = (*kind)[j];
          k.layerPage[l] = static_cast<int32_t>(first + static_cast<int64_t>(j) / k.pageLayers);
          k.layerSlot[l] = static_cast<int32_t>(static_cast<int64_t>(j) % k.pageLayers);
        }
        first += static_cast<int64_t>(kind->size()) / k.pageLayers;
      }
    }
    for (const KvGroup& g : k.groups) k.pagesPerBlock += g.pages;
    return k;
  }
};

}  // namespace prism
