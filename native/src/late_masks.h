// Late masks (structured output): a step whose plan sets `lateMaskRows` starts its forward
// pass at once and waits, just before sampling, for the allowed-token masks that the JS side
// computes meanwhile (the grammar thread fills them while the forward pass runs) and hands
// over with `supplyMasks`. A step with no late masks never touches this.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace prism {

class LateMasks {
 public:
  // Called with the plan (JS thread, before the step is queued): `rows` rows are due.
  void expect(int64_t rows, int64_t words);
  // JS thread: hands over the masks (null = they will not come: the step fails). Returns
  // false when no step waits for masks (its plan was refused, or it already has them).
  // Throws std::length_error when `n` is not rows × words.
  bool supply(const int32_t* data, size_t n);
  // Step thread, before sampling: blocks until supplied or abandoned; moves the masks into
  // `out`; returns the milliseconds it waited. Throws std::runtime_error when abandoned.
  double wait(std::vector<int32_t>& out);
  // The context is being disposed (or the step failed before sampling): wake and forget.
  void abandon();

 private:
  enum class State { Idle, Expecting, Supplied, Abandoned };
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::Idle;
  int64_t rows_ = 0, words_ = 0;
  std::vector<int32_t> masks_;
};

}  // namespace prism
