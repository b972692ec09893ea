// The knobs of single-token decode that depend on the host rather than on the weights:
// how far ahead and into which cache a decode tile prefetches the rows it streams next, how
// many rows a decode tile takes, and whether pool threads that wait prefetch the next
// matrix (weight_prefetch.h). One constant set was tuned on one machine and lost on another
// of the same class (issue 27): the best prefetch distance and hint depend on the L1/L2 size
// and on whether the two vCPUs share a core, none of which the code can know in advance. So
// a context carries its own DecodeTuning (KernelScratch::decodeTuning), chosen at load by a
// short paired measurement (native/src/decode_tuning/) or given explicitly.
//
// Every decode tile of the group layouts (q4g.h's q4gMatmul and the tiles it drives,
// including the other weight types' tiles) reads these through Q4GActivations::prefetch and
// q4gMatmul's row choice, and the AVX-512 int16-activation tiles (q4xv_avx512.cc and
// q8xv_avx512.cc, the default model's) take the prefetch (their 16-row groups fix the row
// height); none of them changes a result (each row sums its groups in the same order
// whatever the tile height, and prefetches are hints). The AVX2
// int16 tiles take neither (no software prefetch, a fixed tile height).
#pragma once
#include <cstdint>
#include <string>

namespace prism {

// Where a software prefetch puts the line: NTA (L1, and on AMD never written back to L2 on
// eviction), T0 (every level), T1 (L2 and below), or no software prefetch at all (the
// hardware prefetchers only).
enum class PrefetchHint : uint8_t { None = 0, Nta = 1, T0 = 2, T1 = 3 };

struct DecodeTuning {
  PrefetchHint hint = PrefetchHint::Nta;
  // Distance in half tiles: while a tile works on group g it prefetches the matching slice
  // of the bytes `aheadHalves / 2` tiles further on (2: the next tile).
  uint8_t aheadHalves = 2;
  // Rows per decode tile; 0 = the kernel's own (kDecodeRows). Clamped to what the kernel
  // can hold in registers (kMaxDecodeRows).
  uint8_t rows = 0;
  // Whether pool threads prefetch the next matrix's rows into L2 while they wait.
  bool idlePrefetch = true;
  // How a one-token matmul of the group layouts shares its row tiles among the threads:
  // false, an even split fixed up front; true, the even split with the first thread done
  // stealing tiles from the back of another's share (row_steal.h). Off in the constants; the
  // host default turns it on where paired runs measured it faster (decode_tuning/choose.cc:
  // the AVX-512 hosts but Intel family 6 model 207).
  bool stealRows = false;

  bool operator==(const DecodeTuning&) const = default;

  // "prefetch=nta:1,rows=auto,idle=on" (the distance in tiles: 0.5, 1, 1.5, 2, ...), then
  // ",split=steal" when stealRows is set.
  std::string describe() const;
};

// Today's constants (measured on the machine the earlier passes ran on): what a context uses
// when tuning is off, and the incumbent every measured candidate must beat.
inline constexpr DecodeTuning kDefaultDecodeTuning{};

// Parses describe()'s form. Every field is optional and defaults as above; `prefetch=off`
// turns software prefetch off. On error returns false and sets *error to a message that
// names the field and the rule.
bool parseDecodeTuning(const std::string& text, DecodeTuning* out, std::string* error);

}  // namespace prism
